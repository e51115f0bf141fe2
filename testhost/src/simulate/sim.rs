//! One seeded run: the event loop that wakes each actor (deployer, controllers, lifecycle, the
//! clean-up job) at random times, and what they share: the API (reads, writes, DELETE and
//! Metal3Machine CREATE through [`Admit`]: the compiled policy, or "allow everything" for the
//! column without it), retries with backoff and missing-template reconcile errors. The actors
//! live in their own modules, each citing the upstream code it models.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde_json::{json, Value};

use super::api::{render, Api};
use super::objects::{Kind, Obj, Ref, Spec, Store, NAMESPACE};
use super::rng::Rng;
use super::scenario::{Deployer, Lifecycle, Metrics, Scenario};
use crate::host::lock;
use crate::kube;

pub(super) const CLUSTER: &str = "edge-a";
/// The control plane's name.
pub(super) const CP: &str = "edge-a-cp";
pub(super) const CLASS: &str = "metal3-kubeadm";
pub(super) const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub(super) const TOPOLOGY_OWNED: &str = "topology.cluster.x-k8s.io/owned";
pub(super) const CLUSTER_FINALIZER: &str = "cluster.cluster.x-k8s.io";
pub(super) const MD_FINALIZER: &str = "cluster.x-k8s.io/machinedeployment";
pub(super) const MD_TOPOLOGY_FINALIZER: &str = "machinedeployment.topology.cluster.x-k8s.io";
pub(super) const MS_FINALIZER: &str = "cluster.x-k8s.io/machineset";
pub(super) const MS_TOPOLOGY_FINALIZER: &str = "machineset.topology.cluster.x-k8s.io";
pub(super) const CP_FINALIZER: &str = "controlplane.cluster.x-k8s.io";
pub(super) const M3M_FINALIZER: &str = "metal3machine.infrastructure.cluster.x-k8s.io";
pub(super) const HOUR: u64 = 3600;
/// A flow that has not finished this long after it started is stuck.
pub const FLOW_BOUND: u64 = 6 * HOUR;
/// Everything settles before this (the clean-up job runs hourly until then).
pub const HORIZON: u64 = 12 * HOUR;
/// clusterctl move retries a refused delete for about this long, then gives up.
pub(super) const MOVE_RETRY_BUDGET: u64 = 159;
/// The clean-up job's MIN_AGE_MINUTES.
pub(super) const CLEANUP_MIN_AGE: u64 = HOUR;

/// The answer of the admission chain, read from the AdmissionResponse only.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub allowed: bool,
    pub message: String,
    pub patch: Option<json_patch::Patch>,
}

impl Verdict {
    /// No policy installed: every request is allowed unchanged.
    pub const ALLOW: Verdict = Verdict {
        allowed: true,
        message: String::new(),
        patch: None,
    };
}

/// The admission chain for guarded requests.
pub type Admit<'a> = &'a mut dyn FnMut(&Value) -> Result<Verdict>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Task {
    Deployer,
    Topology,
    MdController,
    MsController,
    CpController,
    Capm3,
    ClusterController,
    GarbageCollector,
    Lifecycle,
    Cleanup,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DeployPhase {
    Apply,
    /// Deleting what the upgrade retired; the attempt.
    Delete(u32),
    /// helm-controller rolled the release back after a failed attempt; the upgrade runs again.
    Reapply(u32),
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MovePhase {
    Pause,
    Create(Vec<(Kind, String)>),
    Delete(Vec<(Kind, String)>),
    Done,
    /// A delete given up: the move failed half done.
    Failed,
}

pub struct Sim<'a> {
    pub(super) seed: u64,
    pub(super) rng: Rng,
    pub(super) now: u64,
    pub(super) queue: BinaryHeap<Reverse<(u64, u64, Task)>>,
    pub(super) api: Arc<Mutex<Api>>,
    pub(super) admit: Admit<'a>,
    pub(super) sc: Scenario,
    pub(super) m: Metrics,
    pub(super) trace: Option<Vec<String>>,
    pub(super) names: u64,
    pub(super) deploy: DeployPhase,
    /// Templates the deployer retired (to be deleted by it or collected by the clean-up job).
    pub(super) retired: BTreeSet<Ref>,
    /// The release's objects (owners and templates) before and after the upgrade, and what it
    /// retired, for a rollback and the attempt after it.
    pub(super) revisions: Option<(Vec<Obj>, Vec<Obj>, BTreeSet<Ref>)>,
    pub(super) ns_kinds: Vec<Kind>,
    pub(super) move_phase: MovePhase,
    /// (next attempt, retry delay, first attempt) per object being retried
    pub(super) backoff: BTreeMap<(Task, Kind, String), (u64, u64, u64)>,
    pub(super) missing_seen: BTreeSet<(String, Ref)>,
    pub(super) flow_done: Option<u64>,
}

impl<'a> Sim<'a> {
    pub fn new(seed: u64, api: Arc<Mutex<Api>>, admit: Admit<'a>, trace: bool) -> Sim<'a> {
        let mut rng = Rng::new(seed);
        let sc = Scenario::generate(seed, &mut rng);
        *lock(&api) = Api::new(sc.release);
        Sim {
            seed,
            rng,
            now: 0,
            queue: BinaryHeap::new(),
            api,
            admit,
            sc,
            m: Metrics::default(),
            trace: trace.then(Vec::new),
            names: 0,
            deploy: DeployPhase::Apply,
            retired: BTreeSet::new(),
            revisions: None,
            ns_kinds: Vec::new(),
            move_phase: MovePhase::Pause,
            backoff: BTreeMap::new(),
            missing_seen: BTreeSet::new(),
            flow_done: None,
        }
    }

    pub fn take_trace(&mut self) -> Vec<String> {
        self.trace.take().unwrap_or_default()
    }

    pub(super) fn ev(&mut self, text: impl FnOnce() -> String) {
        let now = self.now;
        if let Some(t) = self.trace.as_mut() {
            t.push(format!("{:>6} s  {}", now, text()));
        }
    }

    pub(super) fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&lock(&self.api).stores[0])
    }

    pub(super) fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        f(&mut lock(&self.api).stores[0])
    }

    pub(super) fn spec(&self, kind: Kind, name: &str) -> Option<Spec> {
        self.read(|s| s.get(kind, name).map(|o| o.spec.clone()))
    }

    pub(super) fn schedule(&mut self, task: Task, delay: u64) {
        let tie = self.rng.next_u64();
        self.queue.push(Reverse((self.now + delay, tie, task)));
    }

    pub(super) fn name(&mut self, prefix: &str) -> String {
        self.names += 1;
        let hash = self.rng.next_u64() & 0xffff_ffff;
        format!("{prefix}-{hash:08x}")
    }

    pub(super) fn topology(&self) -> bool {
        self.sc.deployer == Deployer::Topology
    }

    /// The Cluster's own copy of a ClusterClass template, owned by the topology, created.
    pub(super) fn copy_of(&mut self, source: &Ref, prefix: &str) -> Option<Ref> {
        let spec = self.spec(source.kind, &source.name)?;
        let mut t = Obj::new(source.kind, self.name(prefix), spec);
        t.labels.insert(TOPOLOGY_OWNED.into(), String::new());
        t.labels.insert(CLUSTER_NAME_LABEL.into(), CLUSTER.into());
        t.set_cloned_from(source);
        t.owner_cluster = Some(CLUSTER.into());
        Some(self.create(t))
    }

    pub(super) fn create(&mut self, obj: Obj) -> Ref {
        let r = obj.to_ref();
        let now = self.now;
        self.write(|s| s.create(obj, now));
        r
    }

    /// The API server's part of a delete, for what no admission chain guards.
    pub(super) fn mark_deleted(&self, kind: Kind, name: &str) {
        let now = self.now;
        self.write(|s| s.delete(kind, name, now))
    }

    /// The control plane's infrastructure template, unless the control plane is gone (or, with
    /// `live`, being deleted).
    pub(super) fn cp_infra(&self, live: bool) -> Option<Ref> {
        self.read(|s| {
            let cp = s
                .get(self.sc.cp_kind, CP)
                .filter(|o| !live || o.deleting.is_none())?;
            cp.spec.templates().first().map(|r| (*r).clone())
        })
    }

    /// Points the control plane at `new` (what a deploy tool or the topology controller writes).
    pub(super) fn point_control_plane(&self, new: &Ref) {
        self.write(|s| {
            if let Some(Spec::ControlPlane(cp)) = s.spec_mut(self.sc.cp_kind, CP) {
                cp.infra = new.clone();
            }
        });
    }

    /// A guarded DELETE or CREATE of `obj` by `user`: the AdmissionReview request, with `obj` at
    /// a version the release serves, sent to the admission chain, which reads `store` (1: the
    /// target of a move). The verdict, and the object as sent.
    pub(super) fn admit(
        &mut self,
        operation: &str,
        obj: &Obj,
        user: &str,
        store: usize,
    ) -> Result<(Verdict, Value)> {
        let kind = obj.kind;
        let v2 = self.sc.release.serves(kind, "v1beta2") && self.rng.chance(60);
        let version = if v2 { "v1beta2" } else { "v1beta1" };
        let mut value = render(obj, version, &self.sc.release);
        let (key, options) = if operation == "DELETE" {
            let options = json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"});
            ("oldObject", options)
        } else {
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                // assigned by the API server, after admission
                for key in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
                    meta.remove(key);
                }
                // written by the API server too (the clients send none)
                meta.remove("managedFields");
            }
            let options = json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"});
            ("object", options)
        };
        self.names += 1;
        let gvk = json!({"group": kind.group(), "version": version, "kind": kind.name()});
        let gvr = json!({"group": kind.group(), "version": version, "resource": kube::plural(kind.name())});
        let mut request = json!({
            "uid": format!("{:08x}-{:04x}", self.seed, self.names),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": obj.name,
            "namespace": NAMESPACE,
            "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "dryRun": false,
            "options": options,
        });
        request[key] = value.clone();
        self.m.admissions += 1;
        lock(&self.api).active = store;
        let verdict = (self.admit)(&request);
        lock(&self.api).active = 0;
        Ok((verdict?, value))
    }

    /// DELETE of an object; templates go through the admission chain. False when it refused.
    pub(super) fn delete(&mut self, kind: Kind, name: &str, user: &str) -> Result<bool> {
        // gone or being deleted: nothing to do
        let live = |o: &&Obj| o.deleting.is_none();
        let Some(obj) = self.read(|s| s.get(kind, name).filter(live).cloned()) else {
            return Ok(true);
        };
        if kind.is_template() {
            let (verdict, _) = self.admit("DELETE", &obj, user, 0)?;
            if !verdict.allowed {
                self.m.refused += 1;
                let kind = kind.name();
                self.ev(|| format!("{user}: DELETE {kind} {name} REFUSED: {}", verdict.message));
                return Ok(false);
            }
        }
        self.mark_deleted(kind, name);
        self.ev(|| format!("{user}: DELETE {} {name} accepted", kind.name()));
        Ok(true)
    }

    /// A template a deploy tool or controller will not try to delete again.
    pub(super) fn leak(&mut self, r: &Ref, why: &str) {
        self.m.leaked += 1;
        self.ev(|| format!("LEAKED {r}: {why}"));
    }

    /// A controller reads a template it needs; a missing one is a reconcile error.
    pub(super) fn fetch(&mut self, reader: &str, r: &Ref) -> bool {
        if self.read(|s| s.exists(r)) {
            return true;
        }
        if self.missing_seen.insert((reader.to_string(), r.clone())) {
            let (_, cluster_deleting) = self.cluster_state();
            let why = if cluster_deleting {
                self.m.missing_cluster_deleting += 1;
                " (Cluster being deleted)"
            } else {
                self.m.missing += 1;
                ""
            };
            self.ev(|| format!("{reader}: reconcile error, {r} not found{why}"));
        }
        false
    }

    /// Whether `(task, kind, name)` may be tried now (it is not waiting for a retry).
    pub(super) fn due(&self, task: Task, kind: Kind, name: &str) -> bool {
        let retry = self.backoff.get(&(task, kind, name.to_string()));
        retry.is_none_or(|(next, ..)| *next <= self.now)
    }

    /// Records a retry of a refused delete, the delay doubling from `first` up to `max`; returns
    /// when the first attempt was.
    pub(super) fn refused_retry_later(
        &mut self,
        (task, kind, name): (Task, Kind, &str),
        first: u64,
        max: u64,
    ) -> u64 {
        let key = (task, kind, name.to_string());
        let (delay, start) = match self.backoff.get(&key) {
            Some((_, d, s)) => ((d * 2).min(max), *s),
            None => (first, self.now),
        };
        self.backoff.insert(key, (self.now + delay, delay, start));
        self.m.retries += 1;
        start
    }

    /// (paused, being deleted). Controllers do nothing for a Cluster that is gone: they fail to
    /// read it.
    pub(super) fn cluster_state(&self) -> (bool, bool) {
        self.read(|s| match s.get(Kind::Cluster, CLUSTER) {
            Some(Obj {
                spec: Spec::Cluster { paused },
                deleting,
                ..
            }) => (*paused, deleting.is_some()),
            _ => (true, true),
        })
    }

    pub fn run(&mut self) -> Result<Metrics> {
        self.build()?;
        self.ev(|| "initial state built".to_string());
        self.schedule(Task::Deployer, self.sc.upgrade_at);
        if self.topology() {
            self.schedule(Task::Topology, 5);
        }
        for t in [
            Task::MdController,
            Task::MsController,
            Task::CpController,
            Task::Capm3,
            Task::ClusterController,
            Task::GarbageCollector,
        ] {
            let d = self.rng.range(1, 30);
            self.schedule(t, d);
        }
        if self.sc.lifecycle != Lifecycle::None {
            self.schedule(Task::Lifecycle, self.sc.lifecycle_at);
        }
        self.schedule(Task::Cleanup, self.sc.cleanup_offset);

        while let Some(Reverse((t, _, task))) = self.queue.pop() {
            if t > HORIZON {
                break;
            }
            self.now = t;
            if let Some(delay) = self.step(task)? {
                self.schedule(task, delay.max(1));
            }
            if self.flow_done.is_none() && self.flow_finished() {
                self.flow_done = Some(self.now);
                self.ev(|| "flow finished".to_string());
            }
        }
        self.finish();
        Ok(self.m.clone())
    }

    /// Runs `task`; returns when to wake it again.
    fn step(&mut self, task: Task) -> Result<Option<u64>> {
        let did = match task {
            Task::Deployer => return self.deployer(),
            Task::Lifecycle => return self.lifecycle(),
            Task::Cleanup => {
                self.cleanup_job()?;
                return Ok(Some(HOUR));
            }
            Task::Capm3 => {
                let (lo, hi) = if self.capm3() { (20, 120) } else { (10, 40) };
                return Ok(Some(self.rng.range(lo, hi)));
            }
            Task::Topology => self.topology_step()?,
            // the MachineDeployment controller does nothing while the Cluster is paused
            Task::MdController if self.cluster_state().0 => false,
            Task::MdController => {
                self.reconcile_each(Kind::MachineDeployment, Self::reconcile_md)?
            }
            Task::MsController => self.reconcile_each(Kind::MachineSet, Self::reconcile_ms)?,
            Task::CpController => self.cp_controller()?,
            Task::ClusterController => self.cluster_controller(),
            Task::GarbageCollector => self.garbage_collector()?,
        };
        let (lo, hi) = if did { (1, 8) } else { (15, 60) };
        Ok(Some(self.rng.range(lo, hi)))
    }

    pub(super) fn machines_of(&self, owner: Kind, name: &str) -> Vec<Obj> {
        self.read(|s| s.owned(Kind::Metal3Machine, owner, name).cloned().collect())
    }

    pub(super) fn ready(&self, m: &Obj) -> bool {
        m.deleting.is_none()
            && matches!(m.spec, Spec::Metal3Machine { ready_at, .. } if ready_at <= self.now)
    }

    /// Reconciles every object of `kind`, in a random order as controllers' work queues do;
    /// true when any reconcile changed something.
    pub(super) fn reconcile_each(
        &mut self,
        kind: Kind,
        reconcile: fn(&mut Self, &str) -> Result<bool>,
    ) -> Result<bool> {
        let mut names = self.read(|s| s.names(kind));
        self.rng.shuffle(&mut names);
        let mut did = false;
        for name in names {
            did |= reconcile(self, &name)?;
        }
        Ok(did)
    }

    fn lifecycle(&mut self) -> Result<Option<u64>> {
        // its first wake-up (the next ones are at least a second later)
        if self.now == self.sc.lifecycle_at {
            let label = self.sc.lifecycle.label();
            self.ev(|| format!("lifecycle: {label}"));
        }
        match self.sc.lifecycle {
            Lifecycle::None => Ok(None),
            Lifecycle::ClusterDeletion => {
                self.delete(Kind::Cluster, CLUSTER, "admin")?;
                Ok(None)
            }
            Lifecycle::NamespaceDeletion => self.namespace_deletion(),
            Lifecycle::Move => self.clusterctl_move(),
        }
    }
}

/// What the tests of the actors share: runs of a seed and the seeds of a flow.
#[cfg(test)]
pub(super) mod testing {
    use super::*;
    // what the actors' tests name their flows by
    pub use super::super::scenario::{Deployer, Lifecycle};

    /// A run of `seed` without the policy, or refusing every template DELETE (as the policy does
    /// for templates in use).
    pub fn run(seed: u64, refuse_deletes: bool) -> (Metrics, Vec<String>) {
        let mut admit = |request: &Value| {
            Ok(Verdict {
                allowed: !refuse_deletes || request["operation"] != "DELETE",
                message: "(409) in use".to_string(),
                patch: None,
            })
        };
        let mut sim = Sim::new(seed, Arc::default(), &mut admit, true);
        let metrics = sim.run().unwrap();
        (metrics, sim.take_trace())
    }

    pub fn scenario(seed: u64) -> Scenario {
        Scenario::generate(seed, &mut Rng::new(seed))
    }

    /// The index of a flow: deployer, then lifecycle.
    pub fn flow(deployer: Deployer, lifecycle: Lifecycle) -> u64 {
        // its place in Deployer::ALL, either variant
        let same = |d: &Deployer| d.label() == deployer.label();
        let index = Deployer::ALL.iter().position(same).unwrap();
        (lifecycle as usize * Deployer::ALL.len() + index) as u64
    }

    /// 20 seeds of a flow.
    pub fn seeds(deployer: Deployer, lifecycle: Lifecycle) -> impl Iterator<Item = u64> {
        let flows = (Deployer::ALL.len() * Lifecycle::ALL.len()) as u64;
        (0..20).map(move |i| i * flows + flow(deployer, lifecycle))
    }

    #[test]
    fn a_seed_replays_exactly() {
        for seed in [3, 7, 40] {
            assert_eq!(run(seed, false), run(seed, false));
        }
    }

    #[test]
    fn every_flow_is_chosen_evenly() {
        let flows = Deployer::ALL.len() * Lifecycle::ALL.len();
        let chosen: BTreeSet<u64> = (0..flows as u64)
            .map(|seed| flow(scenario(seed).deployer, scenario(seed).lifecycle))
            .collect();
        assert_eq!(chosen.len(), flows);
        for d in Deployer::ALL {
            let label = |seed| scenario(seed).deployer.label();
            assert!(seeds(d, Lifecycle::Move).all(|seed| label(seed) == d.label()));
        }
    }
}
