//! The Cluster API topology controller (ClusterClass): rotates the Cluster's own template
//! copies (cluster-api internal/controllers/topology/cluster/reconcile_state.go@v1.12.0), and its
//! finalizers on MachineDeployments and MachineSets.

use std::collections::BTreeSet;

use anyhow::Result;

use super::objects::{Kind, Obj, Ref, Spec};
use super::sim::*;

impl Sim<'_> {
    pub(super) fn topology_step(&mut self) -> Result<bool> {
        let (paused, deleting) = self.cluster_state();
        // a Cluster that is gone reads as paused
        if paused || deleting {
            return Ok(false);
        }
        let Some(Spec::ClusterClass { cp_infra, workers }) = self.spec(Kind::ClusterClass, CLASS)
        else {
            return Ok(false);
        };
        // the topology reads every template the class names (each missing one an error)
        let templates = workers.iter().flat_map(|w| [&w.infra, &w.bootstrap]);
        let templates = [&cp_infra].into_iter().chain(templates);
        if !templates.fold(true, |ok, r| self.fetch("topology", r) & ok) {
            return Ok(false);
        }
        let copies = |sim: &Self, r: &Ref, source: &Ref| sim.read(|s| s.is_copy_of(r, source));
        if let Some(current) = self.cp_infra(true).filter(|r| !copies(self, r, &cp_infra)) {
            if let Some(new) = self.copy_of(&cp_infra, CP) {
                self.point_control_plane(&new);
                self.ev(|| format!("topology: control plane now uses {new}"));
                // reconcile_state.go@v1.12.0 (reconcileControlPlane): the old template is deleted
                // in the same reconcile, "best effort ... may leak templates": a refusal returns
                // an error, and the next reconcile compares the new template with itself, so it
                // never retries
                if !self.delete(current.kind, &current.name, "topology")? {
                    self.leak(
                        &current,
                        "the topology controller deletes it once, best effort",
                    );
                }
                return Ok(true);
            }
        }
        for (i, w) in workers.iter().enumerate() {
            let md = format!("edge-a-md{i}");
            let live = |o: &&Obj| o.deleting.is_none();
            let spec = self.read(|s| s.get(Kind::MachineDeployment, &md).filter(live).cloned());
            let Some(Spec::MachineDeployment(spec)) = spec.map(|o| o.spec) else {
                continue;
            };
            // once removed, the MachineDeployment is being deleted or gone: skipped above
            if self.sc.remove_md && i == 0 && self.deploy == DeployPhase::Done {
                self.ev(|| format!("topology: {md} removed from the topology"));
                self.delete(Kind::MachineDeployment, &md, "topology")?;
                return Ok(true);
            }
            let (infra_ok, boot_ok) = (
                copies(self, &spec.infra, &w.infra),
                copies(self, &spec.bootstrap, &w.bootstrap),
            );
            if infra_ok && boot_ok {
                continue;
            }
            let mut copy = |current: Ref, ok: bool, source: &Ref, part: &str| {
                if ok {
                    Some(current)
                } else {
                    self.copy_of(source, &format!("edge-a-{}-{part}", w.class))
                }
            };
            let Some(new_infra) = copy(spec.infra, infra_ok, &w.infra, "infra") else {
                return Ok(false);
            };
            let Some(new_boot) = copy(spec.bootstrap, boot_ok, &w.bootstrap, "bootstrap") else {
                return Ok(false);
            };
            self.point_machine_deployment(&md, new_infra.clone(), new_boot.clone());
            self.ev(|| format!("topology: {md} now uses {new_infra} and {new_boot}"));
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
    pub(super) fn topology_finalizer(&mut self, obj: &Obj, in_use: &BTreeSet<Ref>) -> Result<bool> {
        let (task, finalizer) = match obj.kind {
            Kind::MachineSet => (Task::MsController, MS_TOPOLOGY_FINALIZER),
            _ => (Task::MdController, MD_TOPOLOGY_FINALIZER),
        };
        if !obj.finalizers.contains(finalizer) {
            return Ok(false);
        }
        let who = format!("topology ({} finalizer)", obj.kind.name());
        let mut done = true;
        for r in obj.spec.templates() {
            if in_use.contains(r) || !self.read(|s| s.exists(r)) {
                continue;
            }
            if !self.due(task, r.kind, &r.name) {
                done = false;
                continue;
            }
            if !self.delete(r.kind, &r.name, &who)? {
                self.refused_retry_later((task, r.kind, &r.name), 10, 300);
                done = false;
            }
        }
        if done {
            self.write(|s| s.drop_finalizer(obj.kind, &obj.name, finalizer));
        }
        Ok(done)
    }
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
