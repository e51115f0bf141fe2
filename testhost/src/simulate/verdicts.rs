//! When a flow is finished, and what is left behind: stuck flows and leaked templates.

use std::collections::BTreeSet;

use super::scenario::Lifecycle;
use super::world::World;
use crate::apiserver::objects::*;
use crate::host::lock;

/// A flow that has not finished this long after it started is stuck.
pub const FLOW_BOUND: u64 = 6 * HOUR;

/// The Metal3Machines `owner` controls.
fn machines<'s>(s: &'s Store, owner: &'s Obj) -> impl Iterator<Item = &'s Obj> {
    s.owned(Kind::Metal3Machine, owner.kind, &owner.name)
}

impl World<'_> {
    fn upgrade_finished(&self) -> bool {
        if !self.status.upgrade_done || self.topology() && !self.topology_applied() {
            return false;
        }
        let rolled = self.read(|s| {
            // every MachineDeployment runs only on its current templates
            let mds_rolled = s.of_kind(Kind::MachineDeployment).all(|md| {
                let mut sets = s.owned(Kind::MachineSet, Kind::MachineDeployment, &md.name);
                sets.all(|ms| {
                    let current = ms.spec.templates() == md.spec.templates();
                    let want = if current { md.spec.replicas() } else { 0 };
                    ms.spec.replicas() == want && machines(s, ms).count() as u32 == want
                })
            });
            // and the control plane (unless it is being deleted or gone) on its current one
            let cp = s
                .get(self.sc.cp_kind, CP)
                .filter(|cp| cp.deleting.is_none());
            let cp_rolled = cp.is_none_or(|cp| {
                let infra = cp.spec.infra().map(|r| &r.name);
                machines(s, cp).count() as u32 == cp.spec.replicas()
                    && machines(s, cp).all(|m| m.cloned_from() == infra)
            });
            mds_rolled && cp_rolled
        });
        rolled && self.garbage_templates().is_empty()
    }

    /// Whether the cluster's own copies come from the templates the ClusterClass names now.
    fn topology_applied(&self) -> bool {
        self.read(|s| {
            let Some(Spec::ClusterClass { cp_infra, workers }) =
                s.get(Kind::ClusterClass, CLASS).map(|o| &o.spec)
            else {
                return true;
            };
            // the owner's templates (the infrastructure first) are copies of the class's
            let copies = |owner: Option<&Obj>, sources: &[&Ref]| {
                owner.is_none_or(|o| {
                    let mut templates = o.spec.templates().into_iter().zip(sources);
                    templates.all(|(r, source)| s.is_copy_of(r, source))
                })
            };
            copies(s.get(self.sc.cp_kind, CP), &[cp_infra])
                && workers.iter().enumerate().all(|(i, w)| {
                    let md = s.get(Kind::MachineDeployment, &format!("edge-a-md{i}"));
                    // one being deleted counts as applied
                    let md = md.filter(|o| o.deleting.is_none());
                    copies(md, &[&w.infra, &w.bootstrap])
                })
        })
    }

    /// Templates nothing needs any more.
    pub fn garbage_templates(&self) -> Vec<Ref> {
        // what a held MachineDeployment of another namespace names (remote.rs)
        let held: BTreeSet<Ref> = lock(&self.api)
            .held
            .values()
            .filter(|o| o["kind"] == "MachineDeployment")
            .filter_map(|o| {
                o.pointer("/spec/template/spec/infrastructureRef/name")?
                    .as_str()
            })
            .map(|name| Ref::new(Kind::Metal3MachineTemplate, name.to_string()))
            .collect();
        self.read(|s| {
            let mut needed = held;
            for o in s.objects.values() {
                let uses = match &o.spec {
                    Spec::MachineDeployment(_) => o.deleting.is_none(),
                    // a standalone one needs them at any replica count
                    Spec::MachineSet(ms) => {
                        ms.replicas > 0
                            || machines(s, o).next().is_some()
                            || (o.controller.is_none() && o.deleting.is_none())
                    }
                    Spec::ControlPlane(_) => true,
                    Spec::ClusterClass { cp_infra, workers } => {
                        let templates = workers.iter().flat_map(|w| [&w.infra, &w.bootstrap]);
                        needed.extend(templates.chain([cp_infra]).cloned());
                        false
                    }
                    Spec::Metal3Machine { .. } => {
                        if let Some(n) = o.cloned_from() {
                            needed.insert(Ref::new(Kind::Metal3MachineTemplate, n.clone()));
                        }
                        false
                    }
                    _ => false,
                };
                if uses {
                    needed.extend(o.spec.templates().into_iter().cloned());
                }
            }
            s.objects
                .values()
                .filter(|o| o.kind.is_template())
                .map(Obj::to_ref)
                .filter(|r| !needed.contains(r))
                .collect()
        })
    }

    pub fn flow_finished(&self) -> bool {
        match self.sc.lifecycle {
            Lifecycle::None => self.upgrade_finished(),
            // only the lifecycle deletes the Cluster, or everything
            Lifecycle::ClusterDeletion => self.read(|s| {
                s.get(Kind::Cluster, CLUSTER).is_none()
                    && !s.objects.values().any(|o| o.owner_cluster.is_some())
            }),
            Lifecycle::NamespaceDeletion => self.read(|s| s.objects.is_empty()),
            // what the deploy tool applies to the source after the move began is its own (the
            // templates it declares), not the move's
            Lifecycle::Move => {
                let declared = |o: &Obj| self.status.declared.contains(&o.to_ref());
                self.status.moved == Some(true) && self.read(|s| s.objects.values().all(declared))
            }
        }
    }

    /// The flow's end: stuck when it finished late or never, and the templates left behind.
    pub fn finish(&mut self, flow_done: Option<u64>) {
        let start = if self.sc.lifecycle == Lifecycle::None {
            self.sc.upgrade_at
        } else {
            self.sc.lifecycle_at
        };
        let done_in_time = flow_done.is_some_and(|t| t <= start + FLOW_BOUND);
        if !done_in_time || self.status.moved == Some(false) {
            self.m.stuck += 1;
            let why = match flow_done {
                Some(t) => format!("finished only at {t} s"),
                None => "never finished".to_string(),
            };
            let left: Vec<String> = self.read(|s| {
                let left = s.objects.values().map(|o| {
                    let deleting = o.deleting.map_or("", |_| " (deleting)");
                    format!("{}{deleting}", o.to_ref())
                });
                left.collect()
            });
            self.ev(|| format!("STUCK: flow {why}; objects left: {left:?}"));
        }
        // a template its deploy tool still declares is the tool's to delete (with its release)
        let garbage: Vec<String> = self
            .garbage_templates()
            .iter()
            .filter(|r| !self.status.declared.contains(r))
            .map(Ref::to_string)
            .collect();
        self.m.left += garbage.len() as u64;
        if !garbage.is_empty() {
            self.ev(|| format!("LEFT BEHIND, nothing collected: {garbage:?}"));
        }
        self.m.host_calls = lock(&self.api).host_calls;
    }
}
