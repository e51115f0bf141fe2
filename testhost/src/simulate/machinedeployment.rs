//! The Cluster API MachineDeployment controller: rolling update between MachineSets (the
//! Deployment algorithm), old MachineSets deleted once scaled to 0 (Cluster API >= 1.11), and
//! deletion (internal/controllers/machinedeployment/machinedeployment_sync.go@v1.12.0).

use std::collections::BTreeSet;

use anyhow::Result;

use super::objects::{Kind, MsSpec, Obj, Ref, Spec};
use super::sim::*;

impl Sim<'_> {
    /// Points the MachineDeployment `md` at new templates (what a deploy tool or the topology
    /// controller writes); a MachineDeployment that is gone is left alone.
    pub(super) fn point_machine_deployment(&self, md: &str, new_infra: Ref, new_boot: Ref) {
        self.write(|s| {
            if let Some(Spec::MachineDeployment(spec)) = s.spec_mut(Kind::MachineDeployment, md) {
                (spec.infra, spec.bootstrap) = (new_infra, new_boot);
            }
        });
    }

    pub(super) fn new_machineset(
        &mut self,
        md: &str,
        infra: &Ref,
        boot: &Ref,
        replicas: u32,
    ) -> String {
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
        name
    }

    pub(super) fn reconcile_md(&mut self, md: &str) -> Result<bool> {
        let Some(obj) = self.read(|s| s.get(Kind::MachineDeployment, md).cloned()) else {
            return Ok(false);
        };
        let Spec::MachineDeployment(spec) = obj.spec.clone() else {
            return Ok(false);
        };
        let (infra, bootstrap, replicas) = (&spec.infra, &spec.bootstrap, spec.replicas);
        let sets: Vec<Obj> = self.read(|s| {
            let sets = s.owned(Kind::MachineSet, Kind::MachineDeployment, md);
            sets.cloned().collect()
        });
        if obj.deleting.is_some() {
            // the topology deletes the MachineDeployment's templates that no MachineSet which is
            // not being deleted uses, at once
            let in_use: BTreeSet<Ref> = sets
                .iter()
                .filter(|ms| ms.deleting.is_none())
                .flat_map(|ms| ms.spec.templates())
                .cloned()
                .collect();
            let did = self.topology_finalizer(&obj, &in_use)?;
            return Ok(self.delete_dependents(&obj, MD_FINALIZER, &sets) | did);
        }
        let reader = format!("MachineDeployment {md}");
        if !(self.fetch(&reader, infra) & self.fetch(&reader, bootstrap)) {
            return Ok(false);
        }
        let current = sets
            .iter()
            .find(|s| s.deleting.is_none() && s.spec.templates() == [infra, bootstrap]);
        let Some(current) = current else {
            let name = self.new_machineset(md, infra, bootstrap, 0);
            self.ev(|| format!("MachineDeployment {md}: new MachineSet {name} for {infra}"));
            return Ok(true);
        };
        let olds: Vec<&Obj> = sets
            .iter()
            .filter(|s| s.name != current.name && s.deleting.is_none())
            .collect();
        let cur = current.spec.ms_replicas();
        let total = cur + olds.iter().map(|o| o.spec.ms_replicas()).sum::<u32>();
        let current_ready = self
            .machines_of(Kind::MachineSet, &current.name)
            .iter()
            .filter(|m| self.ready(m))
            .count() as u32;
        if cur < replicas && total < replicas + spec.max_surge {
            self.set_replicas(&current.name, cur + 1, false);
            return Ok(true);
        }
        if cur > replicas {
            self.set_replicas(&current.name, replicas, false);
            return Ok(true);
        }
        // the Deployment algorithm: scale old sets down by what the spec totals allow
        let min_available = replicas.saturating_sub(spec.max_unavailable);
        let new_unavailable = cur.saturating_sub(current_ready);
        if total > min_available + new_unavailable {
            if let Some(old) = olds.iter().find(|o| o.spec.ms_replicas() > 0) {
                let n = old.spec.ms_replicas() - 1;
                self.set_replicas(&old.name, n, false);
                self.ev(|| format!("MachineDeployment {md}: {} scaled to {n}", old.name));
                return Ok(true);
            }
        }
        if self.sc.delete_old_ms {
            let unused = olds.iter().find(|o| {
                o.spec.ms_replicas() == 0 && self.machines_of(Kind::MachineSet, &o.name).is_empty()
            });
            if let Some(old) = unused {
                self.mark_deleted(Kind::MachineSet, &old.name);
                let name = &old.name;
                self.ev(|| format!("MachineDeployment {md}: old MachineSet {name} deleted"));
                return Ok(true);
            }
        }
        Ok(false)
    }
}
