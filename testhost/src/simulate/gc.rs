//! Kubernetes' garbage collector: deletes what an owner that is gone left behind (dependents of
//! a deleted Cluster or controller owner), retrying refused deletes with backoff. Upstream a
//! failed attemptToDeleteItem is requeued rate-limited (pkg/controller/garbagecollector/
//! garbagecollector.go, processAttemptToDeleteWorker: requeueItem, AddRateLimited; the queue is
//! made in graph_builder.go with workqueue.DefaultTypedControllerRateLimiter; read on kubernetes
//! master, garbagecollector.go at 02830ed24b), whose per-item delay doubles from 5 ms up to 1000 s (client-go
//! util/workqueue/default_rate_limiters.go:50-56@v0.34.0, Kubernetes 1.34). Simplified: the
//! simulation's clock is in whole seconds, so the delay doubles from 5 s (upstream is there after
//! about ten quick retries, some 10 s); the 10 qps bucket over all items is not modelled.

use anyhow::Result;

use super::world::{Actor, Backoff, World};
use crate::apiserver::objects::*;

#[derive(Debug, Default)]
pub struct GarbageCollector(Backoff);

impl Actor for GarbageCollector {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let orphans: Vec<(Kind, String)> = w.read(|s| {
            let cluster_gone = s.get(Kind::Cluster, CLUSTER).is_none();
            s.objects
                .values()
                .filter(|o| o.deleting.is_none())
                .filter(|o| {
                    (cluster_gone && o.owner_cluster.is_some())
                        || o.controller
                            .as_ref()
                            .is_some_and(|(k, n)| s.get(*k, n).is_none())
                })
                .map(Obj::key)
                .collect()
        });
        let mut did = false;
        for (kind, name) in orphans {
            if !self.0.due(w.now, kind, &name) {
                continue;
            }
            let user = "system:serviceaccount:kube-system:generic-garbage-collector";
            if w.delete(kind, &name, user)? {
                did = true;
            } else {
                self.0.retry_later(w, (kind, &name), 5, 1000);
            }
        }
        Ok(Some(w.requeue(did)))
    }
}
