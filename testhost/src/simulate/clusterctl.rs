//! `clusterctl move`: pause, create everything on the target, then annotate each source object
//! with delete-for-move and delete it, retrying a refused delete with exponential backoff for
//! about two minutes before the move fails half done (cmd/clusterctl/client/cluster/mover.go@v1.12.0,
//! deleteSourceObject with newWriteBackoff).

use std::collections::BTreeMap;

use anyhow::Result;

use super::api::{Kind, Obj, Ref, Spec, CLONED_FROM_NAME, DELETE_FOR_MOVE};
use super::sim::*;

impl Sim<'_> {
    /// clusterctl move: pause, create everything on the target, then annotate and delete each
    /// source object in random order, retrying a refused delete for about 159 s.
    pub(super) fn clusterctl_move(&mut self) -> Result<Option<u64>> {
        match self.move_phase.clone() {
            MovePhase::Pause => {
                self.write(|s| {
                    if let Some(Obj {
                        spec: Spec::Cluster { paused },
                        ..
                    }) = s.get_mut(Kind::Cluster, CLUSTER)
                    {
                        *paused = true;
                    }
                });
                let mut objs = self.read(|s| s.objects.keys().cloned().collect::<Vec<_>>());
                self.rng.shuffle(&mut objs);
                self.ev(|| "clusterctl: Cluster paused".to_string());
                self.move_phase = MovePhase::Create(objs);
                Ok(Some(self.rng.range(1, 5)))
            }
            MovePhase::Create(mut objs) => {
                for _ in 0..3 {
                    let Some((kind, name)) = objs.pop() else {
                        break;
                    };
                    let Some(mut obj) = self.read(|s| s.get(kind, &name).cloned()) else {
                        continue;
                    };
                    obj.deleting = None;
                    if kind == Kind::Metal3Machine {
                        let template = Ref::new(
                            Kind::Metal3MachineTemplate,
                            obj.annotations
                                .get(CLONED_FROM_NAME)
                                .cloned()
                                .unwrap_or_default(),
                        );
                        let owner = obj
                            .controller
                            .clone()
                            .unwrap_or((Kind::MachineSet, String::new()));
                        self.create_machine_in(1, owner, &template, true, Some(obj))?;
                    } else {
                        let now = self.now;
                        lock(&self.api).stores[1].create(obj, now);
                    }
                }
                if objs.is_empty() {
                    let mut all = self.read(|s| s.objects.keys().cloned().collect::<Vec<_>>());
                    self.rng.shuffle(&mut all);
                    self.move_phase = MovePhase::Delete(all);
                } else {
                    self.move_phase = MovePhase::Create(objs);
                }
                Ok(Some(self.rng.range(1, 3)))
            }
            MovePhase::Delete(mut objs) => {
                let Some((kind, name)) = objs.last().cloned() else {
                    self.move_phase = MovePhase::Done;
                    return Ok(None);
                };
                if !self.due(Task::Lifecycle, kind, &name) {
                    return Ok(Some(1));
                }
                self.write(|s| {
                    let deleting = match s.get_mut(kind, &name) {
                        Some(o) => {
                            o.annotations =
                                BTreeMap::from([(DELETE_FOR_MOVE.to_string(), String::new())]);
                            o.finalizers.clear();
                            o.deleting.is_some()
                        }
                        None => false,
                    };
                    if deleting {
                        s.objects.remove(&(kind, name.clone()));
                    }
                });
                match self.delete(kind, &name, "clusterctl")? {
                    Deleted::Refused(_) => {
                        let start = self.refused_retry_later(Task::Lifecycle, kind, &name, 5, 60);
                        if self.now >= start + MOVE_RETRY_BUDGET {
                            self.move_failed = true;
                            self.ev(|| {
                                format!(
                                    "clusterctl: gave up deleting {} {name}: move failed half done",
                                    kind.name()
                                )
                            });
                            self.move_phase = MovePhase::Done;
                            return Ok(None);
                        }
                        self.move_phase = MovePhase::Delete(objs);
                        Ok(Some(1))
                    }
                    _ => {
                        objs.pop();
                        self.move_phase = MovePhase::Delete(objs);
                        Ok(Some(self.rng.range(0, 2)))
                    }
                }
            }
            MovePhase::Done => Ok(None),
        }
    }
}
