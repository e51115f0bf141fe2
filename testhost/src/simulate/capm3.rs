//! CAPM3 (Cluster API Provider Metal3) deleting a Metal3Machine: the node-reuse decision, read
//! from a Metal3MachineTemplate: <= 1.12 the one named by the machine's cloned-from annotation
//! (baremetal/metal3machine_manager.go@v1.12.0), >= 1.13 the owning MachineSet's or control
//! plane's current infrastructureRef (same file @v1.13.0, PR 3168). A template not found means no
//! reuse; no decision at all while the Cluster is being deleted.

use anyhow::Result;

use super::objects::*;
use super::world::{Actor, World};

#[derive(Debug, Default)]
pub struct Capm3;

impl Actor for Capm3 {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let (lo, hi) = if delete_one(w) { (20, 120) } else { (10, 40) };
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
        let template = if w.sc.installed.metal3_v1beta2 {
            // >= 1.13: the owner's current template
            w.read(|s| {
                let (kind, name) = m.controller.as_ref()?;
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
        w.m.lost += u64::from(intent && !reuse);
        // formatted only when a trace is kept
        w.ev(|| {
            let template = template.map_or_else(|| "unknown".into(), |r| r.to_string());
            let read = decision.map_or("NOT FOUND", |_| "read");
            let lost = if intent && !reuse { "  <-- LOST" } else { "" };
            format!("CAPM3: Metal3Machine {} deleted, node reuse {reuse} (template {template} {read}), intent {intent}{lost}", m.name)
        });
    }
    w.write(|s| s.drop_finalizer(Kind::Metal3Machine, &m.name, M3M_FINALIZER));
    true
}

#[cfg(test)]
mod tests {
    use super::super::world::Verdict;
    use super::*;

    /// CAPM3 <= 1.12 on a World of one Cluster and one Metal3Machine being deleted, cloned from a
    /// nodeReuse template that still exists or is gone: the decision, and whether it was lost.
    #[test]
    fn the_decision_reads_the_cloned_from_template() {
        for (template_exists, lost) in [(true, 0), (false, 1)] {
            let mut admit = |_: &serde_json::Value| Ok(Verdict::ALLOW);
            let mut w = World::new(1, Default::default(), &mut admit, false);
            w.sc.installed.metal3_v1beta2 = false;
            w.create(Obj::new(
                Kind::Cluster,
                CLUSTER,
                Spec::Cluster { paused: false },
            ));
            let template = Ref::new(Kind::Metal3MachineTemplate, "t-1");
            if template_exists {
                let spec = Spec::Template {
                    node_reuse: true,
                    cleaning: None,
                };
                w.create(Obj::new(template.kind, &template.name, spec));
            }
            let spec = Spec::Metal3Machine {
                cleaning: None,
                ready_at: 0,
                intent: true,
            };
            let mut m = Obj::new(Kind::Metal3Machine, "m-1", spec);
            m.set_cloned_from(&template);
            m.finalizers.insert(M3M_FINALIZER.into());
            w.create(m);
            w.mark_deleted(Kind::Metal3Machine, "m-1");
            Capm3.step(&mut w).unwrap();
            assert_eq!((w.m.decisions, w.m.lost), (1, lost), "{template_exists}");
            assert!(w.live(Kind::Metal3Machine, "m-1").is_none());
        }
    }
}
