//! CAPM3 (Cluster API Provider Metal3) deleting a Metal3Machine: the node-reuse decision, read
//! from a Metal3MachineTemplate: <= 1.12 the one named by the machine's cloned-from annotation
//! (baremetal/metal3machine_manager.go@v1.12.0), >= 1.13 the owning MachineSet's or control
//! plane's current infrastructureRef (same file @v1.13.0, PR 3168). A template not found means no
//! reuse; no decision at all while the Cluster is being deleted.
//!
//! From 1.13 it reads a control plane through an unstructured get of the machine's owner
//! (getMetal3MachineTemplate, metal3machine_manager.go:2048-2122@v1.13.2), but CAPM3's ClusterRole
//! grants only `kubeadmcontrolplanes` in controlplane.cluster.x-k8s.io (config/rbac/role.yaml:
//! 106-113@v1.13.0, v1.13.2 and v1.14.0-rc.0): an RKE2ControlPlane's get is forbidden, the error
//! is logged and the template taken as nil (metal3machine_manager.go:620-634@v1.13.2), so no
//! reuse whatever the template says. Those decisions are counted apart (`no_rbac`), not as lost.
//! 1.14.0-rc.0 returns that error and retries instead (PR 3473, metal3machine_manager.go:
//! 710-713): the machine's deletion would wait for the permission. The simulation models 1.13,
//! the released line.

use anyhow::Result;

use super::world::{Actor, World};
use crate::apiserver::objects::*;

#[derive(Debug, Default)]
pub struct Capm3;

impl Actor for Capm3 {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        // Bare metal with automated cleaning takes minutes per host: in the seeds with in-place
        // updates (scenario.rs), so that old MachineSets drain for a while at zero replicas.
        let (lo, hi) = match delete_one(w) {
            true if w.sc.slow_deprovisioning => (300, 1200),
            true => (20, 120),
            false => (10, 40),
        };
        Ok(Some(w.rng.range(lo, hi)))
    }
}

/// CAPM3 deleting a Metal3Machine: decides node reuse, then releases the host; false when no
/// machine is being deleted.
fn delete_one(w: &mut World) -> bool {
    let (paused, cluster_deleting) = w.cluster_state();
    if paused {
        return false;
    }
    let deleting: Vec<Obj> = w.read(|s| {
        let machines = s.of_kind(Kind::Metal3Machine);
        machines.filter(|m| m.deleting.is_some()).cloned().collect()
    });
    let Some(m) = w.rng.pick(&deleting) else {
        return false;
    };
    let Spec::Metal3Machine { intent, .. } = m.spec else {
        return false;
    };
    if !cluster_deleting {
        let owner = m.controller.as_ref();
        let v1_13 = w.sc.installed.metal3_v1beta2;
        let no_rbac = v1_13 && owner.is_some_and(|(kind, _)| *kind == Kind::Rke2ControlPlane);
        let template = if no_rbac {
            None
        } else if v1_13 {
            // >= 1.13: the owner's current template
            w.read(|s| {
                let (kind, name) = owner?;
                s.get(*kind, name)?.spec.infra().cloned()
            })
        } else {
            let name = m.cloned_from();
            name.map(|n| Ref::new(Kind::Metal3MachineTemplate, n.clone()))
        };
        let decision = template.as_ref().and_then(|r| {
            w.read(|s| match s.get(r.kind, &r.name)?.spec {
                Spec::Template { node_reuse, .. } => Some(node_reuse),
                _ => None,
            })
        });
        let reuse = decision.unwrap_or(false);
        w.m.decisions += 1;
        w.m.no_rbac += u64::from(no_rbac);
        w.m.lost += u64::from(intent && !reuse && !no_rbac);
        // formatted only when a trace is kept
        w.ev(|| {
            let template = template.map_or_else(|| "unknown".into(), |r| r.to_string());
            let read = match decision {
                _ if no_rbac => "FORBIDDEN, no RBAC for RKE2ControlPlane",
                Some(_) => "read",
                None => "NOT FOUND",
            };
            let lost = if intent && !reuse && !no_rbac { "  <-- LOST" } else { "" };
            format!("CAPM3: Metal3Machine {} deleted, node reuse {reuse} (template {template} {read}), intent {intent}{lost}", m.name)
        });
    }
    w.write(|s| s.drop_finalizer(Kind::Metal3Machine, &m.name, M3M_FINALIZER));
    true
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::world;
    use super::super::world::Verdict;
    use super::*;

    /// Runs CAPM3 (>= 1.13 with `v1_13`) on a World of one Cluster, a control plane of `cp` kind
    /// pointing at a nodeReuse template (`template_exists`: still there, or gone), and one of its
    /// Metal3Machines being deleted, cloned from that template: (decisions, lost, no RBAC).
    fn decide(v1_13: bool, cp: Kind, template_exists: bool) -> (u64, u64, u64) {
        let mut admit = |_: &serde_json::Value| Ok(Verdict::ALLOW);
        let mut w = world(&mut admit);
        w.sc.installed.metal3_v1beta2 = v1_13;
        let template = Ref::new(Kind::Metal3MachineTemplate, "t-1");
        if template_exists {
            let spec = Spec::Template {
                node_reuse: true,
                cleaning: None,
            };
            w.create(Obj::new(template.kind, &template.name, spec));
        }
        let spec = Spec::ControlPlane(CpSpec {
            infra: template.clone(),
            replicas: 1,
            max_surge: 0,
            legacy_ref: false,
        });
        w.create(Obj::new(cp, CP, spec));
        let spec = Spec::Metal3Machine {
            cleaning: None,
            ready_at: 0,
            intent: true,
        };
        let mut m = Obj::new(Kind::Metal3Machine, "m-1", spec);
        m.set_cloned_from(&template);
        m.controller = Some((cp, CP.into()));
        m.finalizers.insert(M3M_FINALIZER.into());
        w.create(m);
        w.mark_deleted(Kind::Metal3Machine, "m-1");
        Capm3.step(&mut w).unwrap();
        assert!(w.live(Kind::Metal3Machine, "m-1").is_none());
        (w.m.decisions, w.m.lost, w.m.no_rbac)
    }

    /// <= 1.12 reads the cloned-from template: lost when it is gone.
    #[test]
    fn the_decision_reads_the_cloned_from_template() {
        let kcp = Kind::KubeadmControlPlane;
        assert_eq!(decide(false, kcp, true), (1, 0, 0));
        assert_eq!(decide(false, kcp, false), (1, 1, 0));
    }

    /// From 1.13 it reads the control plane's template, but may not read an RKE2 control plane: no
    /// reuse, counted apart from the lost decisions.
    #[test]
    fn from_1_13_an_rke2_control_plane_is_forbidden() {
        let kcp = Kind::KubeadmControlPlane;
        assert_eq!(decide(true, kcp, true), (1, 0, 0));
        assert_eq!(decide(true, kcp, false), (1, 1, 0));
        assert_eq!(decide(true, Kind::Rke2ControlPlane, true), (1, 0, 1));
        assert_eq!(decide(false, Kind::Rke2ControlPlane, true), (1, 0, 0));
    }
}
