//! The Cluster API MachineDeployment controller (internal/controllers/machinedeployment/@v1.12.0):
//! rolling update between MachineSets (machinedeployment_rollout_rollingupdate.go and
//! machinedeployment_rollout_planner.go, the Deployment algorithm), old MachineSets deleted once
//! the rollout is complete and they are scaled to 0 (rollingupdate.go:62-66, cleanupDeployment in
//! machinedeployment_sync.go:321-364; >= 1.11 all of them, 1.10 all but revisionHistoryLimit:
//! the seed draws "all" or "none"), and deletion (machinedeployment_controller.go:455-481,
//! reconcileDelete). A missing template is tolerated (getTemplatesAndSetOwner,
//! machinedeployment_controller.go:611-637, the same in 1.10 and 1.11) until a new MachineSet
//! must be created: "cannot create a MachineSet when templates do not exist"
//! (machinedeployment_rollout_planner.go:146-148; 1.10 and 1.11: machinedeployment_sync.go:
//! 128-129), which fails the reconcile. Simplified: the rollout is complete when the MachineSets'
//! status.replicas add up to the replicas and the current MachineSet's machines are all ready
//! (DeploymentComplete, mdutil/util.go:650-658, reads up-to-date and available counters);
//! generations are not modelled. With the `InPlaceUpdates` feature gate (1.12 and newer), while
//! the current MachineSet is short of the replicas, the rolling update reads the infrastructure
//! and bootstrap templates of every old MachineSet with status.replicas above zero, deleting ones
//! included, and a missing one fails the reconcile before anything is scaled
//! (reconcileInPlaceUpdateIntent, core/reconcilers/machinedeployment/
//! machinedeployment_rollout_rollingupdate.go:87 and 414-446, getTemplateObjects in
//! machinedeployment_canupdatemachineset.go:356-383@v1.14.0). Every old MachineSet is taken to be
//! eligible, the case that reads the most.

use std::collections::BTreeSet;

use anyhow::Result;

use super::topology::topology_finalizer;
use super::world::{Backoff, World};
use crate::apiserver::objects::*;

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
    let current = sets
        .iter()
        .find(|s| s.deleting.is_none() && s.spec.templates() == [infra, bootstrap]);
    let Some(current) = current else {
        let reader = format!("MachineDeployment {md}");
        if !(w.fetch(&reader, infra) & w.fetch(&reader, bootstrap)) {
            return Ok(false);
        }
        // Some seeds refuse the new MachineSet for a while (an admission webhook or a quota):
        // until it exists the MachineDeployment keeps its revision, so the previous MachineSet
        // stays its current one (createMachineSetAndWait fails the reconcile).
        if w.now < w.sc.ms_refused_until {
            w.ev(|| format!("MachineDeployment {md}: creating its new MachineSet refused"));
            return Ok(false);
        }
        let name = w.new_machineset(md, infra, bootstrap, 0);
        w.ev(|| format!("MachineDeployment {md}: new MachineSet {name} for {infra}"));
        return Ok(true);
    };
    if current.revision() != obj.revision() {
        w.sync_revision(md, &current.name);
        return Ok(true);
    }
    let status = |o: &Obj| match &o.spec {
        Spec::MachineSet(ms) => ms.status_replicas.unwrap_or(0),
        _ => 0,
    };
    let cur = current.spec.replicas();
    if w.sc.in_place_updates && cur < replicas {
        let reader = format!("MachineDeployment {md}");
        let mut found = true;
        for old in sets
            .iter()
            .filter(|s| s.name != current.name && status(s) > 0)
        {
            for template in old.spec.templates() {
                found &= w.fetch(&reader, template);
            }
        }
        if !found {
            return Ok(false);
        }
    }
    let olds: Vec<&Obj> = sets
        .iter()
        .filter(|s| s.name != current.name && s.deleting.is_none())
        .collect();
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
    if total > min_available + new_unavailable
        && let Some(old) = olds.iter().find(|o| o.spec.replicas() > 0)
    {
        let n = old.spec.replicas() - 1;
        w.set_replicas(&old.name, n, false);
        w.ev(|| format!("MachineDeployment {md}: {} scaled to {n}", old.name));
        return Ok(true);
    }
    let complete = current_ready == replicas && sets.iter().map(status).sum::<u32>() == replicas;
    if w.sc.delete_old_ms && complete {
        let unused = olds
            .iter()
            .find(|o| o.spec.replicas() == 0 && status(o) == 0);
        if let Some(old) = unused {
            w.mark_deleted(Kind::MachineSet, &old.name);
            let name = &old.name;
            w.ev(|| format!("MachineDeployment {md}: old MachineSet {name} deleted"));
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::world;
    use super::super::world::Verdict;
    use super::*;

    /// The MachineDeployment `md`, one replica, maxSurge 1, on `infra` and `boot`.
    fn one_replica_deployment(w: &mut World, infra: &Ref, boot: &Ref) {
        let spec = Spec::MachineDeployment(MdSpec {
            infra: infra.clone(),
            bootstrap: boot.clone(),
            replicas: 1,
            max_surge: 1,
            max_unavailable: 0,
        });
        w.create(Obj::new(Kind::MachineDeployment, "md", spec));
    }

    /// A MachineDeployment whose templates are gone scales its old MachineSet down while its
    /// current one exists; without one, it cannot create it and reports both templates missing.
    #[test]
    fn a_missing_template_stops_only_the_creation_of_a_machineset() {
        let mut admit = |_: &serde_json::Value| Ok(Verdict::ALLOW);
        let mut w = world(&mut admit);
        let m3mt = |name: &str| Ref::new(Kind::Metal3MachineTemplate, name);
        let kct = |name: &str| Ref::new(Kind::KubeadmConfigTemplate, name);
        let (infra, boot) = (m3mt("i-2"), kct("b-2"));
        one_replica_deployment(&mut w, &infra, &boot);
        let old = w.new_machineset("md", &m3mt("i-1"), &kct("b-1"), 1);
        let current = w.new_machineset("md", &infra, &boot, 1);
        let spec = Spec::Metal3Machine {
            cleaning: None,
            ready_at: 0,
            intent: false,
        };
        let mut m = Obj::new(Kind::Metal3Machine, "m-1", spec);
        m.controller = Some((Kind::MachineSet, current.clone()));
        w.create(m);
        let mut backoff = Backoff::default();
        assert!(reconcile(&mut w, &mut backoff, "md").unwrap());
        let old_replicas = w.spec(Kind::MachineSet, &old).map(|s| s.replicas());
        assert_eq!(old_replicas, Some(0));
        assert_eq!(w.m.missing, 0);
        w.write(|s| s.objects.remove(&(Kind::MachineSet, current)));
        assert!(!reconcile(&mut w, &mut backoff, "md").unwrap());
        assert_eq!(w.read(|s| s.names(Kind::MachineSet)), [old]);
        assert_eq!(w.m.missing, 2);
    }

    /// With the InPlaceUpdates gate a rolling update reads the templates of an old MachineSet
    /// with machines: while they are missing it stands still (nothing scaled); without the gate,
    /// or once the old MachineSet reports no machines, it goes on.
    #[test]
    fn in_place_updates_read_old_templates() {
        // (gate, the old MachineSet's machines, scaled up, missing templates)
        for (gate, old_machines, scaled, missing) in
            [(true, 1, false, 2), (true, 0, true, 0), (false, 1, true, 0)]
        {
            rolling_update_with_old_templates_gone(gate, old_machines, scaled, missing);
        }
    }

    fn rolling_update_with_old_templates_gone(
        gate: bool,
        old_machines: u32,
        scaled: bool,
        missing: u64,
    ) {
        let mut admit = |_: &serde_json::Value| Ok(Verdict::ALLOW);
        let mut w = world(&mut admit);
        w.sc.in_place_updates = gate;
        let m3mt = |name: &str| Ref::new(Kind::Metal3MachineTemplate, name);
        let kct = |name: &str| Ref::new(Kind::KubeadmConfigTemplate, name);
        let (infra, boot) = (m3mt("i-2"), kct("b-2"));
        for template in [&infra, &boot] {
            let spec = Spec::Template {
                node_reuse: false,
                cleaning: None,
            };
            w.create(Obj::new(template.kind, &template.name, spec));
        }
        one_replica_deployment(&mut w, &infra, &boot);
        // the old MachineSet's templates are gone
        let old = w.new_machineset("md", &m3mt("i-1"), &kct("b-1"), 0);
        w.set_replicas(&old, old_machines, true);
        let current = w.new_machineset("md", &infra, &boot, 0);
        let mut backoff = Backoff::default();
        let case = format!("gate {gate}, {old_machines} old machines");
        assert_eq!(
            reconcile(&mut w, &mut backoff, "md").unwrap(),
            scaled,
            "{case}"
        );
        let current_replicas = w.spec(Kind::MachineSet, &current).map(|s| s.replicas());
        assert_eq!(current_replicas, Some(u32::from(scaled)), "{case}");
        assert_eq!(w.m.missing, missing, "{case}");
    }
}
