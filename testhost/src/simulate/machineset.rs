//! The Cluster API MachineSet controller: machines, status.replicas, deletion. status.replicas is
//! the number of its machines, deleting ones included, and is written on every reconcile, also
//! while the MachineSet is being deleted (internal/controllers/machineset/machineset_controller.go
//! and machineset_controller_status.go@v1.12.0): the policy reads it to keep a node-reuse
//! template while the MachineSet still has machines.

use std::collections::BTreeSet;

use anyhow::Result;

use super::api::{Kind, Obj, Ref, Spec, MS_FINALIZER, MS_TOPOLOGY_FINALIZER};
use super::sim::*;

impl Sim<'_> {
    /// A MachineDeployment's or MachineSet's own finalizer: deletes its `dependents` (its
    /// MachineSets or Metal3Machines) and drops the finalizer once none is left; true when
    /// anything changed.
    pub(super) fn delete_dependents(
        &mut self,
        (kind, name, finalizer): (Kind, &str, &str),
        dependents: &[Obj],
    ) -> bool {
        let mut did = false;
        for d in dependents {
            if d.deleting.is_none() {
                let now = self.now;
                self.write(|s| s.delete(d.kind, &d.name, now));
                did = true;
            }
        }
        if dependents.is_empty() {
            self.write(|s| s.drop_finalizer(kind, name, finalizer));
            if self.read(|s| s.get(kind, name).is_none()) {
                self.ev(|| format!("{} {name} gone", kind.name()));
                did = true;
            }
        }
        did
    }

    pub(super) fn ms_controller(&mut self) -> Result<bool> {
        self.reconcile_each(Kind::MachineSet, Self::reconcile_ms)
    }

    pub(super) fn reconcile_ms(&mut self, ms: &str) -> Result<bool> {
        let Some(obj) = self.read(|s| s.get(Kind::MachineSet, ms).cloned()) else {
            return Ok(false);
        };
        let Spec::MachineSet {
            infra,
            bootstrap,
            replicas,
            ..
        } = obj.spec.clone()
        else {
            return Ok(false);
        };
        let machines = self.machines_of(Kind::MachineSet, ms);
        let count = machines.len() as u32;
        self.write(|s| {
            if let Some(Obj {
                spec: Spec::MachineSet {
                    status_replicas, ..
                },
                ..
            }) = s.get_mut(Kind::MachineSet, ms)
            {
                *status_replicas = Some(count);
            }
        });
        let (paused, _) = self.cluster_state();
        if obj.deleting.is_some() {
            if paused {
                return Ok(false);
            }
            let mut did = false;
            if obj.finalizers.contains(MS_TOPOLOGY_FINALIZER) {
                // the topology deletes the templates no MachineDeployment or other MachineSet uses
                let users: BTreeSet<Ref> = self.read(|s| {
                    let mut u = BTreeSet::new();
                    for o in s
                        .of_kind(Kind::MachineDeployment)
                        .chain(s.of_kind(Kind::MachineSet))
                    {
                        // CAPI's CalculateTemplatesInUse: MachineSets and the MachineDeployment
                        // that are being deleted use nothing any more
                        if o.name == ms || o.deleting.is_some() {
                            continue;
                        }
                        if let Spec::MachineDeployment {
                            infra, bootstrap, ..
                        }
                        | Spec::MachineSet {
                            infra, bootstrap, ..
                        } = &o.spec
                        {
                            u.insert(infra.clone());
                            u.insert(bootstrap.clone());
                        }
                    }
                    u
                });
                did |= self.topology_finalizer(
                    (Kind::MachineSet, ms, MS_TOPOLOGY_FINALIZER),
                    Task::MsController,
                    [&infra, &bootstrap],
                    &users,
                )?;
            }
            did |= self.delete_dependents((Kind::MachineSet, ms, MS_FINALIZER), &machines);
            return Ok(did);
        }
        if paused {
            return Ok(false);
        }
        let live: Vec<&Obj> = machines.iter().filter(|m| m.deleting.is_none()).collect();
        let md = obj
            .controller
            .as_ref()
            .map(|(_, n)| n.clone())
            .unwrap_or_default();
        let is_current = self.read(|s| {
            matches!(s.get(Kind::MachineDeployment, &md),
                Some(Obj { spec: Spec::MachineDeployment { infra: i, bootstrap: b, .. }, .. }) if *i == infra && *b == bootstrap)
        });
        let need_up = (live.len() as u32) < replicas;
        if is_current || need_up {
            let reader = format!("MachineSet {ms}");
            if !(self.fetch(&reader, &infra) & self.fetch(&reader, &bootstrap)) {
                return Ok(false);
            }
            // the MachineSet controller puts the Cluster owner reference on its templates
            self.write(|s| {
                for r in [&infra, &bootstrap] {
                    if let Some(t) = s.get_mut(r.kind, &r.name) {
                        t.owner_cluster.get_or_insert_with(|| CLUSTER.to_string());
                    }
                }
            });
        }
        if need_up {
            return self.create_machine((Kind::MachineSet, ms.to_string()), &infra, false);
        }
        if live.len() as u32 > replicas {
            // delete the newest not-ready machine first, else the oldest
            let victim = live
                .iter()
                .find(|m| !self.ready(m))
                .or_else(|| live.first())
                .map(|m| m.name.clone());
            if let Some(v) = victim {
                let now = self.now;
                self.write(|s| s.delete(Kind::Metal3Machine, &v, now));
                self.ev(|| format!("MachineSet {ms}: scale down, Metal3Machine {v} deleting"));
                return Ok(true);
            }
        }
        Ok(false)
    }
}
