//! What every actor of a run shares: the clock, the seeded rng, the simulated API server (reads,
//! writes, and DELETE and Metal3Machine CREATE through the admission chain: the compiled policy,
//! or "allow everything" for the column without it), the metrics, the trace, and what an actor
//! publishes for others to read (a deploy tool's release status, clusterctl's result). The
//! actors themselves ([`Actor`]) own their state, one file each.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde_json::Value;

use super::rng::Rng;
use super::scenario::{Metrics, Scenario};
use crate::apiserver::Api;
use crate::apiserver::objects::*;
use crate::apiserver::render::admission_request;
use crate::host::lock;

/// The answer of the admission chain, read from the AdmissionResponse only.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub allowed: bool,
    /// The status code and message of a refusal.
    pub code: u16,
    pub message: String,
    pub patch: Option<json_patch::Patch>,
}

impl Verdict {
    /// No policy installed: every request is allowed unchanged.
    pub const ALLOW: Verdict = Verdict {
        allowed: true,
        code: 200,
        message: String::new(),
        patch: None,
    };

    /// The refusal as the trace shows it.
    pub fn refusal(&self) -> String {
        format!("({}) {}", self.code, self.message)
    }
}

/// The admission chain for guarded requests.
pub type Admit<'a> = &'a mut dyn FnMut(&Value) -> Result<Verdict>;

/// A controller, deploy tool or lifecycle step: woken at random times, it acts on the World and
/// says when to wake it again (`None`: never).
pub trait Actor {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>>;
}

/// A controller that reconciles everything it watches at each wake-up (`true`: it changed
/// something), woken again soon after a change, else at its resync.
pub struct Controller(pub fn(&mut World) -> Result<bool>);

impl Actor for Controller {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let did = (self.0)(w)?;
        Ok(Some(w.requeue(did)))
    }
}

/// A controller whose work queue holds the objects of one kind, taken in a random order, and
/// retries its refused deletes with `backoff`; with `skip_paused` it does nothing while the
/// Cluster is paused.
pub struct WorkQueue {
    pub kind: Kind,
    pub skip_paused: bool,
    pub reconcile: fn(&mut World, &mut Backoff, &str) -> Result<bool>,
    pub backoff: Backoff,
}

impl Actor for WorkQueue {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let mut did = false;
        if !(self.skip_paused && w.cluster_state().0) {
            for name in w.shuffled(self.kind) {
                did |= (self.reconcile)(w, &mut self.backoff, &name)?;
            }
        }
        Ok(Some(w.requeue(did)))
    }
}

/// What actors publish for others: a release's status and what it declares, a move's result.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// The deploy tool is done with the upgrade (applied, and its deletes made or given up).
    pub upgrade_done: bool,
    /// `clusterctl move`: `Some(true)` moved, `Some(false)` failed half done.
    pub moved: Option<bool>,
    /// The templates the deploy tool still declares (in its release or inventory), which
    /// template-cleanup leaves to it.
    pub declared: BTreeSet<Ref>,
}

pub struct World<'a> {
    pub seed: u64,
    pub rng: Rng,
    pub now: u64,
    pub api: Arc<Mutex<Api>>,
    admit: Admit<'a>,
    pub sc: Scenario,
    pub m: Metrics,
    trace: Option<Vec<String>>,
    names: u64,
    missing_seen: BTreeSet<(String, Ref)>,
    pub status: Status,
}

impl<'a> World<'a> {
    pub fn new(seed: u64, api: Arc<Mutex<Api>>, admit: Admit<'a>, trace: bool) -> World<'a> {
        let mut rng = Rng::new(seed);
        let sc = Scenario::generate(seed, &mut rng);
        *lock(&api) = Api::new(sc.installed);
        World {
            seed,
            rng,
            now: 0,
            api,
            admit,
            sc,
            m: Metrics::default(),
            trace: trace.then(Vec::new),
            names: 0,
            missing_seen: BTreeSet::new(),
            status: Status::default(),
        }
    }

    pub fn take_trace(&mut self) -> Vec<String> {
        self.trace.take().unwrap_or_default()
    }

    pub fn ev(&mut self, text: impl FnOnce() -> String) {
        let now = self.now;
        if let Some(t) = self.trace.as_mut() {
            t.push(format!("{:>6} s  {}", now, text()));
        }
    }

    pub fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&lock(&self.api).stores[0])
    }

    pub fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        f(&mut lock(&self.api).stores[0])
    }

    pub fn spec(&self, kind: Kind, name: &str) -> Option<Spec> {
        self.read(|s| s.get(kind, name).map(|o| o.spec.clone()))
    }

    /// The live object of `kind` named `name` (not being deleted).
    pub fn live(&self, kind: Kind, name: &str) -> Option<Obj> {
        self.read(|s| s.get(kind, name).filter(|o| o.deleting.is_none()).cloned())
    }

    /// The names of `kind` in a random order, as controllers' work queues take them.
    pub fn shuffled(&mut self, kind: Kind) -> Vec<String> {
        let mut names = self.read(|s| s.names(kind));
        self.rng.shuffle(&mut names);
        names
    }

    /// When a controller's work queue wakes it again: soon after a reconcile that changed
    /// something, else at its resync.
    pub fn requeue(&mut self, did: bool) -> u64 {
        let (lo, hi) = if did { (1, 8) } else { (15, 60) };
        self.rng.range(lo, hi)
    }

    pub fn name(&mut self, prefix: &str) -> String {
        self.names += 1;
        let hash = self.rng.next_u64() & 0xffff_ffff;
        format!("{prefix}-{hash:08x}")
    }

    pub fn topology(&self) -> bool {
        self.sc.deployer == super::scenario::Deployer::Topology
    }

    /// The lifecycle's first wake-up, in the trace.
    pub fn lifecycle_starts(&mut self) {
        if self.now == self.sc.lifecycle_at {
            let label = self.sc.lifecycle.label();
            self.ev(|| format!("lifecycle: {label}"));
        }
    }

    pub fn create(&mut self, obj: Obj) -> Ref {
        let r = obj.to_ref();
        let now = self.now;
        self.write(|s| s.create(obj, now));
        r
    }

    /// The API server's part of a delete, for what no admission chain guards.
    pub fn mark_deleted(&self, kind: Kind, name: &str) {
        let now = self.now;
        self.write(|s| s.delete(kind, name, now))
    }

    /// The control plane's infrastructure template, unless the control plane is gone (or, with
    /// `live`, being deleted).
    pub fn cp_infra(&self, live: bool) -> Option<Ref> {
        self.read(|s| {
            let cp = s
                .get(self.sc.cp_kind, CP)
                .filter(|o| !live || o.deleting.is_none())?;
            cp.spec.infra().cloned()
        })
    }

    /// Points the control plane at `new` (what a deploy tool or the topology controller writes).
    pub fn point_control_plane(&self, new: &Ref) {
        self.write(|s| {
            if let Some(Spec::ControlPlane(cp)) = s.spec_mut(self.sc.cp_kind, CP) {
                cp.infra = new.clone();
            }
        });
    }

    /// Points the MachineDeployment `md` at new templates (what a deploy tool or the topology
    /// controller writes); a MachineDeployment that is gone is left alone.
    pub fn point_machine_deployment(&self, md: &str, new_infra: Ref, new_boot: Ref) {
        self.write(|s| {
            if let Some(Spec::MachineDeployment(spec)) = s.spec_mut(Kind::MachineDeployment, md) {
                (spec.infra, spec.bootstrap) = (new_infra, new_boot);
            }
        });
    }

    /// A guarded DELETE or CREATE of `obj` by `user`, with `obj` at a version the installed
    /// providers serve, sent to the admission chain, which reads `store` (1: the target of a
    /// move). The verdict, and the object as sent.
    pub fn admit(
        &mut self,
        operation: &str,
        obj: &Obj,
        user: &str,
        store: usize,
    ) -> Result<(Verdict, Value)> {
        let v2 = self.sc.installed.serves(obj.kind, "v1beta2") && self.rng.chance(60);
        let version = if v2 { "v1beta2" } else { "v1beta1" };
        self.names += 1;
        let uid = format!("{:08x}-{:04x}", self.seed, self.names);
        let (request, value) =
            admission_request(operation, obj, version, &self.sc.installed, &uid, user);
        self.m.admissions += 1;
        lock(&self.api).active = store;
        let verdict = (self.admit)(&request);
        lock(&self.api).active = 0;
        Ok((verdict?, value))
    }

    /// DELETE of an object; templates go through the admission chain. False when it refused.
    pub fn delete(&mut self, kind: Kind, name: &str, user: &str) -> Result<bool> {
        Ok(self.try_delete(kind, name, user)?.is_none())
    }

    /// DELETE of an object, templates through the admission chain: its refusal, if refused.
    pub fn try_delete(&mut self, kind: Kind, name: &str, user: &str) -> Result<Option<Verdict>> {
        // gone or being deleted: nothing to do
        let Some(obj) = self.live(kind, name) else {
            return Ok(None);
        };
        if kind.is_template() {
            let (verdict, _) = self.admit("DELETE", &obj, user, 0)?;
            if !verdict.allowed {
                self.m.refused += 1;
                // formatted only when a trace is kept: refusals are frequent
                let (kind, v) = (kind.name(), &verdict);
                self.ev(|| format!("{user}: DELETE {kind} {name} REFUSED: {}", v.refusal()));
                return Ok(Some(verdict));
            }
        }
        self.mark_deleted(kind, name);
        self.ev(|| format!("{user}: DELETE {} {name} accepted", kind.name()));
        Ok(None)
    }

    /// A template a deploy tool or controller will not try to delete again.
    pub fn leak(&mut self, r: &Ref, why: &str) {
        self.m.leaked += 1;
        self.ev(|| format!("LEAKED {r}: {why}"));
    }

    /// A controller reads a template it needs; a missing one is a reconcile error.
    pub fn fetch(&mut self, reader: &str, r: &Ref) -> bool {
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

    /// (paused, being deleted). Controllers do nothing for a Cluster that is gone: they fail to
    /// read it.
    pub fn cluster_state(&self) -> (bool, bool) {
        self.read(|s| match s.get(Kind::Cluster, CLUSTER) {
            Some(Obj {
                spec: Spec::Cluster { paused },
                deleting,
                ..
            }) => (*paused, deleting.is_some()),
            _ => (true, true),
        })
    }

    pub fn machines_of(&self, owner: Kind, name: &str) -> Vec<Obj> {
        self.read(|s| s.owned(Kind::Metal3Machine, owner, name).cloned().collect())
    }

    pub fn ready(&self, m: &Obj) -> bool {
        m.deleting.is_none()
            && matches!(m.spec, Spec::Metal3Machine { ready_at, .. } if ready_at <= self.now)
    }

    /// Writes the MachineSet `ms`'s replicas: its spec's (a MachineDeployment scaling it) or,
    /// with `status`, the count the MachineSet controller reports.
    pub fn set_replicas(&self, ms: &str, n: u32, status: bool) {
        self.write(|s| match s.spec_mut(Kind::MachineSet, ms) {
            Some(Spec::MachineSet(spec)) if status => spec.status_replicas = Some(n),
            Some(Spec::MachineSet(spec)) => spec.replicas = n,
            _ => {}
        });
    }
}

/// Retries of refused deletes with a doubling delay, per object; each actor that retries owns
/// one.
#[derive(Debug, Default)]
pub struct Backoff(BTreeMap<(Kind, String), (u64, u64, u64)>);

impl Backoff {
    /// Whether `(kind, name)` may be tried now (it is not waiting for a retry).
    pub fn due(&self, now: u64, kind: Kind, name: &str) -> bool {
        let retry = self.0.get(&(kind, name.to_string()));
        retry.is_none_or(|(next, ..)| *next <= now)
    }

    /// Records a retry of a refused delete, the delay doubling from `first` up to `max`; returns
    /// when the first attempt was.
    pub fn retry_later(
        &mut self,
        w: &mut World,
        (kind, name): (Kind, &str),
        first: u64,
        max: u64,
    ) -> u64 {
        let key = (kind, name.to_string());
        let (delay, start) = match self.0.get(&key) {
            Some((_, d, s)) => ((d * 2).min(max), *s),
            None => (first, w.now),
        };
        self.0.insert(key, (w.now + delay, delay, start));
        w.m.retries += 1;
        start
    }
}
