//! The Cluster API topology controller (ClusterClass): rotates the Cluster's own template
//! copies (cluster-api internal/controllers/topology/cluster/reconcile_state.go@v1.12.0), and its
//! finalizers on MachineDeployments and MachineSets.

use std::collections::BTreeSet;

use anyhow::Result;

use super::api::{Kind, Obj, Ref, Spec, Store, CLONED_FROM_NAME};
use super::sim::*;

impl Sim<'_> {
    pub(super) fn topology_step(&mut self) -> Result<bool> {
        let (paused, deleting) = self.cluster_state();
        if paused || deleting || !self.read(|s| s.get(Kind::Cluster, CLUSTER).is_some()) {
            return Ok(false);
        }
        let Some(Spec::ClusterClass { cp_infra, workers }) =
            self.read(|s| s.get(Kind::ClusterClass, CLASS).map(|o| o.spec.clone()))
        else {
            return Ok(false);
        };
        // the topology reads every template the class names
        let mut ok = self.fetch("topology", &cp_infra);
        for w in &workers {
            ok &= self.fetch("topology", &w.infra);
            ok &= self.fetch("topology", &w.bootstrap);
        }
        if !ok {
            return Ok(false);
        }
        let cloned_from = |s: &Store, r: &Ref| {
            s.get(r.kind, &r.name)
                .and_then(|o| o.annotations.get(CLONED_FROM_NAME).cloned())
        };
        // control plane
        let cp = self.read(|s| match s.get(self.sc.cp_kind, "edge-a-cp") {
            Some(Obj {
                spec: Spec::ControlPlane { infra, .. },
                deleting: None,
                ..
            }) => Some(infra.clone()),
            _ => None,
        });
        if let Some(current) = cp {
            let from = self.read(|s| cloned_from(s, &current));
            if from.as_deref() != Some(cp_infra.name.as_str()) {
                if let Some(c) = self.clone_of(&cp_infra, "edge-a-cp") {
                    let new = self.create(c);
                    self.write(|s| {
                        if let Some(Obj {
                            spec: Spec::ControlPlane { infra, .. },
                            ..
                        }) = s.get_mut(self.sc.cp_kind, "edge-a-cp")
                        {
                            *infra = new.clone();
                        }
                    });
                    self.ev(|| format!("topology: control plane now uses {new}"));
                    // cluster-api internal/controllers/topology/cluster/reconcile_state.go@v1.12.0
                    // (reconcileControlPlane): the old template is deleted in the same reconcile,
                    // "best effort ... may leak templates": a refusal returns an error, and the
                    // next reconcile compares the new template with itself, so it never retries
                    if let Deleted::Refused(_) =
                        self.delete(current.kind, &current.name, "topology")?
                    {
                        self.leak(
                            &current,
                            "the topology controller deletes it once, best effort",
                        );
                    }
                    return Ok(true);
                }
            }
        }
        // machine deployments
        for (i, w) in workers.iter().enumerate() {
            let md = format!("edge-a-md{i}");
            let Some((infra, bootstrap, deleting)) =
                self.read(|s| match s.get(Kind::MachineDeployment, &md) {
                    Some(Obj {
                        spec:
                            Spec::MachineDeployment {
                                infra, bootstrap, ..
                            },
                        deleting,
                        ..
                    }) => Some((infra.clone(), bootstrap.clone(), deleting.is_some())),
                    _ => None,
                })
            else {
                continue;
            };
            if deleting {
                continue;
            }
            if self.sc.remove_md
                && i == 0
                && self.deploy == DeployPhase::Done
                && !self.topo_md_removed
            {
                self.topo_md_removed = true;
                self.ev(|| format!("topology: {md} removed from the topology"));
                self.delete(Kind::MachineDeployment, &md, "topology")?;
                return Ok(true);
            }
            let infra_from = self.read(|s| cloned_from(s, &infra));
            let boot_from = self.read(|s| cloned_from(s, &bootstrap));
            if infra_from.as_deref() != Some(w.infra.name.as_str())
                || boot_from.as_deref() != Some(w.bootstrap.name.as_str())
            {
                let new_infra = if infra_from.as_deref() != Some(w.infra.name.as_str()) {
                    let Some(c) = self.clone_of(&w.infra, &format!("edge-a-{}-infra", w.class))
                    else {
                        return Ok(false);
                    };
                    self.create(c)
                } else {
                    infra
                };
                let new_boot = if boot_from.as_deref() != Some(w.bootstrap.name.as_str()) {
                    let Some(c) =
                        self.clone_of(&w.bootstrap, &format!("edge-a-{}-bootstrap", w.class))
                    else {
                        return Ok(false);
                    };
                    self.create(c)
                } else {
                    bootstrap
                };
                self.point_machine_deployment(&md, new_infra.clone(), new_boot.clone());
                self.ev(|| format!("topology: {md} now uses {new_infra} and {new_boot}"));
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The topology's finalizer on a MachineDeployment or MachineSet being deleted: deletes each
    /// of `templates` that exists and is not `in_use`, when `task` is due for it (a refused
    /// delete is retried later), and drops the finalizer once none is left; true when it did.
    /// cluster-api internal/controllers/topology/machineset/machineset_controller.go and
    /// machinedeployment/machinedeployment_controller.go@v1.12.0 (reconcileDelete): an error
    /// requeues, so the deletion is retried until it succeeds.
    pub(super) fn topology_finalizer(
        &mut self,
        (kind, name, finalizer): (Kind, &str, &str),
        task: Task,
        templates: [&Ref; 2],
        in_use: &BTreeSet<Ref>,
    ) -> Result<bool> {
        let who = format!("topology ({} finalizer)", kind.name());
        let mut done = true;
        for r in templates {
            if in_use.contains(r) || !self.read(|s| s.exists(r)) {
                continue;
            }
            if !self.due(task, r.kind, &r.name) {
                done = false;
                continue;
            }
            if let Deleted::Refused(_) = self.delete(r.kind, &r.name, &who)? {
                self.refused_retry_later(task, r.kind, &r.name, 10, 300);
                done = false;
            }
        }
        if done {
            self.write(|s| s.drop_finalizer(kind, name, finalizer));
        }
        Ok(done)
    }
}
