//! The Cluster API MachineDeployment controller: rolling update between MachineSets (the
//! Deployment algorithm), old MachineSets deleted once scaled to 0 (Cluster API >= 1.11), and
//! deletion (internal/controllers/machinedeployment/machinedeployment_sync.go@v1.12.0).

use std::collections::BTreeSet;

use anyhow::Result;

use super::api::{Kind, Obj, Ref, Spec};
use super::sim::*;

impl Sim<'_> {
    /// Points the MachineDeployment `md` at new templates (what a deploy tool or the topology
    /// controller writes); a MachineDeployment that is gone is left alone.
    pub(super) fn point_machine_deployment(&self, md: &str, new_infra: Ref, new_boot: Ref) {
        self.write(|s| {
            if let Some(Obj {
                spec:
                    Spec::MachineDeployment {
                        infra, bootstrap, ..
                    },
                ..
            }) = s.get_mut(Kind::MachineDeployment, md)
            {
                *infra = new_infra;
                *bootstrap = new_boot;
            }
        });
    }

    pub(super) fn md_controller(&mut self) -> Result<bool> {
        let (paused, _) = self.cluster_state();
        if paused {
            return Ok(false);
        }
        self.reconcile_each(Kind::MachineDeployment, Self::reconcile_md)
    }

    pub(super) fn reconcile_md(&mut self, md: &str) -> Result<bool> {
        let Some(obj) = self.read(|s| s.get(Kind::MachineDeployment, md).cloned()) else {
            return Ok(false);
        };
        let Spec::MachineDeployment {
            infra,
            bootstrap,
            replicas,
            max_surge,
            max_unavailable,
        } = obj.spec
        else {
            return Ok(false);
        };
        let sets: Vec<Obj> = self.read(|s| {
            s.of_kind(Kind::MachineSet)
                .filter(|m| {
                    m.controller
                        .as_ref()
                        .is_some_and(|(k, n)| *k == Kind::MachineDeployment && n == md)
                })
                .cloned()
                .collect()
        });
        if obj.deleting.is_some() {
            let mut did = false;
            if obj.finalizers.contains(MD_TOPOLOGY_FINALIZER) {
                // the topology deletes the MachineDeployment's templates that no MachineSet
                // which is not being deleted uses, at once
                let in_use: BTreeSet<Ref> = sets
                    .iter()
                    .filter(|ms| ms.deleting.is_none())
                    .filter_map(|ms| match &ms.spec {
                        Spec::MachineSet {
                            infra, bootstrap, ..
                        } => Some([infra.clone(), bootstrap.clone()]),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                did |= self.topology_finalizer(
                    (Kind::MachineDeployment, md, MD_TOPOLOGY_FINALIZER),
                    Task::MdController,
                    [&infra, &bootstrap],
                    &in_use,
                )?;
            }
            did |= self.delete_dependents((Kind::MachineDeployment, md, MD_FINALIZER), &sets);
            return Ok(did);
        }
        let reader = format!("MachineDeployment {md}");
        if !(self.fetch(&reader, &infra) & self.fetch(&reader, &bootstrap)) {
            return Ok(false);
        }
        let current = sets.iter().find(|s| {
            s.deleting.is_none()
                && matches!(&s.spec, Spec::MachineSet { infra: i, bootstrap: b, .. } if *i == infra && *b == bootstrap)
        });
        let Some(current) = current.cloned() else {
            let name = self.new_machineset(md, &infra, &bootstrap, 0);
            self.ev(|| format!("MachineDeployment {md}: new MachineSet {name} for {infra}"));
            return Ok(true);
        };
        let spec_of = ms_replicas;
        let olds: Vec<&Obj> = sets
            .iter()
            .filter(|s| s.name != current.name && s.deleting.is_none())
            .collect();
        let total: u32 = spec_of(&current) + olds.iter().map(|o| spec_of(o)).sum::<u32>();
        let current_ready = self
            .machines_of(Kind::MachineSet, &current.name)
            .iter()
            .filter(|m| self.ready(m))
            .count() as u32;
        let set_replicas = |sim: &mut Self, name: &str, n: u32| {
            sim.write(|s| {
                if let Some(Obj {
                    spec: Spec::MachineSet { replicas, .. },
                    ..
                }) = s.get_mut(Kind::MachineSet, name)
                {
                    *replicas = n;
                }
            });
        };
        let cur = spec_of(&current);
        if cur < replicas && total < replicas + max_surge {
            set_replicas(self, &current.name, cur + 1);
            return Ok(true);
        }
        if cur > replicas {
            set_replicas(self, &current.name, replicas);
            return Ok(true);
        }
        // the Deployment algorithm: scale old sets down by what the spec totals allow
        let min_available = replicas.saturating_sub(max_unavailable);
        let new_unavailable = cur.saturating_sub(current_ready);
        if total > min_available + new_unavailable {
            if let Some(old) = olds.iter().find(|o| spec_of(o) > 0) {
                let n = spec_of(old) - 1;
                let name = old.name.clone();
                set_replicas(self, &name, n);
                self.ev(|| format!("MachineDeployment {md}: {name} scaled to {n}"));
                return Ok(true);
            }
        }
        if self.sc.delete_old_ms {
            for old in olds {
                if spec_of(old) == 0 && self.machines_of(Kind::MachineSet, &old.name).is_empty() {
                    let now = self.now;
                    let name = old.name.clone();
                    self.write(|s| s.delete(Kind::MachineSet, &name, now));
                    self.ev(|| format!("MachineDeployment {md}: old MachineSet {name} deleted"));
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

fn ms_replicas(o: &Obj) -> u32 {
    match o.spec {
        Spec::MachineSet { replicas, .. } => replicas,
        _ => 0,
    }
}
