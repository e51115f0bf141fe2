//! `clusterctl move`: pause, create everything on the target, then annotate each source object
//! with delete-for-move and delete it (cmd/clusterctl/client/cluster/mover.go:1238-1253@v1.12.0,
//! deleteGroup), retrying a refused delete with `newWriteBackoff` (client.go:261-270@v1.12.0:
//! 500 ms, factor 1.5, 10 steps, jitter 0.4, "a total time of ~40s") through
//! `retryWithExponentialBackoff` (client.go:239-257): ten attempts over about 40 s, then the move
//! fails half done (the same in every 1.10 and 1.11). v1.12.11, v1.13.5 and v1.14.0 take 13
//! steps, about 159 s (commit 6e561bd22d); the simulation models the shorter budget, the stricter
//! test. Simplified: the waits are those
//! of the comment rounded to whole seconds, without jitter, and the move gives up at the first
//! object that fails (deleteGroup tries the rest of its group first, then fails the move).

use std::collections::BTreeMap;

use anyhow::Result;

use super::world::{Actor, World};
use crate::apiserver::objects::*;
use crate::host::lock;

/// The waits between the ten attempts to delete an object, in whole seconds: newWriteBackoff's
/// 0.5, 0.75, 1.1, 1.7, 2.5, 3.8, 5.7, 8.5 and 12.8 s, at least 1 s (40 s in all).
const RETRY_WAITS: [u64; 9] = [1, 1, 1, 2, 3, 4, 6, 9, 13];

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
    /// The failed attempts to delete the current object (the next is due when it wakes).
    failed: usize,
}

impl Actor for Clusterctl {
    /// Pause, create everything on the target, then annotate and delete each source object in
    /// random order, retrying a refused delete for about 40 s.
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
                    self.failed = 0;
                    objs.pop();
                    self.phase = Phase::Delete(objs);
                    return Ok(Some(w.rng.range(0, 2)));
                }
                if let Some(wait) = RETRY_WAITS.get(self.failed) {
                    self.failed += 1;
                    w.m.retries += 1;
                    self.phase = Phase::Delete(objs);
                    return Ok(Some(*wait));
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

#[cfg(test)]
mod tests {
    use super::super::sim::testing::*;

    /// With every template DELETE refused, a move tries the first template ten times over 40 s,
    /// then fails half done.
    #[test]
    fn a_refused_delete_is_tried_ten_times_over_40_s() {
        let seed = seeds(Deployer::Topology, Lifecycle::Move)
            .next()
            .unwrap_or_default();
        let (metrics, trace) = run(seed, true);
        let at = |line: &String| line.split(" s ").next()?.trim().parse::<u64>().ok();
        let gave_up = trace
            .iter()
            .find(|l| l.contains("clusterctl: gave up deleting"));
        let what = gave_up.and_then(|l| l.split("deleting ").nth(1)?.split(':').next());
        let what = what.expect("the move gave up").to_string();
        let refused: Vec<u64> = trace
            .iter()
            .filter(|l| l.contains(&format!("clusterctl: DELETE {what} REFUSED")))
            .filter_map(at)
            .collect();
        assert_eq!(refused.len(), 10, "{what}");
        let span = refused.last().zip(refused.first()).map(|(l, f)| l - f);
        assert_eq!(span, Some(40));
        assert!(metrics.stuck > 0);
    }
}
