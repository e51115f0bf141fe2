//! The Cluster API Cluster controller's deletion, and the lifecycle that starts it, an admin
//! deleting the Cluster. Upstream (internal/controllers/cluster/cluster_controller.go:330-492
//! @v1.12.0, reconcileDelete) deletes the children the Cluster owns (filterOwnedDescendants,
//! 613-672: MachineDeployments, stand-alone MachineSets and worker Machines), waits until no
//! descendant is left, then deletes the control plane (407-445) and waits for it, then the
//! infrastructure cluster (447-485), then drops the finalizer (490). Simplified: the simulation
//! marks every MachineDeployment and MachineSet at once (upstream leaves a MachineDeployment's
//! MachineSets to the MachineDeployment controller), and has no infrastructure cluster.

use anyhow::Result;

use super::world::{Actor, World};
use crate::apiserver::objects::*;

/// One reconcile of the Cluster being deleted; true when it changed something.
pub fn reconcile_delete(w: &mut World) -> Result<bool> {
    let deleting = w.read(|s| s.get(Kind::Cluster, CLUSTER).map(|c| c.deleting.is_some()));
    if deleting != Some(true) {
        return Ok(false);
    }
    // workers first, then the control plane, then the Cluster
    let workers: Vec<Obj> = w.read(|s| {
        let mds = s.of_kind(Kind::MachineDeployment);
        mds.chain(s.of_kind(Kind::MachineSet)).cloned().collect()
    });
    for o in &workers {
        w.mark_deleted(o.kind, &o.name);
    }
    if workers.iter().any(|o| o.deleting.is_none()) {
        return Ok(true);
    }
    let workers_left = w.read(|s| {
        s.of_kind(Kind::Metal3Machine)
            .any(|m| m.controlled_by(Kind::MachineSet, None))
    });
    if !workers.is_empty() || workers_left {
        return Ok(false);
    }
    // then the control plane; its machines are gone when it is (its finalizer waits for them)
    let kind = w.sc.cp_kind;
    if let Some(live) = w.read(|s| s.get(kind, CP).map(|cp| cp.deleting.is_none())) {
        if live {
            w.mark_deleted(kind, CP);
        }
        return Ok(live);
    }
    w.write(|s| s.drop_finalizer(Kind::Cluster, CLUSTER, CLUSTER_FINALIZER));
    w.ev(|| "Cluster edge-a gone".to_string());
    Ok(true)
}

/// The lifecycle "Cluster deletion": an admin deletes the Cluster, once.
#[derive(Debug, Default)]
pub struct ClusterDeletion;

impl Actor for ClusterDeletion {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        w.lifecycle_starts();
        w.delete(Kind::Cluster, CLUSTER, "admin")?;
        Ok(None)
    }
}
