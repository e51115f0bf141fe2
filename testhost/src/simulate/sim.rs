//! One seeded run: the event loop that wakes each actor (deployer, controllers, lifecycle, the
//! clean-up job) at random times, and what they share: the API (reads, writes, DELETE and
//! Metal3Machine CREATE through [`Admit`]: the compiled policy, or "allow everything" for the
//! column without it), retries with backoff and missing-template reconcile errors. The actors
//! live in their own modules, each citing the upstream code it models.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use super::api::{
    render, Api, Kind, Obj, Ref, Spec, Store, CLONED_FROM_GROUPKIND, CLONED_FROM_NAME, NAMESPACE,
};
use super::rng::Rng;
use super::scenario::{Deployer, Lifecycle, Metrics, Scenario};

pub(super) const CLUSTER: &str = "edge-a";
pub(super) const CLUSTER_FINALIZER: &str = "cluster.cluster.x-k8s.io";
pub(super) const MD_FINALIZER: &str = "cluster.x-k8s.io/machinedeployment";
pub(super) const MD_TOPOLOGY_FINALIZER: &str = "machinedeployment.topology.cluster.x-k8s.io";
pub(super) const CP_FINALIZER: &str = "controlplane.cluster.x-k8s.io";
pub(super) const M3M_FINALIZER: &str = "metal3machine.infrastructure.cluster.x-k8s.io";
pub(super) const TOPOLOGY_OWNED: &str = "topology.cluster.x-k8s.io/owned";
pub(super) const CLASS: &str = "metal3-kubeadm";
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

/// The admission chain for guarded requests.
pub trait Admit {
    fn admit(&mut self, request: &Value, api: &Arc<Mutex<Api>>) -> Result<Verdict>;
}

/// No policy installed: every request is allowed unchanged.
pub struct AllowAll;

impl Admit for AllowAll {
    fn admit(&mut self, _request: &Value, _api: &Arc<Mutex<Api>>) -> Result<Verdict> {
        Ok(Verdict {
            allowed: true,
            message: String::new(),
            patch: None,
        })
    }
}
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
    Delete {
        attempt: u32,
    },
    /// helm-controller rolled the release back after a failed attempt; the upgrade runs again.
    Reapply {
        attempt: u32,
    },
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MovePhase {
    Pause,
    Create(Vec<(Kind, String)>),
    Delete(Vec<(Kind, String)>),
    Done,
}

/// Outcome of a DELETE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Deleted {
    Gone,
    Deleting,
    Refused(String),
    NotFound,
}

pub struct Sim<'a> {
    pub(super) seed: u64,
    pub(super) rng: Rng,
    pub(super) now: u64,
    pub(super) queue: BinaryHeap<Reverse<(u64, u64, Task)>>,
    pub(super) api: Arc<Mutex<Api>>,
    pub(super) admit: &'a mut dyn Admit,
    pub(super) sc: Scenario,
    pub m: Metrics,
    pub(super) trace: Option<Vec<String>>,
    pub(super) names: u64,
    pub(super) deploy: DeployPhase,
    /// Templates the deployer retired (to be deleted by it or collected by the clean-up job).
    pub(super) retired: BTreeSet<Ref>,
    /// The release's objects (owners and templates) before and after the upgrade, and what it
    /// retired, for a rollback and the attempt after it.
    pub(super) revisions: Option<(Vec<Obj>, Vec<Obj>, BTreeSet<Ref>)>,
    pub(super) topo_md_removed: bool,
    pub(super) lifecycle_started: bool,
    pub(super) ns_kinds: Vec<Kind>,
    pub(super) move_phase: MovePhase,
    /// (next attempt, retry delay, first attempt) per object being retried
    pub(super) backoff: BTreeMap<(Task, Kind, String), (u64, u64, u64)>,
    pub(super) missing_seen: BTreeSet<(String, Ref)>,
    pub(super) flow_done: Option<u64>,
    pub(super) move_failed: bool,
}
pub(super) fn lock(api: &Arc<Mutex<Api>>) -> std::sync::MutexGuard<'_, Api> {
    api.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'a> Sim<'a> {
    pub fn new(seed: u64, api: Arc<Mutex<Api>>, admit: &'a mut dyn Admit, trace: bool) -> Sim<'a> {
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
            topo_md_removed: false,
            lifecycle_started: false,
            ns_kinds: Vec::new(),
            move_phase: MovePhase::Pause,
            backoff: BTreeMap::new(),
            missing_seen: BTreeSet::new(),
            flow_done: None,
            move_failed: false,
        }
    }

    pub fn scenario(&self) -> &Scenario {
        &self.sc
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
        let api = lock(&self.api);
        f(&api.stores[0])
    }

    pub(super) fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        let mut api = lock(&self.api);
        f(&mut api.stores[0])
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

    pub(super) fn bootstrap_kind(&self) -> Kind {
        if self.sc.cp_kind == Kind::Rke2ControlPlane {
            Kind::Rke2ConfigTemplate
        } else {
            Kind::KubeadmConfigTemplate
        }
    }

    pub(super) fn topology(&self) -> bool {
        self.sc.deployer == Deployer::Topology
    }

    /// A per-cluster copy of a ClusterClass template, owned by the topology.
    pub(super) fn clone_of(&mut self, source: &Ref, prefix: &str) -> Option<Obj> {
        let spec = self.read(|s| s.get(source.kind, &source.name).map(|o| o.spec.clone()))?;
        let mut t = Obj::new(source.kind, self.name(prefix), spec);
        t.labels.insert(TOPOLOGY_OWNED.into(), String::new());
        t.labels
            .insert("cluster.x-k8s.io/cluster-name".into(), CLUSTER.into());
        t.annotations
            .insert(CLONED_FROM_NAME.into(), source.name.clone());
        t.annotations.insert(
            CLONED_FROM_GROUPKIND.into(),
            format!("{}.{}", source.kind.name(), source.kind.group()),
        );
        t.owner_cluster = Some(CLUSTER.into());
        Some(t)
    }

    pub(super) fn create(&mut self, obj: Obj) -> Ref {
        let r = Ref::new(obj.kind, obj.name.clone());
        let now = self.now;
        self.write(|s| s.create(obj, now));
        r
    }

    pub(super) fn request(
        &mut self,
        operation: &str,
        kind: Kind,
        name: &str,
        version: &str,
        obj: Value,
        user: &str,
    ) -> Value {
        self.names += 1;
        let gvk = json!({"group": kind.group(), "version": version, "kind": kind.name()});
        let gvr = json!({"group": kind.group(), "version": version, "resource": kind.plural()});
        let mut req = json!({
            "uid": format!("{:08x}-{:04x}", self.seed, self.names),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": name,
            "namespace": NAMESPACE,
            "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "dryRun": false,
        });
        if let Some(map) = req.as_object_mut() {
            if operation == "DELETE" {
                map.insert("oldObject".into(), obj);
                map.insert(
                    "options".into(),
                    json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}),
                );
            } else {
                map.insert("object".into(), obj);
                map.insert(
                    "options".into(),
                    json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}),
                );
            }
        }
        req
    }

    pub(super) fn served_version(&mut self, kind: Kind) -> &'static str {
        let release = self.sc.release;
        if release.serves(kind, "v1beta2") && self.rng.chance(60) {
            "v1beta2"
        } else {
            "v1beta1"
        }
    }

    /// DELETE of an object; templates go through the admission chain.
    pub(super) fn delete(&mut self, kind: Kind, name: &str, user: &str) -> Result<Deleted> {
        let Some(obj) = self.read(|s| s.get(kind, name).cloned()) else {
            return Ok(Deleted::NotFound);
        };
        if obj.deleting.is_some() {
            return Ok(Deleted::Deleting);
        }
        if kind.is_template() {
            let version = self.served_version(kind);
            let old = render(&obj, version, &self.sc.release);
            let req = self.request("DELETE", kind, name, version, old, user);
            self.m.admissions += 1;
            let verdict = self.admit.admit(&req, &self.api)?;
            if !verdict.allowed {
                self.m.refused += 1;
                let msg = verdict.message.clone();
                self.ev(|| format!("{user}: DELETE {} {name} REFUSED: {msg}", kind.name()));
                return Ok(Deleted::Refused(verdict.message));
            }
        }
        let now = self.now;
        let gone = self.write(|s| s.delete(kind, name, now));
        self.ev(|| format!("{user}: DELETE {} {name} accepted", kind.name()));
        Ok(if gone {
            Deleted::Gone
        } else {
            Deleted::Deleting
        })
    }

    /// A Machine and its Metal3Machine, cloned from `template` (CREATE goes through the
    /// mutation). `ready` machines are provisioned already.
    pub(super) fn create_machine(
        &mut self,
        owner: (Kind, String),
        template: &Ref,
        ready: bool,
    ) -> Result<bool> {
        self.create_machine_in(0, owner, template, ready, None)
    }

    pub(super) fn create_machine_in(
        &mut self,
        store: usize,
        owner: (Kind, String),
        template: &Ref,
        ready: bool,
        moved: Option<Obj>,
    ) -> Result<bool> {
        let mut obj = match moved {
            Some(o) => o,
            None => {
                let Some(Spec::Template {
                    node_reuse,
                    cleaning,
                }) = self.read(|s| s.get(template.kind, &template.name).map(|t| t.spec.clone()))
                else {
                    return Ok(false);
                };
                let name = self.name(&owner.1);
                let mut m = Obj::new(
                    Kind::Metal3Machine,
                    name,
                    Spec::Metal3Machine {
                        cleaning,
                        ready_at: if ready {
                            0
                        } else {
                            self.now + self.rng.range(180, 900)
                        },
                        intent: node_reuse,
                    },
                );
                m.annotations
                    .insert(CLONED_FROM_NAME.into(), template.name.clone());
                m.annotations.insert(
                    CLONED_FROM_GROUPKIND.into(),
                    format!("{}.{}", template.kind.name(), template.kind.group()),
                );
                m.labels
                    .insert("cluster.x-k8s.io/cluster-name".into(), CLUSTER.into());
                m.finalizers.insert(M3M_FINALIZER.into());
                m.controller = Some(owner);
                m
            }
        };
        let version = self.served_version(Kind::Metal3Machine);
        let mut value = render(&obj, version, &self.sc.release);
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            // not assigned yet on CREATE
            for key in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "generation",
                "managedFields",
            ] {
                meta.remove(key);
            }
        }
        let name = obj.name.clone();
        let req = self.request(
            "CREATE",
            Kind::Metal3Machine,
            &name,
            version,
            value.clone(),
            "system:serviceaccount:capi-system:capi-manager",
        );
        self.m.admissions += 1;
        lock(&self.api).active = store;
        let verdict = self.admit.admit(&req, &self.api);
        lock(&self.api).active = 0;
        let verdict = verdict?;
        if !verdict.allowed {
            self.m.refused_creates += 1;
            let msg = verdict.message.clone();
            self.ev(|| format!("CREATE Metal3Machine {name} REFUSED: {msg}"));
            return Ok(false);
        }
        if let Some(patch) = &verdict.patch {
            json_patch::patch(&mut value, patch)
                .map_err(|e| anyhow!("the policy's patch does not apply to {name}: {e}"))?;
            self.m.mutations += 1;
            if let Some(ann) = value
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
            {
                obj.annotations = ann
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect();
            }
            if let Spec::Metal3Machine { cleaning, .. } = &mut obj.spec {
                *cleaning = value
                    .pointer("/spec/automatedCleaningMode")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
        }
        let now = self.now;
        let created = lock(&self.api).stores[store].create(obj, now);
        self.ev(|| {
            format!(
                "CREATE Metal3Machine {name} from {template}{}",
                if created {
                    ""
                } else {
                    " (namespace terminating)"
                }
            )
        });
        Ok(created)
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
        let key = (reader.to_string(), r.clone());
        if self.missing_seen.insert(key) {
            let (_, cluster_deleting) = self.cluster_state();
            if cluster_deleting {
                self.m.missing_cluster_deleting += 1;
            } else {
                self.m.missing += 1;
            }
            self.ev(|| {
                format!(
                    "{reader}: reconcile error, {r} not found{}",
                    if cluster_deleting {
                        " (Cluster being deleted)"
                    } else {
                        ""
                    }
                )
            });
        }
        false
    }

    /// Whether `(task, kind, name)` may be tried now; records a retry when it is a retry.
    pub(super) fn due(&mut self, task: Task, kind: Kind, name: &str) -> bool {
        match self.backoff.get(&(task, kind, name.to_string())) {
            Some((next, _, _)) => *next <= self.now,
            None => true,
        }
    }

    pub(super) fn refused_retry_later(
        &mut self,
        task: Task,
        kind: Kind,
        name: &str,
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
        let upgrade_at = self.sc.upgrade_at;
        self.schedule(Task::Deployer, upgrade_at);
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
            let at = self.sc.lifecycle_at;
            self.schedule(Task::Lifecycle, at);
        }
        let off = self.sc.cleanup_offset;
        self.schedule(Task::Cleanup, off);

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

    pub(super) fn busy(&mut self, did: bool) -> Option<u64> {
        Some(if did {
            self.rng.range(1, 8)
        } else {
            self.rng.range(15, 60)
        })
    }

    pub(super) fn step(&mut self, task: Task) -> Result<Option<u64>> {
        Ok(match task {
            Task::Deployer => self.deployer()?,
            Task::Topology => {
                let did = self.topology_step()?;
                self.busy(did)
            }
            Task::MdController => {
                let did = self.md_controller()?;
                self.busy(did)
            }
            Task::MsController => {
                let did = self.ms_controller()?;
                self.busy(did)
            }
            Task::CpController => {
                let did = self.cp_controller()?;
                self.busy(did)
            }
            Task::Capm3 => {
                let did = self.capm3();
                Some(if did {
                    self.rng.range(20, 120)
                } else {
                    self.rng.range(10, 40)
                })
            }
            Task::ClusterController => {
                let did = self.cluster_controller();
                self.busy(did)
            }
            Task::GarbageCollector => {
                let did = self.garbage_collector()?;
                self.busy(did)
            }
            Task::Lifecycle => self.lifecycle()?,
            Task::Cleanup => {
                self.cleanup_job()?;
                Some(HOUR)
            }
        })
    }

    pub(super) fn machines_of(&self, owner: Kind, name: &str) -> Vec<Obj> {
        self.read(|s| {
            s.of_kind(Kind::Metal3Machine)
                .filter(|m| {
                    m.controller
                        .as_ref()
                        .is_some_and(|(k, n)| *k == owner && n == name)
                })
                .cloned()
                .collect()
        })
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

    pub(super) fn lifecycle(&mut self) -> Result<Option<u64>> {
        if !self.lifecycle_started {
            self.lifecycle_started = true;
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

#[cfg(test)]
mod tests {
    use super::super::api::Release;
    use super::*;

    fn run(seed: u64) -> (Metrics, Vec<String>) {
        let api = Arc::new(Mutex::new(Api::new(Release {
            capi_v1beta2: true,
            metal3_v1beta2: true,
            rke2: None,
        })));
        let mut allow = AllowAll;
        let mut sim = Sim::new(seed, api, &mut allow, true);
        let metrics = sim.run().unwrap();
        (metrics, sim.take_trace())
    }

    #[test]
    fn a_seed_replays_exactly() {
        for seed in [3, 7, 40] {
            assert_eq!(run(seed), run(seed));
        }
    }

    /// Refuses every template DELETE, as the policy does for templates in use.
    struct RefuseDeletes;

    impl Admit for RefuseDeletes {
        fn admit(&mut self, request: &Value, _api: &Arc<Mutex<Api>>) -> Result<Verdict> {
            Ok(Verdict {
                allowed: request["operation"] != "DELETE",
                message: "(409) in use".to_string(),
                patch: None,
            })
        }
    }

    fn seeds(deployer: Deployer, lifecycle: Lifecycle) -> impl Iterator<Item = u64> {
        let flows = (Deployer::ALL.len() * Lifecycle::ALL.len()) as u64;
        let d = Deployer::ALL
            .iter()
            .position(|x| x.label() == deployer.label())
            .unwrap();
        let l = Lifecycle::ALL.iter().position(|x| *x == lifecycle).unwrap();
        (0..20).map(move |i| i * flows + (l * Deployer::ALL.len() + d) as u64)
    }

    #[test]
    fn every_flow_is_chosen_evenly() {
        let flows = Deployer::ALL.len() * Lifecycle::ALL.len();
        let chosen: BTreeSet<(&str, usize)> = (0..flows as u64)
            .map(|seed| {
                let sc = Scenario::generate(seed, &mut Rng::new(seed));
                let lifecycle = Lifecycle::ALL.iter().position(|l| *l == sc.lifecycle);
                (sc.deployer.label(), lifecycle.unwrap())
            })
            .collect();
        assert_eq!(chosen.len(), flows);
        for d in Deployer::ALL {
            assert!(seeds(d, Lifecycle::Move).all(|seed| {
                Scenario::generate(seed, &mut Rng::new(seed))
                    .deployer
                    .label()
                    == d.label()
            }));
        }
    }

    #[test]
    fn without_the_policy_helm3_upgrades_lose_node_reuse_decisions() {
        let lost: u64 = seeds(Deployer::Helm3, Lifecycle::None)
            .map(|s| run(s).0.lost)
            .sum();
        assert!(lost > 0);
    }

    #[test]
    fn the_topology_deletes_an_old_control_plane_template_once_and_leaks_it_when_refused() {
        let mut leaked = 0;
        for seed in seeds(Deployer::Topology, Lifecycle::None) {
            let api = Arc::new(Mutex::new(Api::new(
                Scenario::generate(seed, &mut Rng::new(seed)).release,
            )));
            let mut refuse = RefuseDeletes;
            let mut sim = Sim::new(seed, api, &mut refuse, true);
            let metrics = sim.run().unwrap();
            let trace = sim.take_trace();
            let refused_by_topology = trace
                .iter()
                .filter(|l| l.contains("topology: DELETE Metal3MachineTemplate edge-a-cp"))
                .count() as u64;
            // one attempt per rotation, never a retry
            let rotations = trace
                .iter()
                .filter(|l| l.contains("topology: control plane now uses"))
                .count() as u64;
            assert_eq!(refused_by_topology, rotations, "seed {seed}");
            leaked += metrics.leaked;
        }
        assert!(leaked > 0);
    }

    #[test]
    fn argo_cd_never_prunes_owned_templates_with_or_without_the_policy() {
        for seed in seeds(Deployer::Argo, Lifecycle::None) {
            let (metrics, trace) = run(seed);
            assert_eq!(metrics.lost, 0, "seed {seed}");
            assert!(!trace
                .iter()
                .any(|l| l.contains("argocd-application-controller: DELETE")));
        }
    }

    #[test]
    fn a_control_plane_that_needs_its_template_to_be_deleted_hangs_without_it() {
        let stuck: u64 = seeds(Deployer::Keep, Lifecycle::NamespaceDeletion)
            .chain(seeds(Deployer::Helm3, Lifecycle::NamespaceDeletion))
            .chain(seeds(Deployer::Helm4, Lifecycle::NamespaceDeletion))
            .filter(|seed| {
                Scenario::generate(*seed, &mut Rng::new(*seed)).cp_needs_template_on_delete
            })
            .map(|seed| run(seed).0.stuck)
            .sum();
        assert!(stuck > 0);
    }
}
