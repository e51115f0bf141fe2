//! The Cluster API MachineSet controller: machines, status.replicas, deletion. status.replicas is
//! the number of its machines, deleting ones included, and is written on every reconcile, also
//! while the MachineSet is being deleted (internal/controllers/machineset/machineset_controller.go
//! and machineset_controller_status.go@v1.12.0): the policy reads it to keep a node-reuse
//! template while the MachineSet still has machines. And the Metal3Machines the MachineSet and
//! control-plane controllers create, through the mutation.

use std::collections::BTreeSet;

use anyhow::{anyhow, Result};

use super::objects::{Kind, Obj, Ref, Spec};
use super::sim::*;
use crate::host::lock;

impl Sim<'_> {
    /// Writes the MachineSet `ms`'s replicas: its spec's (a MachineDeployment scaling it) or,
    /// with `status`, the count the MachineSet controller reports.
    pub(super) fn set_replicas(&self, ms: &str, n: u32, status: bool) {
        self.write(|s| match s.spec_mut(Kind::MachineSet, ms) {
            Some(Spec::MachineSet(spec)) if status => spec.status_replicas = Some(n),
            Some(Spec::MachineSet(spec)) => spec.replicas = n,
            _ => {}
        });
    }

    /// The Cluster owner reference a MachineSet or control plane controller puts on its templates.
    pub(super) fn adopt(&self, templates: &[&Ref]) {
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
    pub(super) fn delete_dependents(
        &mut self,
        owner: &Obj,
        finalizer: &str,
        dependents: &[Obj],
    ) -> bool {
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
    pub(super) fn create_machine(
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
    pub(super) fn create_metal3machine(&mut self, store: usize, mut obj: Obj) -> Result<bool> {
        let template = Ref::new(
            Kind::Metal3MachineTemplate,
            obj.cloned_from().cloned().unwrap_or_default(),
        );
        let name = obj.name.clone();
        let user = "system:serviceaccount:capi-system:capi-manager";
        let (verdict, mut value) = self.admit("CREATE", &obj, user, store)?;
        if !verdict.allowed {
            self.m.refused_creates += 1;
            self.ev(|| format!("CREATE Metal3Machine {name} REFUSED: {}", verdict.message));
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

    pub(super) fn reconcile_ms(&mut self, ms: &str) -> Result<bool> {
        let Some(obj) = self.read(|s| s.get(Kind::MachineSet, ms).cloned()) else {
            return Ok(false);
        };
        let Spec::MachineSet(spec) = obj.spec.clone() else {
            return Ok(false);
        };
        let (infra, bootstrap, replicas) = (&spec.infra, &spec.bootstrap, spec.replicas);
        let machines = self.machines_of(Kind::MachineSet, ms);
        self.set_replicas(ms, machines.len() as u32, true);
        if self.cluster_state().0 {
            return Ok(false);
        }
        if obj.deleting.is_some() {
            // the topology deletes the templates no MachineDeployment or other MachineSet uses
            let users: BTreeSet<Ref> = self.read(|s| {
                (s.of_kind(Kind::MachineDeployment)
                    .chain(s.of_kind(Kind::MachineSet)))
                // CAPI's CalculateTemplatesInUse: MachineSets and the MachineDeployment
                // that are being deleted use nothing any more
                .filter(|o| o.name != ms && o.deleting.is_none())
                .flat_map(|o| o.spec.templates())
                .cloned()
                .collect()
            });
            let did = self.topology_finalizer(&obj, &users)?;
            return Ok(self.delete_dependents(&obj, MS_FINALIZER, &machines) | did);
        }
        let live: Vec<&Obj> = machines.iter().filter(|m| m.deleting.is_none()).collect();
        let md = obj.controller.as_ref().map(|(_, n)| n.as_str());
        let is_current = self.read(|s| {
            s.get(Kind::MachineDeployment, md.unwrap_or_default())
                .is_some_and(|o| o.spec.templates() == [infra, bootstrap])
        });
        let need_up = (live.len() as u32) < replicas;
        if is_current || need_up {
            let reader = format!("MachineSet {ms}");
            if !(self.fetch(&reader, infra) & self.fetch(&reader, bootstrap)) {
                return Ok(false);
            }
            self.adopt(&[infra, bootstrap]);
        }
        if need_up {
            return self.create_machine((Kind::MachineSet, ms.to_string()), infra, false);
        }
        if live.len() as u32 > replicas {
            // delete the newest not-ready machine first, else the oldest
            if let Some(v) = live.iter().find(|m| !self.ready(m)).or(live.first()) {
                self.mark_deleted(Kind::Metal3Machine, &v.name);
                let v = &v.name;
                self.ev(|| format!("MachineSet {ms}: scale down, Metal3Machine {v} deleting"));
                return Ok(true);
            }
        }
        Ok(false)
    }
}
