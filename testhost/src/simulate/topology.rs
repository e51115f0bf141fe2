//! The Cluster API topology controller (ClusterClass): rotates the Cluster's own template
//! copies (cluster-api internal/controllers/topology/cluster/reconcile_state.go@v1.12.0), and its
//! finalizers on MachineDeployments and MachineSets.

use std::collections::BTreeSet;

use anyhow::Result;

use super::world::{Backoff, World};
use crate::apiserver::objects::*;

/// One reconcile; true when it changed something.
pub fn reconcile(w: &mut World) -> Result<bool> {
    let (paused, deleting) = w.cluster_state();
    // a Cluster that is gone reads as paused
    if paused || deleting {
        return Ok(false);
    }
    let Some(Spec::ClusterClass { cp_infra, workers }) = w.spec(Kind::ClusterClass, CLASS) else {
        return Ok(false);
    };
    // the topology reads every template the class names (each missing one an error)
    let templates = workers.iter().flat_map(|w| [&w.infra, &w.bootstrap]);
    let templates = [&cp_infra].into_iter().chain(templates);
    if !templates.fold(true, |ok, r| w.fetch("topology", r) & ok) {
        return Ok(false);
    }
    let copies = |w: &World, r: &Ref, source: &Ref| w.read(|s| s.is_copy_of(r, source));
    if let Some(current) = w.cp_infra(true).filter(|r| !copies(w, r, &cp_infra))
        && let Some(new) = w.copy_of(&cp_infra, CP)
    {
        w.point_control_plane(&new);
        w.ev(|| format!("topology: control plane now uses {new}"));
        // reconcile_state.go@v1.12.0 (reconcileControlPlane): the old template is deleted
        // in the same reconcile, "best effort ... may leak templates": a refusal returns
        // an error, and the next reconcile compares the new template with itself, so it
        // never retries
        if !w.delete(current.kind, &current.name, "topology")? {
            w.leak(
                &current,
                "the topology controller deletes it once, best effort",
            );
        }
        return Ok(true);
    }
    for (i, class) in workers.iter().enumerate() {
        let md = format!("edge-a-md{i}");
        let spec = w.live(Kind::MachineDeployment, &md).map(|o| o.spec);
        let Some(Spec::MachineDeployment(spec)) = spec else {
            continue;
        };
        // once removed, the MachineDeployment is being deleted or gone: skipped above
        if w.sc.remove_md && i == 0 && w.status.upgrade_done {
            w.ev(|| format!("topology: {md} removed from the topology"));
            w.delete(Kind::MachineDeployment, &md, "topology")?;
            return Ok(true);
        }
        let (infra_ok, boot_ok) = (
            copies(w, &spec.infra, &class.infra),
            copies(w, &spec.bootstrap, &class.bootstrap),
        );
        if infra_ok && boot_ok {
            continue;
        }
        let mut copy = |current: Ref, ok: bool, source: &Ref, part: &str| {
            if ok {
                Some(current)
            } else {
                w.copy_of(source, &format!("edge-a-{}-{part}", class.class))
            }
        };
        let Some(new_infra) = copy(spec.infra, infra_ok, &class.infra, "infra") else {
            return Ok(false);
        };
        let Some(new_boot) = copy(spec.bootstrap, boot_ok, &class.bootstrap, "bootstrap") else {
            return Ok(false);
        };
        w.point_machine_deployment(&md, new_infra.clone(), new_boot.clone());
        w.ev(|| format!("topology: {md} now uses {new_infra} and {new_boot}"));
        return Ok(true);
    }
    Ok(false)
}

/// The topology's finalizer (if it has one) on a MachineDeployment or MachineSet being
/// deleted: deletes each of its templates that exists and is not `in_use`, when its controller
/// is due for it (a refused delete is retried later), and drops the finalizer once none is
/// left; true when it did. cluster-api
/// internal/controllers/topology/machineset/machineset_controller.go and
/// machinedeployment/machinedeployment_controller.go@v1.12.0 (reconcileDelete): an error
/// requeues, so the deletion is retried until it succeeds.
pub fn topology_finalizer(
    w: &mut World,
    backoff: &mut Backoff,
    obj: &Obj,
    in_use: &BTreeSet<Ref>,
) -> Result<bool> {
    let finalizer = match obj.kind {
        Kind::MachineSet => MS_TOPOLOGY_FINALIZER,
        _ => MD_TOPOLOGY_FINALIZER,
    };
    if !obj.finalizers.contains(finalizer) {
        return Ok(false);
    }
    let who = format!("topology ({} finalizer)", obj.kind.name());
    let mut done = true;
    for r in obj.spec.templates() {
        if in_use.contains(r) || !w.read(|s| s.exists(r)) {
            continue;
        }
        if !backoff.due(w.now, r.kind, &r.name) {
            done = false;
            continue;
        }
        if !w.delete(r.kind, &r.name, &who)? {
            backoff.retry_later(w, (r.kind, &r.name), 10, 300);
            done = false;
        }
    }
    if done {
        w.write(|s| s.drop_finalizer(obj.kind, &obj.name, finalizer));
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::*;

    #[test]
    fn the_topology_deletes_an_old_control_plane_template_once_and_leaks_it_when_refused() {
        let mut leaked = 0;
        for seed in seeds(Deployer::Topology, Lifecycle::None) {
            let (metrics, trace) = run(seed, true);
            let count = |text: &str| trace.iter().filter(|l| l.contains(text)).count();
            // one attempt per rotation, never a retry
            assert_eq!(
                count("topology: DELETE Metal3MachineTemplate edge-a-cp"),
                count("topology: control plane now uses"),
                "seed {seed}"
            );
            leaked += metrics.leaked;
        }
        assert!(leaked > 0);
    }
}
