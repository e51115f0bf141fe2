//! When a flow is finished, and what is left behind: stuck flows and leaked templates.

use std::collections::BTreeSet;

use super::api::{Kind, Obj, Ref, Spec, CLONED_FROM_NAME};
use super::scenario::*;
use super::sim::*;

impl Sim<'_> {
    pub(super) fn upgrade_finished(&self) -> bool {
        if self.deploy != DeployPhase::Done {
            return false;
        }
        if self.topology() && !self.topology_applied() {
            return false;
        }
        let rolled = self.read(|s| {
            // every MachineDeployment runs only on its current templates
            for md in s.of_kind(Kind::MachineDeployment) {
                let Spec::MachineDeployment {
                    infra,
                    bootstrap,
                    replicas,
                    ..
                } = &md.spec
                else {
                    continue;
                };
                for ms in s
                    .of_kind(Kind::MachineSet)
                    .filter(|o| o.controller.as_ref().is_some_and(|(_, n)| *n == md.name))
                {
                    let Spec::MachineSet {
                        infra: i,
                        bootstrap: b,
                        replicas: r,
                        ..
                    } = &ms.spec
                    else {
                        continue;
                    };
                    let machines = s
                        .of_kind(Kind::Metal3Machine)
                        .filter(|m| m.controller.as_ref().is_some_and(|(_, n)| *n == ms.name))
                        .count() as u32;
                    let current = i == infra && b == bootstrap;
                    if current && (r != replicas || machines != *replicas) {
                        return false;
                    }
                    if !current && (*r > 0 || machines > 0) {
                        return false;
                    }
                }
            }
            if let Some(Obj {
                spec: Spec::ControlPlane {
                    infra, replicas, ..
                },
                deleting: None,
                ..
            }) = s.get(self.sc.cp_kind, "edge-a-cp")
            {
                let machines: Vec<&Obj> = s
                    .of_kind(Kind::Metal3Machine)
                    .filter(|m| {
                        m.controller
                            .as_ref()
                            .is_some_and(|(k, _)| *k == self.sc.cp_kind)
                    })
                    .collect();
                if machines.len() as u32 != *replicas
                    || machines
                        .iter()
                        .any(|m| m.annotations.get(CLONED_FROM_NAME) != Some(&infra.name))
                {
                    return false;
                }
            }
            true
        });
        rolled && self.garbage_templates().is_empty()
    }

    /// Whether the cluster's own copies come from the templates the ClusterClass names now.
    pub(super) fn topology_applied(&self) -> bool {
        self.read(|s| {
            let Some(Spec::ClusterClass { cp_infra, workers }) =
                s.get(Kind::ClusterClass, CLASS).map(|o| &o.spec)
            else {
                return true;
            };
            let from = |r: &Ref| {
                s.get(r.kind, &r.name)
                    .and_then(|o| o.annotations.get(CLONED_FROM_NAME).cloned())
            };
            if let Some(Obj {
                spec: Spec::ControlPlane { infra, .. },
                ..
            }) = s.get(self.sc.cp_kind, "edge-a-cp")
            {
                if from(infra).as_deref() != Some(cp_infra.name.as_str()) {
                    return false;
                }
            }
            workers.iter().enumerate().all(|(i, w)| {
                match s.get(Kind::MachineDeployment, &format!("edge-a-md{i}")) {
                    Some(Obj {
                        spec:
                            Spec::MachineDeployment {
                                infra, bootstrap, ..
                            },
                        deleting: None,
                        ..
                    }) => {
                        from(infra).as_deref() == Some(w.infra.name.as_str())
                            && from(bootstrap).as_deref() == Some(w.bootstrap.name.as_str())
                    }
                    _ => true,
                }
            })
        })
    }

    /// Templates nothing needs any more.
    pub(super) fn garbage_templates(&self) -> Vec<Ref> {
        self.read(|s| {
            let mut needed = BTreeSet::new();
            for o in s.objects.values() {
                match &o.spec {
                    Spec::MachineDeployment {
                        infra, bootstrap, ..
                    } if o.deleting.is_none() => {
                        needed.insert(infra.clone());
                        needed.insert(bootstrap.clone());
                    }
                    Spec::MachineSet {
                        infra,
                        bootstrap,
                        replicas,
                        ..
                    } => {
                        let machines = s
                            .of_kind(Kind::Metal3Machine)
                            .any(|m| m.controller.as_ref().is_some_and(|(_, n)| *n == o.name));
                        if *replicas > 0 || machines {
                            needed.insert(infra.clone());
                            needed.insert(bootstrap.clone());
                        }
                    }
                    Spec::ControlPlane { infra, .. } => {
                        needed.insert(infra.clone());
                    }
                    Spec::ClusterClass { cp_infra, workers } => {
                        needed.insert(cp_infra.clone());
                        for w in workers {
                            needed.insert(w.infra.clone());
                            needed.insert(w.bootstrap.clone());
                        }
                    }
                    Spec::Metal3Machine { .. } => {
                        if let Some(n) = o.annotations.get(CLONED_FROM_NAME) {
                            needed.insert(Ref::new(Kind::Metal3MachineTemplate, n.clone()));
                        }
                    }
                    _ => {}
                }
            }
            s.objects
                .values()
                .filter(|o| o.kind.is_template())
                .map(|o| Ref::new(o.kind, o.name.clone()))
                .filter(|r| !needed.contains(r))
                .collect()
        })
    }

    pub(super) fn flow_finished(&self) -> bool {
        match self.sc.lifecycle {
            Lifecycle::None => self.upgrade_finished(),
            Lifecycle::ClusterDeletion => {
                self.lifecycle_started
                    && self.read(|s| {
                        s.get(Kind::Cluster, CLUSTER).is_none()
                            && !s.objects.values().any(|o| o.owner_cluster.is_some())
                    })
            }
            Lifecycle::NamespaceDeletion => {
                self.lifecycle_started && self.read(|s| s.objects.is_empty())
            }
            Lifecycle::Move => {
                self.move_phase == MovePhase::Done
                    && !self.move_failed
                    && self.read(|s| s.objects.is_empty())
            }
        }
    }

    pub(super) fn finish(&mut self) {
        let start = if self.sc.lifecycle == Lifecycle::None {
            self.sc.upgrade_at
        } else {
            self.sc.lifecycle_at
        };
        let done_in_time = self.flow_done.is_some_and(|t| t <= start + FLOW_BOUND);
        if !done_in_time || self.move_failed {
            self.m.stuck += 1;
            let why = match self.flow_done {
                Some(t) => format!("finished only at {t} s"),
                None => "never finished".to_string(),
            };
            let left: Vec<String> = self.read(|s| {
                s.objects
                    .values()
                    .map(|o| {
                        format!(
                            "{}/{}{}",
                            o.kind.name(),
                            o.name,
                            if o.deleting.is_some() {
                                " (deleting)"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect()
            });
            self.ev(|| format!("STUCK: flow {why}; objects left: {left:?}"));
        }
        let garbage = self.garbage_templates();
        self.m.left += garbage.len() as u64;
        if !garbage.is_empty() {
            self.ev(|| {
                format!(
                    "LEFT BEHIND, nothing collected: {:?}",
                    garbage.iter().map(|r| r.to_string()).collect::<Vec<_>>()
                )
            });
        }
        self.m.host_calls = lock(&self.api).host_calls;
    }
}
