//! `clusterctl move`: pause, create everything on the target, then annotate each source object
//! with delete-for-move and delete it, retrying a refused delete with exponential backoff for
//! about two minutes before the move fails half done (cmd/clusterctl/client/cluster/mover.go@v1.12.0,
//! deleteSourceObject with newWriteBackoff).

use std::collections::BTreeMap;

use anyhow::Result;

use super::objects::{Kind, Spec, DELETE_FOR_MOVE};
use super::sim::*;
use crate::host::lock;

impl Sim<'_> {
    /// clusterctl move: pause, create everything on the target, then annotate and delete each
    /// source object in random order, retrying a refused delete for about 159 s.
    pub(super) fn clusterctl_move(&mut self) -> Result<Option<u64>> {
        match self.move_phase.clone() {
            MovePhase::Pause => {
                self.write(|s| {
                    if let Some(Spec::Cluster { paused }) = s.spec_mut(Kind::Cluster, CLUSTER) {
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
                let split = objs.len().saturating_sub(3);
                for (kind, name) in objs.split_off(split).into_iter().rev() {
                    let Some(mut obj) = self.read(|s| s.get(kind, &name).cloned()) else {
                        continue;
                    };
                    obj.deleting = None;
                    if kind == Kind::Metal3Machine {
                        self.create_metal3machine(1, obj)?;
                    } else {
                        let now = self.now;
                        lock(&self.api).stores[1].create(obj, now);
                    }
                }
                self.move_phase = if objs.is_empty() {
                    let mut all = self.read(|s| s.objects.keys().cloned().collect::<Vec<_>>());
                    self.rng.shuffle(&mut all);
                    MovePhase::Delete(all)
                } else {
                    MovePhase::Create(objs)
                };
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
                    if let Some(o) = s.get_mut(kind, &name) {
                        o.annotations =
                            BTreeMap::from([(DELETE_FOR_MOVE.to_string(), String::new())]);
                        o.finalizers.clear();
                        if o.deleting.is_some() {
                            s.objects.remove(&(kind, name.clone()));
                        }
                    }
                });
                if self.delete(kind, &name, "clusterctl")? {
                    objs.pop();
                    self.move_phase = MovePhase::Delete(objs);
                    return Ok(Some(self.rng.range(0, 2)));
                }
                let key = (Task::Lifecycle, kind, name.as_str());
                let start = self.refused_retry_later(key, 5, 60);
                if self.now < start + MOVE_RETRY_BUDGET {
                    self.move_phase = MovePhase::Delete(objs);
                    return Ok(Some(1));
                }
                let kind = kind.name();
                self.ev(|| {
                    format!("clusterctl: gave up deleting {kind} {name}: move failed half done")
                });
                self.move_phase = MovePhase::Failed;
                Ok(None)
            }
            MovePhase::Done | MovePhase::Failed => Ok(None),
        }
    }
}
