//! The Cluster API MachineDeployment controller: rolling update between MachineSets (the
//! Deployment algorithm), old MachineSets deleted once scaled to 0 (Cluster API >= 1.11), and
//! deletion (internal/controllers/machinedeployment/machinedeployment_sync.go@v1.12.0).

use std::collections::BTreeSet;

use anyhow::Result;

use super::objects::*;
use super::topology::topology_finalizer;
use super::world::{Backoff, World};

/// One reconcile of `md`; true when it changed something. `backoff`: its work queue's retries.
pub fn reconcile(w: &mut World, backoff: &mut Backoff, md: &str) -> Result<bool> {
    let Some(obj) = w.read(|s| s.get(Kind::MachineDeployment, md).cloned()) else {
        return Ok(false);
    };
    let Spec::MachineDeployment(spec) = obj.spec.clone() else {
        return Ok(false);
    };
    let (infra, bootstrap, replicas) = (&spec.infra, &spec.bootstrap, spec.replicas);
    let sets: Vec<Obj> = w.read(|s| {
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
        let did = topology_finalizer(w, backoff, &obj, &in_use)?;
        return Ok(w.delete_dependents(&obj, MD_FINALIZER, &sets) | did);
    }
    let reader = format!("MachineDeployment {md}");
    if !(w.fetch(&reader, infra) & w.fetch(&reader, bootstrap)) {
        return Ok(false);
    }
    let current = sets
        .iter()
        .find(|s| s.deleting.is_none() && s.spec.templates() == [infra, bootstrap]);
    let Some(current) = current else {
        let name = w.new_machineset(md, infra, bootstrap, 0);
        w.ev(|| format!("MachineDeployment {md}: new MachineSet {name} for {infra}"));
        return Ok(true);
    };
    let olds: Vec<&Obj> = sets
        .iter()
        .filter(|s| s.name != current.name && s.deleting.is_none())
        .collect();
    let cur = current.spec.replicas();
    let total = cur + olds.iter().map(|o| o.spec.replicas()).sum::<u32>();
    let current_ready = w
        .machines_of(Kind::MachineSet, &current.name)
        .iter()
        .filter(|m| w.ready(m))
        .count() as u32;
    // the replicas never change, so the current set is only ever scaled up
    if cur < replicas && total < replicas + spec.max_surge {
        w.set_replicas(&current.name, cur + 1, false);
        return Ok(true);
    }
    // the Deployment algorithm: scale old sets down by what the spec totals allow
    let min_available = replicas.saturating_sub(spec.max_unavailable);
    let new_unavailable = cur.saturating_sub(current_ready);
    if total > min_available + new_unavailable {
        if let Some(old) = olds.iter().find(|o| o.spec.replicas() > 0) {
            let n = old.spec.replicas() - 1;
            w.set_replicas(&old.name, n, false);
            w.ev(|| format!("MachineDeployment {md}: {} scaled to {n}", old.name));
            return Ok(true);
        }
    }
    if w.sc.delete_old_ms {
        let unused = olds.iter().find(|o| {
            o.spec.replicas() == 0 && w.machines_of(Kind::MachineSet, &o.name).is_empty()
        });
        if let Some(old) = unused {
            w.mark_deleted(Kind::MachineSet, &old.name);
            let name = &old.name;
            w.ev(|| format!("MachineDeployment {md}: old MachineSet {name} deleted"));
            return Ok(true);
        }
    }
    Ok(false)
}
