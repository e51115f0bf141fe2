//! What a seed chooses (deploy tool, lifecycle, releases, sizes, what the upgrade changes),
//! the world it starts with, and what a run measures.

use anyhow::{anyhow, Result};

use super::objects::{CpSpec, Kind, MdSpec, Obj, Ref, Release, Spec, Worker, CLEANUP_LABEL};
use super::rng::Rng;
use super::sim::*;

/// Ordered as its variants are listed, `retries: false` first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Deployer {
    /// Helm 3: deletes retired templates once; a refused delete is forgotten.
    Helm3,
    /// Helm 4: a refused delete fails the upgrade; the pipeline runs the upgrade again.
    Helm4,
    /// Flux helm-controller >= v1.5.0 (Helm 4): a refused delete fails the upgrade; `retries`:
    /// `upgrade.remediation.retries: 2` (rolled back between attempts) instead of the default 0.
    Flux { retries: bool },
    /// Flux kustomize-controller with `prune: true`; `retries`: >= v1.9.0, which retries a
    /// failed prune every interval.
    Kustomize { retries: bool },
    /// Argo CD with pruning: prunes only objects without ownerReferences.
    Argo,
    /// The README's pattern: `helm.sh/resource-policy: keep`, the clean-up job collects.
    Keep,
    /// A ClusterClass: Helm 3 ships the class and its templates; the topology controller
    /// rotates the cluster's own copies and deletes them.
    Topology,
}

impl Deployer {
    pub const ALL: [Deployer; 7] = [
        Deployer::Helm3,
        Deployer::Helm4,
        Deployer::Flux { retries: false },
        Deployer::Kustomize { retries: true },
        Deployer::Argo,
        Deployer::Keep,
        Deployer::Topology,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Deployer::Helm3 => "Helm 3",
            Deployer::Helm4 => "Helm 4",
            Deployer::Flux { .. } => "Flux helm-controller",
            Deployer::Kustomize { .. } => "Flux kustomize-controller",
            Deployer::Argo => "Argo CD prune",
            Deployer::Keep => "keep + clean-up job",
            Deployer::Topology => "ClusterClass topology",
        }
    }

    /// The label, with the variant the seed drew.
    pub fn name(self) -> &'static str {
        match self {
            Deployer::Flux { retries: false } => "Flux helm-controller, retries 0",
            Deployer::Flux { retries: true } => "Flux helm-controller, retries 2",
            Deployer::Kustomize { retries: false } => "Flux kustomize-controller < v1.9.0",
            Deployer::Kustomize { retries: true } => "Flux kustomize-controller >= v1.9.0",
            other => other.label(),
        }
    }

    /// Where leaked templates are expected, and why (the docs explain each, and how the clean-up
    /// job collects them). A leak in any other flow fails the simulation.
    pub fn explained_leak(self) -> Option<&'static str> {
        match self {
            Deployer::Helm3 => Some("Helm 3 forgets a delete the policy refused (logged with --debug only); the clean-up job collects the template once unused"),
            Deployer::Flux { retries: false } => Some("helm-controller (Helm 4, remediation retries 0) leaves the release failed (Ready=False) and does not retry; the clean-up job collects the template"),
            Deployer::Flux { retries: true } => Some("helm-controller rolls back between attempts (a second re-provisioning wave), then leaves the release failed; the clean-up job collects the template"),
            Deployer::Kustomize { retries: false } => Some("kustomize-controller < v1.9.0 reports one prune failure, then forgets the object; the clean-up job collects it"),
            Deployer::Argo => Some("Argo CD never prunes templates with ownerReferences (every template a MachineSet or control plane used), with or without the policy; the clean-up job collects them"),
            Deployer::Topology => Some("the topology controller deletes an old control-plane template once, best effort, and never retries (the class chart is Helm 3 too); the clean-up job collects topology-owned leftovers, garbage collection after the Cluster"),
            Deployer::Helm4 | Deployer::Kustomize { retries: true } | Deployer::Keep => None,
        }
    }
}

/// In the order of [`Lifecycle::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lifecycle {
    /// The upgrade alone.
    None,
    ClusterDeletion,
    NamespaceDeletion,
    Move,
}

impl Lifecycle {
    pub const ALL: [Lifecycle; 4] = [
        Lifecycle::None,
        Lifecycle::ClusterDeletion,
        Lifecycle::NamespaceDeletion,
        Lifecycle::Move,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Lifecycle::None => "upgrade only",
            Lifecycle::ClusterDeletion => "then Cluster deletion",
            Lifecycle::NamespaceDeletion => "then namespace deletion",
            Lifecycle::Move => "then clusterctl move",
        }
    }
}

/// What a seed chose.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub deployer: Deployer,
    pub lifecycle: Lifecycle,
    pub release: Release,
    pub cp_kind: Kind,
    pub cp_replicas: u32,
    pub cp_surge: u32,
    /// replicas, maxSurge, maxUnavailable of each MachineDeployment
    pub mds: Vec<(u32, u32, u32)>,
    pub node_reuse: bool,
    pub cleaning: Option<String>,
    pub upgrade_workers: bool,
    pub upgrade_bootstrap: bool,
    pub upgrade_cp: bool,
    pub delete_old_ms: bool,
    pub remove_md: bool,
    pub upgrade_at: u64,
    pub lifecycle_at: u64,
    pub cleanup_offset: u64,
    /// KubeadmControlPlane 1.12.0-1.12.5 (or CAPRKE2 0.25.0): deleting the control plane fails
    /// while its machine template is missing.
    pub cp_needs_template_on_delete: bool,
}

impl Scenario {
    pub fn generate(seed: u64, rng: &mut Rng) -> Scenario {
        let combos = (Deployer::ALL.len() * Lifecycle::ALL.len()) as u64;
        let combo = (seed % combos) as usize;
        let deployer = Deployer::ALL[combo % Deployer::ALL.len()];
        let lifecycle = Lifecycle::ALL[combo / Deployer::ALL.len()];
        let capi_v1beta2 = rng.chance(70);
        let metal3_v1beta2 = capi_v1beta2 && rng.chance(50);
        let cp_kind = if rng.chance(50) {
            Kind::KubeadmControlPlane
        } else {
            Kind::Rke2ControlPlane
        };
        let rke2 = (cp_kind == Kind::Rke2ControlPlane || rng.chance(30))
            .then(|| capi_v1beta2 && rng.chance(70));
        let mds = (0..rng.range(1, 2))
            .map(|_| {
                let replicas = rng.range(1, 3) as u32;
                // maxSurge 1 or maxUnavailable 1
                let surge = u32::from(rng.chance(50));
                (replicas, surge, 1 - surge)
            })
            .collect();
        let upgrade_workers = rng.chance(80);
        // an upgrade changes the workers or the control plane, or both
        let upgrade_cp = !upgrade_workers || rng.chance(50);
        let upgrade_at = rng.range(60, 900);
        let mut sc = Scenario {
            deployer,
            lifecycle,
            release: Release {
                capi_v1beta2,
                metal3_v1beta2,
                rke2,
            },
            cp_kind,
            cp_replicas: if rng.chance(50) { 1 } else { 3 },
            cp_surge: if rng.chance(50) { 1 } else { 0 },
            mds,
            node_reuse: rng.chance(80),
            cleaning: rng.chance(70).then(|| "disabled".to_string()),
            upgrade_workers,
            upgrade_bootstrap: rng.chance(50),
            upgrade_cp,
            delete_old_ms: deployer == Deployer::Topology || rng.chance(50),
            remove_md: deployer == Deployer::Topology && rng.chance(40),
            upgrade_at,
            lifecycle_at: upgrade_at + rng.range(0, 2 * HOUR),
            cleanup_offset: rng.range(0, HOUR - 1),
            cp_needs_template_on_delete: false,
        };
        // drawn last, so that the draws above stay what they were before these were modelled
        if let Deployer::Kustomize { retries } | Deployer::Flux { retries } = &mut sc.deployer {
            *retries = rng.chance(50);
        }
        sc.cp_needs_template_on_delete = match sc.cp_kind {
            Kind::KubeadmControlPlane => sc.release.capi_v1beta2 && rng.chance(40),
            _ => sc.release.rke2 == Some(true) && rng.chance(40),
        };
        sc
    }

    pub fn describe(&self) -> String {
        format!(
            "{} {}; {}; {} x{} (maxSurge {}); MDs {:?} (replicas, maxSurge, maxUnavailable); nodeReuse {}; upgrade workers {} bootstrap {} control plane {}; old MachineSets deleted {}; MD removed from topology {}; upgrade at {} s, lifecycle at {} s; control-plane deletion needs its template {}",
            self.deployer.name(),
            self.lifecycle.label(),
            self.release.describe(),
            self.cp_kind.name(),
            self.cp_replicas,
            self.cp_surge,
            self.mds,
            self.node_reuse,
            self.upgrade_workers,
            self.upgrade_bootstrap,
            self.upgrade_cp,
            self.delete_old_ms,
            self.remove_md,
            self.upgrade_at,
            self.lifecycle_at,
            self.cp_needs_template_on_delete,
        )
    }
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    pub decisions: u64,
    pub lost: u64,
    pub missing: u64,
    /// Reconcile errors on templates released because their Cluster is being deleted, in
    /// controllers that have not been told to delete yet (nothing scales up any more, and CAPM3
    /// makes no node-reuse decisions while the Cluster is being deleted).
    pub missing_cluster_deleting: u64,
    pub stuck: u64,
    /// Templates a deploy tool or controller gave up deleting after a refusal (or never tries).
    pub leaked: u64,
    /// Templates nothing needs that are still there at the end: nothing collected them.
    pub left: u64,
    pub refused: u64,
    pub retries: u64,
    pub refused_creates: u64,
    pub admissions: u64,
    pub mutations: u64,
    pub host_calls: u64,
}

impl Metrics {
    pub fn add(&mut self, o: &Metrics) {
        macro_rules! add {
            ($($field:ident)*) => { $(self.$field += o.$field;)* };
        }
        add!(decisions lost missing missing_cluster_deleting stuck leaked left refused retries);
        add!(refused_creates admissions mutations host_calls);
    }

    /// With the policy these must be zero; leaks only in a flow whose deployer explains them.
    pub fn failed(&self, deployer: Deployer) -> bool {
        let unexplained_leaks = deployer.explained_leak().map_or(self.leaked, |_| 0);
        self.lost + self.missing + self.stuck + self.left + self.refused_creates + unexplained_leaks
            > 0
    }
}

impl Sim<'_> {
    /// A template the deploy tool renders, created (owned by the Cluster when `owned`).
    pub(super) fn new_template(&mut self, kind: Kind, prefix: &str, owned: bool) -> Ref {
        let m3 = kind == Kind::Metal3MachineTemplate;
        let spec = Spec::Template {
            node_reuse: m3 && self.sc.node_reuse,
            cleaning: self.sc.cleaning.clone().filter(|_| m3),
        };
        let mut t = Obj::new(kind, self.name(prefix), spec);
        t.labels.insert(CLEANUP_LABEL.into(), "true".into());
        t.labels
            .insert("app.kubernetes.io/managed-by".into(), "Helm".into());
        if self.sc.deployer == Deployer::Keep {
            t.annotations
                .insert("helm.sh/resource-policy".into(), "keep".into());
        }
        t.owner_cluster = owned.then(|| CLUSTER.into());
        self.create(t)
    }

    /// The initial state: the Cluster, its templates (or the ClusterClass and the Cluster's
    /// copies), the control plane and the MachineDeployments, each with its machines ready.
    pub(super) fn build(&mut self) -> Result<()> {
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
        Ok(())
    }
}
