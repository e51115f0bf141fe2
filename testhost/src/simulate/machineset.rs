//! The Cluster API MachineSet controller: machines, status.replicas, deletion. status.replicas is
//! the number of its machines, deleting ones included, and is written on every reconcile, also
//! while the MachineSet is being deleted (internal/controllers/machineset/machineset_controller.go
//! and machineset_controller_status.go@v1.12.0), but not while the Cluster is paused (or gone):
//! EnsurePausedCondition returns before the deferred status update is set up
//! (machineset_controller.go:186-208). The policy reads it to keep a node-reuse template while
//! the MachineSet still has machines. Its templates are read while it is its MachineDeployment's
//! current revision, outside a MachineDeployment, or to create a machine.

use std::collections::BTreeSet;

use anyhow::Result;

use super::topology::topology_finalizer;
use super::world::{Backoff, World};
use crate::apiserver::objects::*;

/// One reconcile of `ms`; true when it changed something. `backoff`: its work queue's retries.
pub fn reconcile(w: &mut World, backoff: &mut Backoff, ms: &str) -> Result<bool> {
    let Some(obj) = w.read(|s| s.get(Kind::MachineSet, ms).cloned()) else {
        return Ok(false);
    };
    let Spec::MachineSet(spec) = obj.spec.clone() else {
        return Ok(false);
    };
    let (infra, bootstrap, replicas) = (&spec.infra, &spec.bootstrap, spec.replicas);
    if w.cluster_state().0 {
        return Ok(false);
    }
    let machines = w.machines_of(Kind::MachineSet, ms);
    w.set_replicas(ms, machines.len() as u32, true);
    if obj.deleting.is_some() {
        // the topology deletes the templates no MachineDeployment or other MachineSet uses
        let users: BTreeSet<Ref> = w.read(|s| {
            (s.of_kind(Kind::MachineDeployment)
                .chain(s.of_kind(Kind::MachineSet)))
            // CAPI's CalculateTemplatesInUse: MachineSets and the MachineDeployment
            // that are being deleted use nothing any more
            .filter(|o| o.name != ms && o.deleting.is_none())
            .flat_map(|o| o.spec.templates())
            .cloned()
            .collect()
        });
        let did = topology_finalizer(w, backoff, &obj, &users)?;
        return Ok(w.delete_dependents(&obj, MS_FINALIZER, &machines) | did);
    }
    let live: Vec<&Obj> = machines.iter().filter(|m| m.deleting.is_none()).collect();
    // Cluster API 1.9 and newer read the owning MachineDeployment first and stop when it is
    // gone, before any template (Reconcile, getOwnerMachineDeployment); the current MachineSet
    // is the one of the MachineDeployment's revision (isCurrentMachineSet,
    // core/reconcilers/machineset/machineset_controller.go@v1.14.0, the same at v1.10.10).
    let md = obj.controller.as_ref().map(|(_, n)| n.as_str());
    let owner_revision =
        md.map(|md| w.read(|s| s.get(Kind::MachineDeployment, md).map(Obj::revision)));
    if owner_revision == Some(None) {
        return Ok(false);
    }
    let is_current = owner_revision.flatten() == Some(obj.revision());
    let need_up = (live.len() as u32) < replicas;
    // a MachineSet outside a MachineDeployment reads its templates on every reconcile
    // (reconcileExternalTemplateReference: `if owner == nil { return true, err }`)
    let standalone = obj.controller.is_none();
    if is_current || need_up || standalone {
        let reader = format!("MachineSet {ms}");
        if !(w.fetch(&reader, infra) & w.fetch(&reader, bootstrap)) {
            return Ok(false);
        }
        w.adopt(&[infra, bootstrap]);
    }
    if need_up {
        return w.create_machine((Kind::MachineSet, ms.to_string()), infra, false);
    }
    if live.len() as u32 > replicas {
        // delete the newest not-ready machine first, else the oldest
        if let Some(v) = live.iter().find(|m| !w.ready(m)).or(live.first()) {
            w.mark_deleted(Kind::Metal3Machine, &v.name);
            let v = &v.name;
            w.ev(|| format!("MachineSet {ms}: scale down, Metal3Machine {v} deleting"));
            return Ok(true);
        }
    }
    Ok(false)
}
