//! The Cluster API Cluster controller's deletion order: workers, then the control plane, then
//! the Cluster (internal/controllers/cluster/cluster_controller.go@v1.12.0, reconcileDelete);
//! Kubernetes' garbage collector (owners gone: dependents deleted, refusals retried with backoff)
//! and namespace controller (every kind deleted again and again until the namespace is empty).

use anyhow::Result;

use super::objects::{Kind, Obj};
use super::sim::*;

impl Sim<'_> {
    pub(super) fn cluster_controller(&mut self) -> bool {
        let deleting = self.read(|s| s.get(Kind::Cluster, CLUSTER).map(|c| c.deleting.is_some()));
        if deleting != Some(true) {
            return false;
        }
        // workers first, then the control plane, then the Cluster
        let workers: Vec<Obj> = self.read(|s| {
            let mds = s.of_kind(Kind::MachineDeployment);
            mds.chain(s.of_kind(Kind::MachineSet)).cloned().collect()
        });
        let mut did = false;
        for w in &workers {
            did |= self.read(|s| s.get(w.kind, &w.name).is_some_and(|o| o.deleting.is_none()));
            self.mark_deleted(w.kind, &w.name);
        }
        if did {
            return true;
        }
        let workers_left = self.read(|s| {
            s.of_kind(Kind::Metal3Machine)
                .any(|m| m.controlled_by(Kind::MachineSet, None))
        });
        if !workers.is_empty() || workers_left {
            return false;
        }
        let kind = self.sc.cp_kind;
        if let Some(live) = self.read(|s| s.get(kind, CP).map(|cp| cp.deleting.is_none())) {
            if live {
                self.mark_deleted(kind, CP);
            }
            return live;
        }
        if self.read(|s| s.of_kind(Kind::Metal3Machine).next().is_some()) {
            return false;
        }
        self.write(|s| s.drop_finalizer(Kind::Cluster, CLUSTER, CLUSTER_FINALIZER));
        self.ev(|| "Cluster edge-a gone".to_string());
        true
    }

    /// Deletes what an owner that is gone left behind, retrying refused deletes with backoff.
    pub(super) fn garbage_collector(&mut self) -> Result<bool> {
        let orphans: Vec<(Kind, String)> = self.read(|s| {
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
            if !self.due(Task::GarbageCollector, kind, &name) {
                continue;
            }
            let user = "system:serviceaccount:kube-system:generic-garbage-collector";
            if self.delete(kind, &name, user)? {
                did = true;
            } else {
                self.refused_retry_later((Task::GarbageCollector, kind, &name), 5, 1000);
            }
        }
        Ok(did)
    }

    /// The namespace controller: deletes every kind (one kind per pass, in random order),
    /// again and again until the namespace is empty.
    pub(super) fn namespace_deletion(&mut self) -> Result<Option<u64>> {
        self.write(|s| s.namespace_terminating = true);
        if self.read(|s| s.objects.is_empty()) {
            return Ok(None);
        }
        if self.ns_kinds.is_empty() {
            self.ns_kinds = Kind::ALL.to_vec();
            self.rng.shuffle(&mut self.ns_kinds);
        }
        let kind = self.ns_kinds.remove(0);
        let mut names = self.read(|s| s.names(kind));
        self.rng.shuffle(&mut names);
        for name in names {
            let user = "system:serviceaccount:kube-system:namespace-controller";
            if !self.delete(kind, &name, user)? {
                self.m.retries += 1;
            }
        }
        let pass_done = self.ns_kinds.is_empty();
        let (lo, hi) = if pass_done { (5, 30) } else { (0, 2) };
        Ok(Some(self.rng.range(lo, hi)))
    }
}
