//! The objects controllers and deploy tools create, as they create them (names, labels,
//! finalizers, owners, cloned-from annotations), the Metal3Machine CREATE through the mutation,
//! and the initial state of a run.

use anyhow::{Result, anyhow};

use super::scenario::{Deployer, OnRefusal};
use super::world::World;
use crate::apiserver::objects::*;
use crate::host::lock;

/// The label that says which tool applied an object: the deploy tool's templates say Helm.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

impl World<'_> {
    /// A template the deploy tool renders, created (owned by the Cluster when `owned`).
    pub fn new_template(&mut self, kind: Kind, prefix: &str, owned: bool) -> Ref {
        let m3 = kind == Kind::Metal3MachineTemplate;
        let spec = Spec::Template {
            node_reuse: m3 && self.sc.node_reuse,
            cleaning: self.sc.cleaning.clone().filter(|_| m3),
        };
        let mut t = Obj::new(kind, self.name(prefix), spec);
        t.labels.insert(CLEANUP_LABEL.into(), "true".into());
        t.labels.insert(MANAGED_BY.into(), "Helm".into());
        if self.sc.deployer == Deployer::Tool(OnRefusal::Keep) {
            t.annotations
                .insert("helm.sh/resource-policy".into(), "keep".into());
        }
        t.owner_cluster = owned.then(|| CLUSTER.into());
        self.create(t)
    }

    /// A template an operator applied by hand, labelled for template-cleanup: no deploy tool
    /// declares it, so template-cleanup collects it once the guard lets it go.
    pub fn operator_template(&mut self, kind: Kind, prefix: &str, owned: bool) -> Ref {
        let r = self.new_template(kind, prefix, owned);
        self.write(|s| {
            s.get_mut(r.kind, &r.name)
                .map(|t| t.labels.remove(MANAGED_BY))
        });
        r
    }

    /// The Cluster's own copy of a ClusterClass template, owned by the topology, created.
    pub fn copy_of(&mut self, source: &Ref, prefix: &str) -> Option<Ref> {
        let spec = self.spec(source.kind, &source.name)?;
        let mut t = Obj::new(source.kind, self.name(prefix), spec);
        t.labels.insert(TOPOLOGY_OWNED.into(), String::new());
        t.labels.insert(CLUSTER_NAME_LABEL.into(), CLUSTER.into());
        t.set_cloned_from(source);
        t.owner_cluster = Some(CLUSTER.into());
        Some(self.create(t))
    }

    pub fn new_machineset(&mut self, md: &str, infra: &Ref, boot: &Ref, replicas: u32) -> String {
        let name = self.name(md);
        let spec = Spec::MachineSet(MsSpec {
            infra: infra.clone(),
            bootstrap: boot.clone(),
            replicas,
            status_replicas: None,
        });
        let mut ms = Obj::new(Kind::MachineSet, name.clone(), spec);
        ms.finalizers.insert(MS_FINALIZER.into());
        if self.topology() {
            ms.finalizers.insert(MS_TOPOLOGY_FINALIZER.into());
        }
        ms.owner_cluster = Some(CLUSTER.into());
        ms.controller = Some((Kind::MachineDeployment, md.to_string()));
        ms.labels
            .insert("cluster.x-k8s.io/deployment-name".into(), md.to_string());
        self.create(ms);
        self.sync_revision(md, &name);
        name
    }

    /// The MachineDeployment controller's revisions (getAllMachineSetsAndSyncRevision,
    /// internal/controllers/machinedeployment/machinedeployment_sync.go@v1.10.10): the MachineSet
    /// of its current templates `ms` is raised to the highest revision of the others plus one
    /// where it is lower (a new one, or an old one a rollback points at again), and the
    /// MachineDeployment takes its revision.
    pub fn sync_revision(&self, md: &str, ms: &str) {
        self.write(|s| {
            let newest_other = s
                .owned(Kind::MachineSet, Kind::MachineDeployment, md)
                .filter(|o| o.name != ms)
                .map(Obj::revision)
                .max()
                .unwrap_or(0);
            let Some(set) = s.get_mut(Kind::MachineSet, ms) else {
                return;
            };
            if set.revision() <= newest_other {
                set.annotations
                    .insert(REVISION.into(), (newest_other + 1).to_string());
            }
            let revision = set.annotations.get(REVISION).cloned().unwrap_or_default();
            if let Some(deployment) = s.get_mut(Kind::MachineDeployment, md) {
                deployment.annotations.insert(REVISION.into(), revision);
            }
        });
    }

    /// The Cluster owner reference a MachineSet or control plane controller puts on its templates.
    pub fn adopt(&self, templates: &[&Ref]) {
        self.write(|s| {
            for r in templates {
                if let Some(t) = s.get_mut(r.kind, &r.name) {
                    t.owner_cluster.get_or_insert_with(|| CLUSTER.to_string());
                }
            }
        });
    }

    /// A MachineDeployment's or MachineSet's own finalizer: deletes its `dependents` (its
    /// MachineSets or Metal3Machines) and drops the finalizer once none is left; true when
    /// anything changed.
    pub fn delete_dependents(&mut self, owner: &Obj, finalizer: &str, dependents: &[Obj]) -> bool {
        let mut did = false;
        for d in dependents.iter().filter(|d| d.deleting.is_none()) {
            self.mark_deleted(d.kind, &d.name);
            did = true;
        }
        if dependents.is_empty() {
            self.write(|s| s.drop_finalizer(owner.kind, &owner.name, finalizer));
            if self.read(|s| s.get(owner.kind, &owner.name).is_none()) {
                self.ev(|| format!("{} {} gone", owner.kind.name(), owner.name));
                did = true;
            }
        }
        did
    }

    /// A Machine and its Metal3Machine for `owner`, cloned from `template`; `ready` machines are
    /// provisioned already. True when it was created.
    pub fn create_machine(
        &mut self,
        owner: (Kind, String),
        template: &Ref,
        ready: bool,
    ) -> Result<bool> {
        let Some(Spec::Template {
            node_reuse,
            cleaning,
        }) = self.spec(template.kind, &template.name)
        else {
            return Ok(false);
        };
        let name = self.name(&owner.1);
        let ready_at = if ready {
            0
        } else {
            self.now + self.rng.range(180, 900)
        };
        let spec = Spec::Metal3Machine {
            cleaning,
            ready_at,
            intent: node_reuse,
        };
        let mut m = Obj::new(Kind::Metal3Machine, name, spec);
        m.set_cloned_from(template);
        m.labels.insert(CLUSTER_NAME_LABEL.into(), CLUSTER.into());
        m.finalizers.insert(M3M_FINALIZER.into());
        m.controller = Some(owner);
        self.create_metal3machine(0, m)
    }

    /// The CREATE of a Metal3Machine in `store` (1: the target of a move), through the mutation.
    pub fn create_metal3machine(&mut self, store: usize, mut obj: Obj) -> Result<bool> {
        let template = Ref::new(
            Kind::Metal3MachineTemplate,
            obj.cloned_from().cloned().unwrap_or_default(),
        );
        let name = obj.name.clone();
        let user = "system:serviceaccount:capi-system:capi-manager";
        let (verdict, mut value) = self.admit("CREATE", &obj, user, store)?;
        if !verdict.allowed {
            self.m.refused_creates += 1;
            self.ev(|| format!("CREATE Metal3Machine {name} REFUSED: {}", verdict.refusal()));
            return Ok(false);
        }
        if let Some(patch) = &verdict.patch {
            json_patch::patch(&mut value, patch)
                .map_err(|e| anyhow!("the policy's patch does not apply to {name}: {e}"))?;
            self.m.mutations += 1;
            if let Some(ann) = value["metadata"]["annotations"].as_object() {
                obj.annotations = ann
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect();
            }
            if let Spec::Metal3Machine { cleaning, .. } = &mut obj.spec {
                *cleaning = value["spec"]["automatedCleaningMode"]
                    .as_str()
                    .map(str::to_string);
            }
        }
        let now = self.now;
        let created = lock(&self.api).stores[store].create(obj, now);
        let terminating = if created {
            ""
        } else {
            " (namespace terminating)"
        };
        self.ev(|| format!("CREATE Metal3Machine {name} from {template}{terminating}"));
        Ok(created)
    }

    /// The initial state: the Cluster, its templates (or the ClusterClass and the Cluster's
    /// copies), the control plane and the MachineDeployments, each with its machines ready.
    pub fn build(&mut self) -> Result<()> {
        let mut cluster = Obj::new(Kind::Cluster, CLUSTER, Spec::Cluster { paused: false });
        cluster.finalizers.insert(CLUSTER_FINALIZER.into());
        self.create(cluster);
        let m3mt = Kind::Metal3MachineTemplate;
        let bk = match self.sc.cp_kind {
            Kind::Rke2ControlPlane => Kind::Rke2ConfigTemplate,
            _ => Kind::KubeadmConfigTemplate,
        };
        let mut workers = Vec::new();
        let cp_infra = if self.topology() {
            let cc_cp = self.new_template(m3mt, "cc-cp", false);
            let class_workers: Vec<Worker> = (0..self.sc.mds.len())
                .map(|i| Worker {
                    class: format!("pool{i}"),
                    infra: self.new_template(m3mt, "cc-workers", false),
                    bootstrap: self.new_template(bk, "cc-bootstrap", false),
                })
                .collect();
            let spec = Spec::ClusterClass {
                cp_infra: cc_cp.clone(),
                workers: class_workers.clone(),
            };
            self.create(Obj::new(Kind::ClusterClass, CLASS, spec));
            let missing = || anyhow!("class template missing");
            let cp_infra = self.copy_of(&cc_cp, CP).ok_or_else(missing)?;
            for w in &class_workers {
                let infra = self.copy_of(&w.infra, &format!("edge-a-{}-infra", w.class));
                let boot = self.copy_of(&w.bootstrap, &format!("edge-a-{}-bootstrap", w.class));
                workers.push((infra.ok_or_else(missing)?, boot.ok_or_else(missing)?));
            }
            cp_infra
        } else {
            let cp_infra = self.new_template(m3mt, CP, true);
            for i in 0..self.sc.mds.len() {
                let infra = self.new_template(m3mt, &format!("edge-a-md{i}"), true);
                let boot = self.new_template(bk, &format!("edge-a-md{i}-bootstrap"), true);
                workers.push((infra, boot));
            }
            cp_infra
        };
        let (kind, replicas) = (self.sc.cp_kind, self.sc.cp_replicas);
        let spec = Spec::ControlPlane(CpSpec {
            infra: cp_infra.clone(),
            replicas,
            max_surge: self.sc.cp_surge,
            legacy_ref: kind == Kind::Rke2ControlPlane && self.rng.chance(30),
        });
        let mut cp = Obj::new(kind, CP, spec);
        cp.finalizers.insert(CP_FINALIZER.into());
        cp.owner_cluster = Some(CLUSTER.into());
        self.create(cp);
        for _ in 0..replicas {
            self.create_machine((kind, CP.into()), &cp_infra, true)?;
        }
        for (i, ((infra, boot), (replicas, max_surge, max_unavailable))) in
            workers.into_iter().zip(self.sc.mds.clone()).enumerate()
        {
            let md_name = format!("edge-a-md{i}");
            let spec = Spec::MachineDeployment(MdSpec {
                infra: infra.clone(),
                bootstrap: boot.clone(),
                replicas,
                max_surge,
                max_unavailable,
            });
            let mut md = Obj::new(Kind::MachineDeployment, md_name.clone(), spec);
            md.finalizers.insert(MD_FINALIZER.into());
            md.owner_cluster = Some(CLUSTER.into());
            if self.topology() {
                md.finalizers.insert(MD_TOPOLOGY_FINALIZER.into());
                md.labels.insert(
                    "topology.cluster.x-k8s.io/deployment-name".into(),
                    format!("pool{i}"),
                );
            }
            self.create(md);
            let ms = self.new_machineset(&md_name, &infra, &boot, replicas);
            for _ in 0..replicas {
                self.create_machine((Kind::MachineSet, ms.clone()), &infra, true)?;
            }
            self.set_replicas(&ms, replicas, true);
        }
        if self.sc.standalone_ms {
            self.build_standalone(bk)?;
        }
        Ok(())
    }
}
