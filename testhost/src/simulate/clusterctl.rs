//! `clusterctl move`: pause, create everything on the target, then annotate each source object
//! with delete-for-move and delete it, retrying a refused delete with exponential backoff for
//! about two minutes before the move fails half done (cmd/clusterctl/client/cluster/mover.go@v1.12.0,
//! deleteSourceObject with newWriteBackoff).

use std::collections::BTreeMap;

use anyhow::Result;

use super::objects::*;
use super::world::{Actor, Backoff, World};
use crate::host::lock;

/// clusterctl move retries a refused delete for about this long, then gives up.
const RETRY_BUDGET: u64 = 159;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Pause,
    Create(Vec<(Kind, String)>),
    Delete(Vec<(Kind, String)>),
    Done,
    /// A delete given up: the move failed half done.
    Failed,
}

#[derive(Debug, Default)]
pub struct Clusterctl {
    phase: Phase,
    backoff: Backoff,
}

impl Actor for Clusterctl {
    /// Pause, create everything on the target, then annotate and delete each source object in
    /// random order, retrying a refused delete for about 159 s.
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        w.lifecycle_starts();
        let next = self.move_step(w)?;
        w.status.moved = match self.phase {
            Phase::Done => Some(true),
            Phase::Failed => Some(false),
            _ => None,
        };
        Ok(next)
    }
}

impl Clusterctl {
    fn move_step(&mut self, w: &mut World) -> Result<Option<u64>> {
        match self.phase.clone() {
            Phase::Pause => {
                w.write(|s| {
                    if let Some(Spec::Cluster { paused }) = s.spec_mut(Kind::Cluster, CLUSTER) {
                        *paused = true;
                    }
                });
                let mut objs = w.read(|s| s.objects.keys().cloned().collect::<Vec<_>>());
                w.rng.shuffle(&mut objs);
                w.ev(|| "clusterctl: Cluster paused".to_string());
                self.phase = Phase::Create(objs);
                Ok(Some(w.rng.range(1, 5)))
            }
            Phase::Create(mut objs) => {
                let split = objs.len().saturating_sub(3);
                for (kind, name) in objs.split_off(split).into_iter().rev() {
                    let Some(mut obj) = w.read(|s| s.get(kind, &name).cloned()) else {
                        continue;
                    };
                    obj.deleting = None;
                    if kind == Kind::Metal3Machine {
                        w.create_metal3machine(1, obj)?;
                    } else {
                        let now = w.now;
                        lock(&w.api).stores[1].create(obj, now);
                    }
                }
                self.phase = if objs.is_empty() {
                    let mut all = w.read(|s| s.objects.keys().cloned().collect::<Vec<_>>());
                    w.rng.shuffle(&mut all);
                    Phase::Delete(all)
                } else {
                    Phase::Create(objs)
                };
                Ok(Some(w.rng.range(1, 3)))
            }
            Phase::Delete(mut objs) => {
                let Some((kind, name)) = objs.last().cloned() else {
                    self.phase = Phase::Done;
                    return Ok(None);
                };
                if !self.backoff.due(w.now, kind, &name) {
                    return Ok(Some(1));
                }
                w.write(|s| {
                    if let Some(o) = s.get_mut(kind, &name) {
                        o.annotations =
                            BTreeMap::from([(DELETE_FOR_MOVE.to_string(), String::new())]);
                        o.finalizers.clear();
                        if o.deleting.is_some() {
                            s.objects.remove(&(kind, name.clone()));
                        }
                    }
                });
                if w.delete(kind, &name, "clusterctl")? {
                    objs.pop();
                    self.phase = Phase::Delete(objs);
                    return Ok(Some(w.rng.range(0, 2)));
                }
                let start = self.backoff.retry_later(w, (kind, &name), 5, 60);
                if w.now < start + RETRY_BUDGET {
                    self.phase = Phase::Delete(objs);
                    return Ok(Some(1));
                }
                let what = format!("{} {name}", kind.name());
                w.ev(|| format!("clusterctl: gave up deleting {what}: move failed half done"));
                self.phase = Phase::Failed;
                Ok(None)
            }
            Phase::Done | Phase::Failed => Ok(None),
        }
    }
}
