//! A MachineSet outside any MachineDeployment, scaled to zero by its operator and later back
//! up. Cluster API tolerates a missing template only for a MachineSet being deleted or an old
//! revision of a MachineDeployment; a standalone one returns the not-found error on every
//! reconcile (`reconcileExternalTemplateReference`, internal/controllers/machineset/
//! machineset_controller.go@v1.10.9, core/reconcilers/machineset@v1.14.0), so it can never scale
//! up again once template-cleanup has deleted its templates.

use anyhow::Result;

use super::world::{Actor, World};
use crate::apiserver::objects::*;

/// The standalone MachineSet's name.
pub const STANDALONE: &str = "edge-a-standalone";

/// Its operator: scales it to zero, then, two to three hours (two template-cleanup passes)
/// later, back to one.
#[derive(Debug, Default)]
pub struct StandaloneOperator {
    scaled_down: bool,
}

impl Actor for StandaloneOperator {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let live = w.read(|s| {
            s.get(Kind::MachineSet, STANDALONE)
                .map(|o| o.deleting.is_none())
        });
        if live != Some(true) {
            return Ok(None);
        }
        let replicas = u32::from(self.scaled_down);
        w.set_replicas(STANDALONE, replicas, false);
        w.ev(|| format!("operator: MachineSet {STANDALONE} scaled to {replicas}"));
        if self.scaled_down {
            return Ok(None);
        }
        self.scaled_down = true;
        Ok(Some(w.rng.range(2 * HOUR, 3 * HOUR)))
    }
}

impl World<'_> {
    /// The standalone MachineSet, with its own templates and one ready machine.
    pub fn build_standalone(&mut self, bootstrap: Kind) -> Result<()> {
        let infra = self.operator_template(Kind::Metal3MachineTemplate, STANDALONE, true);
        let boot = self.operator_template(bootstrap, &format!("{STANDALONE}-bootstrap"), true);
        let spec = Spec::MachineSet(MsSpec {
            infra: infra.clone(),
            bootstrap: boot,
            replicas: 1,
            status_replicas: None,
        });
        let mut ms = Obj::new(Kind::MachineSet, STANDALONE, spec);
        ms.finalizers.insert(MS_FINALIZER.into());
        ms.owner_cluster = Some(CLUSTER.into());
        self.create(ms);
        self.create_machine((Kind::MachineSet, STANDALONE.into()), &infra, true)?;
        self.set_replicas(STANDALONE, 1, true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::{Lifecycle, run, scenario};

    /// Accepting its templates' deletion costs the standalone MachineSet its scale-up (the
    /// policy before this rule let template-cleanup delete them once it was at zero); refusing
    /// it costs nothing.
    #[test]
    fn a_standalone_machine_set_needs_its_templates_at_zero() {
        let seed = (0..200)
            .find(|s| scenario(*s).standalone_ms && scenario(*s).lifecycle == Lifecycle::None)
            .expect("a seed with a standalone MachineSet and no lifecycle");
        let (kept, _) = run(seed, true);
        assert_eq!(kept.missing, 0);
        let (lost, trace) = run(seed, false);
        assert!(lost.missing > 0, "{trace:#?}");
        assert!(
            trace.iter().any(|e| e.contains("scaled to 1")),
            "{trace:#?}"
        );
    }
}
