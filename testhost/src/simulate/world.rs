//! One seeded run: a management cluster, the deployer, the Cluster API, control-plane, CAPM3,
//! topology, garbage-collector, namespace and clusterctl controllers, and the clean-up job, as
//! tasks woken at random times. Every guarded request goes through [`Admit`]: the compiled policy,
//! or "allow everything" for the column without it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use super::api::{
    render, Api, Kind, Obj, Ref, Release, Spec, Store, Worker, CLEANUP_LABEL,
    CLONED_FROM_GROUPKIND, CLONED_FROM_NAME, DELETE_FOR_MOVE, MS_FINALIZER, MS_TOPOLOGY_FINALIZER,
    NAMESPACE,
};
use super::rng::Rng;

const CLUSTER: &str = "edge-a";
const CLUSTER_FINALIZER: &str = "cluster.cluster.x-k8s.io";
const MD_FINALIZER: &str = "cluster.x-k8s.io/machinedeployment";
const MD_TOPOLOGY_FINALIZER: &str = "machinedeployment.topology.cluster.x-k8s.io";
const CP_FINALIZER: &str = "controlplane.cluster.x-k8s.io";
const M3M_FINALIZER: &str = "metal3machine.infrastructure.cluster.x-k8s.io";
const TOPOLOGY_OWNED: &str = "topology.cluster.x-k8s.io/owned";
const CLASS: &str = "metal3-kubeadm";
const HOUR: u64 = 3600;
/// A flow that has not finished this long after it started is stuck.
pub const FLOW_BOUND: u64 = 6 * HOUR;
/// Everything settles before this (the clean-up job runs hourly until then).
pub const HORIZON: u64 = 12 * HOUR;
/// clusterctl move retries a refused delete for about this long, then gives up.
const MOVE_RETRY_BUDGET: u64 = 159;
/// The clean-up job's MIN_AGE_MINUTES.
const CLEANUP_MIN_AGE: u64 = HOUR;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployer {
    /// Helm 3: deletes retired templates once; a refused delete is forgotten.
    Helm3,
    /// Helm >= 4.2: a refused delete fails the release; the pipeline runs the upgrade again.
    Helm4,
    /// Flux helm-controller 1.6: a failed upgrade is retried at the HelmRelease's interval.
    Flux,
    /// Argo CD with pruning: a refused prune fails the sync; retried 5 times with backoff.
    Argo,
    /// The README's pattern: `helm.sh/resource-policy: keep`, the clean-up job collects.
    Keep,
    /// A ClusterClass: Helm 3 ships the class and its templates; the topology controller
    /// rotates the cluster's own copies and deletes them.
    Topology,
}

impl Deployer {
    pub const ALL: [Deployer; 6] = [
        Deployer::Helm3,
        Deployer::Helm4,
        Deployer::Flux,
        Deployer::Argo,
        Deployer::Keep,
        Deployer::Topology,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Deployer::Helm3 => "Helm 3",
            Deployer::Helm4 => "Helm 4",
            Deployer::Flux => "Flux helm-controller",
            Deployer::Argo => "Argo CD prune",
            Deployer::Keep => "keep + clean-up job",
            Deployer::Topology => "ClusterClass topology",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// The upgrade alone.
    None,
    ClusterDeletion,
    NamespaceDeletion,
    Move,
}

impl Lifecycle {
    pub const ALL: [Lifecycle; 4] = [
        Lifecycle::None,
        Lifecycle::ClusterDeletion,
        Lifecycle::NamespaceDeletion,
        Lifecycle::Move,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Lifecycle::None => "upgrade only",
            Lifecycle::ClusterDeletion => "then Cluster deletion",
            Lifecycle::NamespaceDeletion => "then namespace deletion",
            Lifecycle::Move => "then clusterctl move",
        }
    }
}

/// What a seed chose.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub deployer: Deployer,
    pub lifecycle: Lifecycle,
    pub release: Release,
    pub cp_kind: Kind,
    pub cp_replicas: u32,
    pub cp_surge: u32,
    /// replicas, maxSurge, maxUnavailable of each MachineDeployment
    pub mds: Vec<(u32, u32, u32)>,
    pub node_reuse: bool,
    pub cleaning: Option<String>,
    pub upgrade_workers: bool,
    pub upgrade_bootstrap: bool,
    pub upgrade_cp: bool,
    pub delete_old_ms: bool,
    pub remove_md: bool,
    pub upgrade_at: u64,
    pub lifecycle_at: u64,
    pub cleanup_offset: u64,
}

impl Scenario {
    pub fn generate(seed: u64, rng: &mut Rng) -> Scenario {
        let combos = (Deployer::ALL.len() * Lifecycle::ALL.len()) as u64;
        let combo = (seed % combos) as usize;
        let deployer = Deployer::ALL[combo % Deployer::ALL.len()];
        let lifecycle = Lifecycle::ALL[combo / Deployer::ALL.len()];
        let capi_v1beta2 = rng.chance(70);
        let metal3_v1beta2 = capi_v1beta2 && rng.chance(50);
        let cp_kind = if rng.chance(50) {
            Kind::KubeadmControlPlane
        } else {
            Kind::Rke2ControlPlane
        };
        let rke2 = if cp_kind == Kind::Rke2ControlPlane || rng.chance(30) {
            Some(capi_v1beta2 && rng.chance(70))
        } else {
            None
        };
        let md_count = rng.range(1, 2);
        let mds = (0..md_count)
            .map(|_| {
                let replicas = rng.range(1, 3) as u32;
                if rng.chance(50) {
                    (replicas, 1, 0)
                } else {
                    (replicas, 0, 1)
                }
            })
            .collect();
        let upgrade_workers = rng.chance(80);
        let upgrade_cp = !upgrade_workers || rng.chance(50);
        let upgrade_at = rng.range(60, 900);
        Scenario {
            deployer,
            lifecycle,
            release: Release {
                capi_v1beta2,
                metal3_v1beta2,
                rke2,
            },
            cp_kind,
            cp_replicas: if rng.chance(50) { 1 } else { 3 },
            cp_surge: if rng.chance(50) { 1 } else { 0 },
            mds,
            node_reuse: rng.chance(80),
            cleaning: if rng.chance(70) {
                Some("disabled".to_string())
            } else {
                None
            },
            upgrade_workers,
            upgrade_bootstrap: rng.chance(50),
            upgrade_cp,
            delete_old_ms: deployer == Deployer::Topology || rng.chance(50),
            remove_md: deployer == Deployer::Topology && rng.chance(40),
            upgrade_at,
            lifecycle_at: upgrade_at + rng.range(0, 2 * HOUR),
            cleanup_offset: rng.range(0, HOUR - 1),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} {}; {}; {} x{} (maxSurge {}); MDs {:?} (replicas, maxSurge, maxUnavailable); nodeReuse {}; upgrade workers {} bootstrap {} control plane {}; old MachineSets deleted {}; MD removed from topology {}; upgrade at {} s, lifecycle at {} s",
            self.deployer.label(),
            self.lifecycle.label(),
            self.release.describe(),
            self.cp_kind.name(),
            self.cp_replicas,
            self.cp_surge,
            self.mds,
            self.node_reuse,
            self.upgrade_workers,
            self.upgrade_bootstrap,
            self.upgrade_cp,
            self.delete_old_ms,
            self.remove_md,
            self.upgrade_at,
            self.lifecycle_at,
        )
    }
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    pub decisions: u64,
    pub lost: u64,
    pub missing: u64,
    /// Reconcile errors on templates released because their Cluster is being deleted, in
    /// controllers that have not been told to delete yet (nothing scales up any more, and CAPM3
    /// makes no node-reuse decisions while the Cluster is being deleted).
    pub missing_cluster_deleting: u64,
    pub stuck: u64,
    pub leaked: u64,
    pub refused: u64,
    pub retries: u64,
    pub refused_creates: u64,
    pub admissions: u64,
    pub mutations: u64,
    pub host_calls: u64,
}

impl Metrics {
    pub fn add(&mut self, o: &Metrics) {
        self.decisions += o.decisions;
        self.lost += o.lost;
        self.missing += o.missing;
        self.stuck += o.stuck;
        self.leaked += o.leaked;
        self.refused += o.refused;
        self.retries += o.retries;
        self.refused_creates += o.refused_creates;
        self.missing_cluster_deleting += o.missing_cluster_deleting;
        self.admissions += o.admissions;
        self.mutations += o.mutations;
        self.host_calls += o.host_calls;
    }

    /// Must all be zero with the policy.
    pub fn failed(&self) -> bool {
        self.lost + self.missing + self.stuck + self.leaked + self.refused_creates > 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Task {
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
enum DeployPhase {
    Apply,
    Delete { attempt: u32 },
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum MovePhase {
    Pause,
    Create(Vec<(Kind, String)>),
    Delete(Vec<(Kind, String)>),
    Done,
}

/// Outcome of a DELETE.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Deleted {
    Gone,
    Deleting,
    Refused(String),
    NotFound,
}

pub struct Sim<'a> {
    seed: u64,
    rng: Rng,
    now: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Task)>>,
    api: Arc<Mutex<Api>>,
    admit: &'a mut dyn Admit,
    sc: Scenario,
    pub m: Metrics,
    trace: Option<Vec<String>>,
    names: u64,
    deploy: DeployPhase,
    /// Templates the deployer retired (to be deleted by it or collected by the clean-up job).
    retired: BTreeSet<Ref>,
    /// Topology: copies to delete once the control plane moved on.
    topo_retired: BTreeSet<Ref>,
    topo_md_removed: bool,
    lifecycle_started: bool,
    ns_kinds: Vec<Kind>,
    move_phase: MovePhase,
    /// (next attempt, retry delay, first attempt) per object being retried
    backoff: BTreeMap<(Task, Kind, String), (u64, u64, u64)>,
    missing_seen: BTreeSet<(String, Ref)>,
    flow_done: Option<u64>,
    move_failed: bool,
}

fn lock(api: &Arc<Mutex<Api>>) -> std::sync::MutexGuard<'_, Api> {
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
            topo_retired: BTreeSet::new(),
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

    fn ev(&mut self, text: impl FnOnce() -> String) {
        let now = self.now;
        if let Some(t) = self.trace.as_mut() {
            t.push(format!("{:>6} s  {}", now, text()));
        }
    }

    fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        let api = lock(&self.api);
        f(&api.stores[0])
    }

    fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        let mut api = lock(&self.api);
        f(&mut api.stores[0])
    }

    fn schedule(&mut self, task: Task, delay: u64) {
        let tie = self.rng.next_u64();
        self.queue.push(Reverse((self.now + delay, tie, task)));
    }

    fn name(&mut self, prefix: &str) -> String {
        self.names += 1;
        let hash = self.rng.next_u64() & 0xffff_ffff;
        format!("{prefix}-{hash:08x}")
    }

    // ---------------------------------------------------------------- initial state

    fn template(&mut self, kind: Kind, prefix: &str, deployer_managed: bool) -> Obj {
        let name = self.name(prefix);
        let mut t = Obj::new(
            kind,
            name,
            Spec::Template {
                node_reuse: kind == Kind::Metal3MachineTemplate && self.sc.node_reuse,
                cleaning: if kind == Kind::Metal3MachineTemplate {
                    self.sc.cleaning.clone()
                } else {
                    None
                },
            },
        );
        if deployer_managed {
            t.labels.insert(CLEANUP_LABEL.into(), "true".into());
            t.labels
                .insert("app.kubernetes.io/managed-by".into(), "Helm".into());
            if self.sc.deployer == Deployer::Keep {
                t.annotations
                    .insert("helm.sh/resource-policy".into(), "keep".into());
            }
        }
        t
    }

    fn bootstrap_kind(&self) -> Kind {
        if self.sc.cp_kind == Kind::Rke2ControlPlane {
            Kind::Rke2ConfigTemplate
        } else {
            Kind::KubeadmConfigTemplate
        }
    }

    fn topology(&self) -> bool {
        self.sc.deployer == Deployer::Topology
    }

    /// A per-cluster copy of a ClusterClass template, owned by the topology.
    fn clone_of(&mut self, source: &Ref, prefix: &str) -> Option<Obj> {
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

    fn create(&mut self, obj: Obj) -> Ref {
        let r = Ref::new(obj.kind, obj.name.clone());
        let now = self.now;
        self.write(|s| s.create(obj, now));
        r
    }

    fn build(&mut self) -> Result<()> {
        let mut cluster = Obj::new(Kind::Cluster, CLUSTER, Spec::Cluster { paused: false });
        cluster.finalizers.insert(CLUSTER_FINALIZER.into());
        self.create(cluster);
        let bk = self.bootstrap_kind();
        let cp_infra;
        let mut workers = Vec::new();
        if self.topology() {
            let cc_cp = self.template(Kind::Metal3MachineTemplate, "cc-cp", true);
            let cc_cp = self.create(cc_cp);
            let mut class_workers = Vec::new();
            for i in 0..self.sc.mds.len() {
                let infra = self.template(Kind::Metal3MachineTemplate, "cc-workers", true);
                let infra = self.create(infra);
                let boot = self.template(bk, "cc-bootstrap", true);
                let boot = self.create(boot);
                class_workers.push(Worker {
                    class: format!("pool{i}"),
                    infra,
                    bootstrap: boot,
                });
            }
            let cc = Obj::new(
                Kind::ClusterClass,
                CLASS,
                Spec::ClusterClass {
                    cp_infra: cc_cp.clone(),
                    workers: class_workers.clone(),
                },
            );
            self.create(cc);
            let c = self
                .clone_of(&cc_cp, "edge-a-cp")
                .ok_or_else(|| anyhow!("class template missing"))?;
            cp_infra = self.create(c);
            for w in &class_workers {
                let i = self
                    .clone_of(&w.infra, &format!("edge-a-{}-infra", w.class))
                    .ok_or_else(|| anyhow!("class template missing"))?;
                let b = self
                    .clone_of(&w.bootstrap, &format!("edge-a-{}-bootstrap", w.class))
                    .ok_or_else(|| anyhow!("class template missing"))?;
                workers.push((self.create(i), self.create(b)));
            }
        } else {
            let mut t = self.template(Kind::Metal3MachineTemplate, "edge-a-cp", true);
            t.owner_cluster = Some(CLUSTER.into());
            cp_infra = self.create(t);
            for i in 0..self.sc.mds.len() {
                let mut a =
                    self.template(Kind::Metal3MachineTemplate, &format!("edge-a-md{i}"), true);
                a.owner_cluster = Some(CLUSTER.into());
                let mut b = self.template(bk, &format!("edge-a-md{i}-bootstrap"), true);
                b.owner_cluster = Some(CLUSTER.into());
                workers.push((self.create(a), self.create(b)));
            }
        }
        let mut cp = Obj::new(
            self.sc.cp_kind,
            "edge-a-cp",
            Spec::ControlPlane {
                infra: cp_infra.clone(),
                replicas: self.sc.cp_replicas,
                max_surge: self.sc.cp_surge,
                legacy_ref: self.sc.cp_kind == Kind::Rke2ControlPlane && self.rng.chance(30),
            },
        );
        cp.finalizers.insert(CP_FINALIZER.into());
        cp.owner_cluster = Some(CLUSTER.into());
        self.create(cp);
        for _ in 0..self.sc.cp_replicas {
            self.create_machine((self.sc.cp_kind, "edge-a-cp".into()), &cp_infra, true)?;
        }
        for (i, (infra, boot)) in workers.into_iter().enumerate() {
            let (replicas, surge, unavailable) = self.sc.mds[i];
            let md_name = format!("edge-a-md{i}");
            let mut md = Obj::new(
                Kind::MachineDeployment,
                md_name.clone(),
                Spec::MachineDeployment {
                    infra: infra.clone(),
                    bootstrap: boot.clone(),
                    replicas,
                    max_surge: surge,
                    max_unavailable: unavailable,
                },
            );
            md.finalizers.insert(MD_FINALIZER.into());
            if self.topology() {
                md.finalizers.insert(MD_TOPOLOGY_FINALIZER.into());
            }
            md.owner_cluster = Some(CLUSTER.into());
            if self.topology() {
                md.labels.insert(
                    "topology.cluster.x-k8s.io/deployment-name".into(),
                    format!("pool{i}"),
                );
            }
            self.create(md);
            let ms = self.new_machineset(&md_name, &infra, &boot, replicas);
            for _ in 0..replicas {
                self.create_machine((Kind::MachineSet, ms.clone()), &infra, true)?;
            }
            self.write(|s| {
                if let Some(Obj {
                    spec:
                        Spec::MachineSet {
                            status_replicas, ..
                        },
                    ..
                }) = s.get_mut(Kind::MachineSet, &ms)
                {
                    *status_replicas = Some(replicas);
                }
            });
        }
        Ok(())
    }

    fn new_machineset(&mut self, md: &str, infra: &Ref, boot: &Ref, replicas: u32) -> String {
        let name = self.name(md);
        let mut ms = Obj::new(
            Kind::MachineSet,
            name.clone(),
            Spec::MachineSet {
                infra: infra.clone(),
                bootstrap: boot.clone(),
                replicas,
                status_replicas: None,
            },
        );
        ms.finalizers.insert(MS_FINALIZER.into());
        if self.topology() {
            ms.finalizers.insert(MS_TOPOLOGY_FINALIZER.into());
        }
        ms.owner_cluster = Some(CLUSTER.into());
        ms.controller = Some((Kind::MachineDeployment, md.to_string()));
        ms.labels
            .insert("cluster.x-k8s.io/deployment-name".into(), md.to_string());
        self.create(ms);
        name
    }

    // ---------------------------------------------------------------- admission

    fn request(
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

    fn served_version(&mut self, kind: Kind) -> &'static str {
        let release = self.sc.release;
        if release.serves(kind, "v1beta2") && self.rng.chance(60) {
            "v1beta2"
        } else {
            "v1beta1"
        }
    }

    /// DELETE of an object; templates go through the admission chain.
    fn delete(&mut self, kind: Kind, name: &str, user: &str) -> Result<Deleted> {
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
    fn create_machine(
        &mut self,
        owner: (Kind, String),
        template: &Ref,
        ready: bool,
    ) -> Result<bool> {
        self.create_machine_in(0, owner, template, ready, None)
    }

    fn create_machine_in(
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

    /// A controller reads a template it needs; a missing one is a reconcile error.
    fn fetch(&mut self, reader: &str, r: &Ref) -> bool {
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
    fn due(&mut self, task: Task, kind: Kind, name: &str) -> bool {
        match self.backoff.get(&(task, kind, name.to_string())) {
            Some((next, _, _)) => *next <= self.now,
            None => true,
        }
    }

    fn refused_retry_later(
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
    fn cluster_state(&self) -> (bool, bool) {
        self.read(|s| match s.get(Kind::Cluster, CLUSTER) {
            Some(Obj {
                spec: Spec::Cluster { paused },
                deleting,
                ..
            }) => (*paused, deleting.is_some()),
            _ => (true, true),
        })
    }

    // ---------------------------------------------------------------- run

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

    fn busy(&mut self, did: bool) -> Option<u64> {
        Some(if did {
            self.rng.range(1, 8)
        } else {
            self.rng.range(15, 60)
        })
    }

    fn step(&mut self, task: Task) -> Result<Option<u64>> {
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

    // ---------------------------------------------------------------- deployer

    fn deployer(&mut self) -> Result<Option<u64>> {
        match self.deploy.clone() {
            DeployPhase::Apply => {
                if self.read(|s| s.namespace_terminating) {
                    self.deploy = DeployPhase::Done;
                    return Ok(None);
                }
                self.apply_upgrade();
                self.deploy = DeployPhase::Delete { attempt: 0 };
                Ok(Some(self.rng.range(1, 5)))
            }
            DeployPhase::Delete { attempt } => {
                let user = match self.sc.deployer {
                    Deployer::Helm3 | Deployer::Helm4 | Deployer::Topology => "helm",
                    Deployer::Flux => "system:serviceaccount:flux-system:helm-controller",
                    Deployer::Argo => "system:serviceaccount:argocd:argocd-application-controller",
                    Deployer::Keep => {
                        self.deploy = DeployPhase::Done;
                        return Ok(None);
                    }
                };
                let mut refused = false;
                let retired: Vec<Ref> = self.retired.iter().cloned().collect();
                for r in retired {
                    if matches!(self.delete(r.kind, &r.name, user)?, Deleted::Refused(_)) {
                        refused = true;
                    }
                }
                if !refused {
                    self.deploy = DeployPhase::Done;
                    return Ok(None);
                }
                let next = match self.sc.deployer {
                    // Helm 3 (and the class chart) logs the refusal and forgets the template
                    Deployer::Helm3 | Deployer::Topology => None,
                    Deployer::Helm4 => Some(self.rng.range(300, 900)),
                    Deployer::Flux => Some(600),
                    Deployer::Argo if attempt < 5 => Some(5 << attempt),
                    _ => None,
                };
                match next {
                    Some(delay) => {
                        self.m.retries += 1;
                        self.deploy = DeployPhase::Delete {
                            attempt: attempt + 1,
                        };
                        Ok(Some(delay))
                    }
                    None => {
                        self.deploy = DeployPhase::Done;
                        Ok(None)
                    }
                }
            }
            DeployPhase::Done => Ok(None),
        }
    }

    /// Renders the new templates (content-hash names), points the MachineDeployments and the
    /// control plane (or the ClusterClass) at them, and retires the old ones.
    fn apply_upgrade(&mut self) {
        let bk = self.bootstrap_kind();
        if self.topology() {
            let Some(Spec::ClusterClass {
                mut cp_infra,
                mut workers,
            }) = self.read(|s| s.get(Kind::ClusterClass, CLASS).map(|o| o.spec.clone()))
            else {
                return;
            };
            if self.sc.upgrade_cp {
                let t = self.template(Kind::Metal3MachineTemplate, "cc-cp", true);
                self.retired.insert(cp_infra.clone());
                cp_infra = self.create(t);
            }
            for w in workers.iter_mut() {
                if self.sc.upgrade_workers {
                    let t = self.template(Kind::Metal3MachineTemplate, "cc-workers", true);
                    self.retired.insert(w.infra.clone());
                    w.infra = self.create(t);
                }
                if self.sc.upgrade_bootstrap {
                    let t = self.template(bk, "cc-bootstrap", true);
                    self.retired.insert(w.bootstrap.clone());
                    w.bootstrap = self.create(t);
                }
            }
            self.write(|s| {
                if let Some(o) = s.get_mut(Kind::ClusterClass, CLASS) {
                    o.spec = Spec::ClusterClass { cp_infra, workers };
                }
            });
            self.ev(|| "helm: ClusterClass points at new templates".to_string());
            return;
        }
        if self.sc.upgrade_cp {
            let old = self.read(|s| match s.get(self.sc.cp_kind, "edge-a-cp") {
                Some(Obj {
                    spec: Spec::ControlPlane { infra, .. },
                    ..
                }) => Some(infra.clone()),
                _ => None,
            });
            if let Some(old) = old {
                let t = self.template(Kind::Metal3MachineTemplate, "edge-a-cp", true);
                let new = self.create(t);
                self.write(|s| {
                    if let Some(Obj {
                        spec: Spec::ControlPlane { infra, .. },
                        ..
                    }) = s.get_mut(self.sc.cp_kind, "edge-a-cp")
                    {
                        *infra = new.clone();
                    }
                });
                self.retired.insert(old);
            }
        }
        for md in self.read(|s| s.names(Kind::MachineDeployment)) {
            let Some(Spec::MachineDeployment {
                infra, bootstrap, ..
            }) = self.read(|s| s.get(Kind::MachineDeployment, &md).map(|o| o.spec.clone()))
            else {
                continue;
            };
            let new_infra = if self.sc.upgrade_workers {
                let t = self.template(Kind::Metal3MachineTemplate, &md, true);
                self.retired.insert(infra.clone());
                self.create(t)
            } else {
                infra
            };
            let new_boot =
                if self.sc.upgrade_bootstrap || !self.sc.upgrade_workers && !self.sc.upgrade_cp {
                    let t = self.template(bk, &format!("{md}-bootstrap"), true);
                    self.retired.insert(bootstrap.clone());
                    self.create(t)
                } else {
                    bootstrap
                };
            self.write(|s| {
                if let Some(Obj {
                    spec:
                        Spec::MachineDeployment {
                            infra, bootstrap, ..
                        },
                    ..
                }) = s.get_mut(Kind::MachineDeployment, &md)
                {
                    *infra = new_infra;
                    *bootstrap = new_boot;
                }
            });
        }
        let label = self.sc.deployer.label();
        let retired: Vec<String> = self.retired.iter().map(Ref::to_string).collect();
        self.ev(|| format!("{label}: upgrade applied, retired {retired:?}"));
    }

    // ---------------------------------------------------------------- topology

    fn topology_step(&mut self) -> Result<bool> {
        let (paused, deleting) = self.cluster_state();
        if paused || deleting || !self.read(|s| s.get(Kind::Cluster, CLUSTER).is_some()) {
            return Ok(false);
        }
        let Some(Spec::ClusterClass { cp_infra, workers }) =
            self.read(|s| s.get(Kind::ClusterClass, CLASS).map(|o| o.spec.clone()))
        else {
            return Ok(false);
        };
        // the topology reads every template the class names
        let mut ok = self.fetch("topology", &cp_infra);
        for w in &workers {
            ok &= self.fetch("topology", &w.infra);
            ok &= self.fetch("topology", &w.bootstrap);
        }
        if !ok {
            return Ok(false);
        }
        let cloned_from = |s: &Store, r: &Ref| {
            s.get(r.kind, &r.name)
                .and_then(|o| o.annotations.get(CLONED_FROM_NAME).cloned())
        };
        // control plane
        let cp = self.read(|s| match s.get(self.sc.cp_kind, "edge-a-cp") {
            Some(Obj {
                spec: Spec::ControlPlane { infra, .. },
                deleting: None,
                ..
            }) => Some(infra.clone()),
            _ => None,
        });
        if let Some(current) = cp {
            let from = self.read(|s| cloned_from(s, &current));
            if from.as_deref() != Some(cp_infra.name.as_str()) {
                if let Some(c) = self.clone_of(&cp_infra, "edge-a-cp") {
                    let new = self.create(c);
                    self.write(|s| {
                        if let Some(Obj {
                            spec: Spec::ControlPlane { infra, .. },
                            ..
                        }) = s.get_mut(self.sc.cp_kind, "edge-a-cp")
                        {
                            *infra = new.clone();
                        }
                    });
                    self.ev(|| format!("topology: control plane now uses {new}"));
                    self.topo_retired.insert(current);
                    return Ok(true);
                }
            }
        }
        // machine deployments
        for (i, w) in workers.iter().enumerate() {
            let md = format!("edge-a-md{i}");
            let Some((infra, bootstrap, deleting)) =
                self.read(|s| match s.get(Kind::MachineDeployment, &md) {
                    Some(Obj {
                        spec:
                            Spec::MachineDeployment {
                                infra, bootstrap, ..
                            },
                        deleting,
                        ..
                    }) => Some((infra.clone(), bootstrap.clone(), deleting.is_some())),
                    _ => None,
                })
            else {
                continue;
            };
            if deleting {
                continue;
            }
            if self.sc.remove_md
                && i == 0
                && self.deploy == DeployPhase::Done
                && !self.topo_md_removed
            {
                self.topo_md_removed = true;
                self.ev(|| format!("topology: {md} removed from the topology"));
                self.delete(Kind::MachineDeployment, &md, "topology")?;
                return Ok(true);
            }
            let infra_from = self.read(|s| cloned_from(s, &infra));
            let boot_from = self.read(|s| cloned_from(s, &bootstrap));
            if infra_from.as_deref() != Some(w.infra.name.as_str())
                || boot_from.as_deref() != Some(w.bootstrap.name.as_str())
            {
                let new_infra = if infra_from.as_deref() != Some(w.infra.name.as_str()) {
                    let Some(c) = self.clone_of(&w.infra, &format!("edge-a-{}-infra", w.class))
                    else {
                        return Ok(false);
                    };
                    self.create(c)
                } else {
                    infra
                };
                let new_boot = if boot_from.as_deref() != Some(w.bootstrap.name.as_str()) {
                    let Some(c) =
                        self.clone_of(&w.bootstrap, &format!("edge-a-{}-bootstrap", w.class))
                    else {
                        return Ok(false);
                    };
                    self.create(c)
                } else {
                    bootstrap
                };
                self.write(|s| {
                    if let Some(Obj {
                        spec:
                            Spec::MachineDeployment {
                                infra, bootstrap, ..
                            },
                        ..
                    }) = s.get_mut(Kind::MachineDeployment, &md)
                    {
                        *infra = new_infra.clone();
                        *bootstrap = new_boot.clone();
                    }
                });
                self.ev(|| format!("topology: {md} now uses {new_infra} and {new_boot}"));
                return Ok(true);
            }
        }
        // the old control-plane copy goes as soon as the control plane moved on
        let retired: Vec<Ref> = self.topo_retired.iter().cloned().collect();
        let mut did = false;
        for r in retired {
            if !self.due(Task::Topology, r.kind, &r.name) {
                continue;
            }
            match self.delete(r.kind, &r.name, "topology")? {
                Deleted::Refused(_) => {
                    self.refused_retry_later(Task::Topology, r.kind, &r.name, 10, 300);
                }
                _ => {
                    self.topo_retired.remove(&r);
                    did = true;
                }
            }
        }
        Ok(did)
    }

    // ---------------------------------------------------------------- Cluster API

    fn machines_of(&self, owner: Kind, name: &str) -> Vec<Obj> {
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

    fn ready(&self, m: &Obj) -> bool {
        m.deleting.is_none()
            && matches!(m.spec, Spec::Metal3Machine { ready_at, .. } if ready_at <= self.now)
    }

    fn md_controller(&mut self) -> Result<bool> {
        let (paused, _) = self.cluster_state();
        if paused {
            return Ok(false);
        }
        self.reconcile_each(Kind::MachineDeployment, Self::reconcile_md)
    }

    /// Reconciles every object of `kind`, in a random order as controllers' work queues do;
    /// true when any reconcile changed something.
    fn reconcile_each(
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

    fn reconcile_md(&mut self, md: &str) -> Result<bool> {
        let Some(obj) = self.read(|s| s.get(Kind::MachineDeployment, md).cloned()) else {
            return Ok(false);
        };
        let Spec::MachineDeployment {
            infra,
            bootstrap,
            replicas,
            max_surge,
            max_unavailable,
        } = obj.spec
        else {
            return Ok(false);
        };
        let sets: Vec<Obj> = self.read(|s| {
            s.of_kind(Kind::MachineSet)
                .filter(|m| {
                    m.controller
                        .as_ref()
                        .is_some_and(|(k, n)| *k == Kind::MachineDeployment && n == md)
                })
                .cloned()
                .collect()
        });
        if obj.deleting.is_some() {
            let mut did = false;
            if obj.finalizers.contains(MD_TOPOLOGY_FINALIZER) {
                // the topology deletes the MachineDeployment's templates that no MachineSet
                // which is not being deleted uses, at once
                let in_use: BTreeSet<Ref> = sets
                    .iter()
                    .filter(|ms| ms.deleting.is_none())
                    .filter_map(|ms| match &ms.spec {
                        Spec::MachineSet {
                            infra, bootstrap, ..
                        } => Some([infra.clone(), bootstrap.clone()]),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                did |= self.topology_finalizer(
                    (Kind::MachineDeployment, md, MD_TOPOLOGY_FINALIZER),
                    Task::MdController,
                    [&infra, &bootstrap],
                    &in_use,
                )?;
            }
            did |= self.delete_dependents((Kind::MachineDeployment, md, MD_FINALIZER), &sets);
            return Ok(did);
        }
        let reader = format!("MachineDeployment {md}");
        if !(self.fetch(&reader, &infra) & self.fetch(&reader, &bootstrap)) {
            return Ok(false);
        }
        let current = sets.iter().find(|s| {
            s.deleting.is_none()
                && matches!(&s.spec, Spec::MachineSet { infra: i, bootstrap: b, .. } if *i == infra && *b == bootstrap)
        });
        let Some(current) = current.cloned() else {
            let name = self.new_machineset(md, &infra, &bootstrap, 0);
            self.ev(|| format!("MachineDeployment {md}: new MachineSet {name} for {infra}"));
            return Ok(true);
        };
        let spec_of = ms_replicas;
        let olds: Vec<&Obj> = sets
            .iter()
            .filter(|s| s.name != current.name && s.deleting.is_none())
            .collect();
        let total: u32 = spec_of(&current) + olds.iter().map(|o| spec_of(o)).sum::<u32>();
        let current_ready = self
            .machines_of(Kind::MachineSet, &current.name)
            .iter()
            .filter(|m| self.ready(m))
            .count() as u32;
        let set_replicas = |sim: &mut Self, name: &str, n: u32| {
            sim.write(|s| {
                if let Some(Obj {
                    spec: Spec::MachineSet { replicas, .. },
                    ..
                }) = s.get_mut(Kind::MachineSet, name)
                {
                    *replicas = n;
                }
            });
        };
        let cur = spec_of(&current);
        if cur < replicas && total < replicas + max_surge {
            set_replicas(self, &current.name, cur + 1);
            return Ok(true);
        }
        if cur > replicas {
            set_replicas(self, &current.name, replicas);
            return Ok(true);
        }
        // the Deployment algorithm: scale old sets down by what the spec totals allow
        let min_available = replicas.saturating_sub(max_unavailable);
        let new_unavailable = cur.saturating_sub(current_ready);
        if total > min_available + new_unavailable {
            if let Some(old) = olds.iter().find(|o| spec_of(o) > 0) {
                let n = spec_of(old) - 1;
                let name = old.name.clone();
                set_replicas(self, &name, n);
                self.ev(|| format!("MachineDeployment {md}: {name} scaled to {n}"));
                return Ok(true);
            }
        }
        if self.sc.delete_old_ms {
            for old in olds {
                if spec_of(old) == 0 && self.machines_of(Kind::MachineSet, &old.name).is_empty() {
                    let now = self.now;
                    let name = old.name.clone();
                    self.write(|s| s.delete(Kind::MachineSet, &name, now));
                    self.ev(|| format!("MachineDeployment {md}: old MachineSet {name} deleted"));
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The topology's finalizer on a MachineDeployment or MachineSet being deleted: deletes each
    /// of `templates` that exists and is not `in_use`, when `task` is due for it (a refused
    /// delete is retried later), and drops the finalizer once none is left; true when it did.
    fn topology_finalizer(
        &mut self,
        (kind, name, finalizer): (Kind, &str, &str),
        task: Task,
        templates: [&Ref; 2],
        in_use: &BTreeSet<Ref>,
    ) -> Result<bool> {
        let who = format!("topology ({} finalizer)", kind.name());
        let mut done = true;
        for r in templates {
            if in_use.contains(r) || !self.read(|s| s.exists(r)) {
                continue;
            }
            if !self.due(task, r.kind, &r.name) {
                done = false;
                continue;
            }
            if let Deleted::Refused(_) = self.delete(r.kind, &r.name, &who)? {
                self.refused_retry_later(task, r.kind, &r.name, 10, 300);
                done = false;
            }
        }
        if done {
            self.write(|s| s.drop_finalizer(kind, name, finalizer));
        }
        Ok(done)
    }

    /// A MachineDeployment's or MachineSet's own finalizer: deletes its `dependents` (its
    /// MachineSets or Metal3Machines) and drops the finalizer once none is left; true when
    /// anything changed.
    fn delete_dependents(
        &mut self,
        (kind, name, finalizer): (Kind, &str, &str),
        dependents: &[Obj],
    ) -> bool {
        let mut did = false;
        for d in dependents {
            if d.deleting.is_none() {
                let now = self.now;
                self.write(|s| s.delete(d.kind, &d.name, now));
                did = true;
            }
        }
        if dependents.is_empty() {
            self.write(|s| s.drop_finalizer(kind, name, finalizer));
            if self.read(|s| s.get(kind, name).is_none()) {
                self.ev(|| format!("{} {name} gone", kind.name()));
                did = true;
            }
        }
        did
    }

    fn ms_controller(&mut self) -> Result<bool> {
        self.reconcile_each(Kind::MachineSet, Self::reconcile_ms)
    }

    fn reconcile_ms(&mut self, ms: &str) -> Result<bool> {
        let Some(obj) = self.read(|s| s.get(Kind::MachineSet, ms).cloned()) else {
            return Ok(false);
        };
        let Spec::MachineSet {
            infra,
            bootstrap,
            replicas,
            ..
        } = obj.spec.clone()
        else {
            return Ok(false);
        };
        let machines = self.machines_of(Kind::MachineSet, ms);
        let count = machines.len() as u32;
        self.write(|s| {
            if let Some(Obj {
                spec: Spec::MachineSet {
                    status_replicas, ..
                },
                ..
            }) = s.get_mut(Kind::MachineSet, ms)
            {
                *status_replicas = Some(count);
            }
        });
        let (paused, _) = self.cluster_state();
        if obj.deleting.is_some() {
            if paused {
                return Ok(false);
            }
            let mut did = false;
            if obj.finalizers.contains(MS_TOPOLOGY_FINALIZER) {
                // the topology deletes the templates no MachineDeployment or other MachineSet uses
                let users: BTreeSet<Ref> = self.read(|s| {
                    let mut u = BTreeSet::new();
                    for o in s
                        .of_kind(Kind::MachineDeployment)
                        .chain(s.of_kind(Kind::MachineSet))
                    {
                        // CAPI's CalculateTemplatesInUse: MachineSets and the MachineDeployment
                        // that are being deleted use nothing any more
                        if o.name == ms || o.deleting.is_some() {
                            continue;
                        }
                        if let Spec::MachineDeployment {
                            infra, bootstrap, ..
                        }
                        | Spec::MachineSet {
                            infra, bootstrap, ..
                        } = &o.spec
                        {
                            u.insert(infra.clone());
                            u.insert(bootstrap.clone());
                        }
                    }
                    u
                });
                did |= self.topology_finalizer(
                    (Kind::MachineSet, ms, MS_TOPOLOGY_FINALIZER),
                    Task::MsController,
                    [&infra, &bootstrap],
                    &users,
                )?;
            }
            did |= self.delete_dependents((Kind::MachineSet, ms, MS_FINALIZER), &machines);
            return Ok(did);
        }
        if paused {
            return Ok(false);
        }
        let live: Vec<&Obj> = machines.iter().filter(|m| m.deleting.is_none()).collect();
        let md = obj
            .controller
            .as_ref()
            .map(|(_, n)| n.clone())
            .unwrap_or_default();
        let is_current = self.read(|s| {
            matches!(s.get(Kind::MachineDeployment, &md),
                Some(Obj { spec: Spec::MachineDeployment { infra: i, bootstrap: b, .. }, .. }) if *i == infra && *b == bootstrap)
        });
        let need_up = (live.len() as u32) < replicas;
        if is_current || need_up {
            let reader = format!("MachineSet {ms}");
            if !(self.fetch(&reader, &infra) & self.fetch(&reader, &bootstrap)) {
                return Ok(false);
            }
            // the MachineSet controller puts the Cluster owner reference on its templates
            self.write(|s| {
                for r in [&infra, &bootstrap] {
                    if let Some(t) = s.get_mut(r.kind, &r.name) {
                        t.owner_cluster.get_or_insert_with(|| CLUSTER.to_string());
                    }
                }
            });
        }
        if need_up {
            return self.create_machine((Kind::MachineSet, ms.to_string()), &infra, false);
        }
        if live.len() as u32 > replicas {
            // delete the newest not-ready machine first, else the oldest
            let victim = live
                .iter()
                .find(|m| !self.ready(m))
                .or_else(|| live.first())
                .map(|m| m.name.clone());
            if let Some(v) = victim {
                let now = self.now;
                self.write(|s| s.delete(Kind::Metal3Machine, &v, now));
                self.ev(|| format!("MachineSet {ms}: scale down, Metal3Machine {v} deleting"));
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn cp_controller(&mut self) -> Result<bool> {
        let kind = self.sc.cp_kind;
        let Some(obj) = self.read(|s| s.get(kind, "edge-a-cp").cloned()) else {
            return Ok(false);
        };
        let Spec::ControlPlane {
            infra,
            replicas,
            max_surge,
            ..
        } = obj.spec.clone()
        else {
            return Ok(false);
        };
        let machines = self.machines_of(kind, "edge-a-cp");
        let (paused, _) = self.cluster_state();
        if paused {
            return Ok(false);
        }
        if obj.deleting.is_some() {
            let mut did = false;
            for m in &machines {
                if m.deleting.is_none() {
                    let now = self.now;
                    self.write(|s| s.delete(Kind::Metal3Machine, &m.name, now));
                    did = true;
                }
            }
            if machines.is_empty() {
                self.write(|s| s.drop_finalizer(kind, "edge-a-cp", CP_FINALIZER));
                self.ev(|| format!("{} gone", kind.name()));
                return Ok(true);
            }
            return Ok(did);
        }
        // a missing current template aborts the whole reconcile
        if !self.fetch(kind.name(), &infra) {
            return Ok(false);
        }
        self.write(|s| {
            if let Some(t) = s.get_mut(infra.kind, &infra.name) {
                t.owner_cluster.get_or_insert_with(|| CLUSTER.to_string());
            }
        });
        let live: Vec<&Obj> = machines.iter().filter(|m| m.deleting.is_none()).collect();
        if live.len() < machines.len() {
            // one machine at a time
            return Ok(false);
        }
        let outdated: Vec<&Obj> = live
            .iter()
            .copied()
            .filter(|m| m.annotations.get(CLONED_FROM_NAME) != Some(&infra.name))
            .collect();
        let all_ready = live.iter().all(|m| self.ready(m));
        let n = live.len() as u32;
        let target = replicas + if outdated.is_empty() { 0 } else { max_surge };
        if n < target {
            return self.create_machine((kind, "edge-a-cp".into()), &infra, false);
        }
        if all_ready && !outdated.is_empty() && n >= replicas {
            let v = outdated[0].name.clone();
            let now = self.now;
            self.write(|s| s.delete(Kind::Metal3Machine, &v, now));
            self.ev(|| format!("{}: rollout, Metal3Machine {v} deleting", kind.name()));
            return Ok(true);
        }
        if n > replicas && all_ready {
            let v = live[0].name.clone();
            let now = self.now;
            self.write(|s| s.delete(Kind::Metal3Machine, &v, now));
            return Ok(true);
        }
        Ok(false)
    }

    /// CAPM3 deleting a Metal3Machine: decides node reuse, then releases the host.
    fn capm3(&mut self) -> bool {
        let (paused, cluster_deleting) = self.cluster_state();
        if paused {
            return false;
        }
        let deleting: Vec<Obj> = self.read(|s| {
            s.of_kind(Kind::Metal3Machine)
                .filter(|m| m.deleting.is_some())
                .cloned()
                .collect()
        });
        let Some(m) = self.rng.pick(&deleting).cloned() else {
            return false;
        };
        let Spec::Metal3Machine { intent, .. } = m.spec else {
            return false;
        };
        if !cluster_deleting {
            let template = if self.sc.release.metal3_v1beta2 {
                // >= 1.13: the owner's current template
                self.read(|s| {
                    let (kind, name) = m.controller.clone()?;
                    match &s.get(kind, &name)?.spec {
                        Spec::MachineSet { infra, .. } | Spec::ControlPlane { infra, .. } => {
                            Some(infra.clone())
                        }
                        _ => None,
                    }
                })
            } else {
                m.annotations
                    .get(CLONED_FROM_NAME)
                    .map(|n| Ref::new(Kind::Metal3MachineTemplate, n.clone()))
            };
            let decision = template.as_ref().and_then(|r| {
                self.read(|s| match s.get(r.kind, &r.name) {
                    Some(Obj {
                        spec: Spec::Template { node_reuse, .. },
                        ..
                    }) => Some(*node_reuse),
                    _ => None,
                })
            });
            self.m.decisions += 1;
            let reuse = decision.unwrap_or(false);
            if intent && !reuse {
                self.m.lost += 1;
            }
            let name = m.name.clone();
            self.ev(|| {
                format!(
                    "CAPM3: Metal3Machine {name} deleted, node reuse {reuse} (template {} {}), intent {intent}{}",
                    template.map(|r| r.to_string()).unwrap_or_else(|| "unknown".into()),
                    if decision.is_some() { "read" } else { "NOT FOUND" },
                    if intent && !reuse { "  <-- LOST" } else { "" }
                )
            });
        }
        self.write(|s| s.drop_finalizer(Kind::Metal3Machine, &m.name, M3M_FINALIZER));
        true
    }

    fn cluster_controller(&mut self) -> bool {
        let Some(cluster) = self.read(|s| s.get(Kind::Cluster, CLUSTER).cloned()) else {
            return false;
        };
        if cluster.deleting.is_none() {
            return false;
        }
        let now = self.now;
        // workers first, then the control plane, then the Cluster
        let mds = self.read(|s| s.names(Kind::MachineDeployment));
        let sets = self.read(|s| s.names(Kind::MachineSet));
        let mut did = false;
        for md in &mds {
            did |= self.read(|s| {
                s.get(Kind::MachineDeployment, md)
                    .is_some_and(|o| o.deleting.is_none())
            });
            self.write(|s| s.delete(Kind::MachineDeployment, md, now));
        }
        for ms in &sets {
            did |= self.read(|s| {
                s.get(Kind::MachineSet, ms)
                    .is_some_and(|o| o.deleting.is_none())
            });
            self.write(|s| s.delete(Kind::MachineSet, ms, now));
        }
        if did {
            return true;
        }
        let workers_left = self.read(|s| {
            s.of_kind(Kind::Metal3Machine).any(|m| {
                m.controller
                    .as_ref()
                    .is_some_and(|(k, _)| *k == Kind::MachineSet)
            })
        });
        if !mds.is_empty() || !sets.is_empty() || workers_left {
            return false;
        }
        let kind = self.sc.cp_kind;
        if let Some(cp) = self.read(|s| s.get(kind, "edge-a-cp").cloned()) {
            if cp.deleting.is_none() {
                self.write(|s| s.delete(kind, "edge-a-cp", now));
                return true;
            }
            return false;
        }
        if self.read(|s| s.of_kind(Kind::Metal3Machine).next().is_some()) {
            return false;
        }
        self.write(|s| s.drop_finalizer(Kind::Cluster, CLUSTER, CLUSTER_FINALIZER));
        self.ev(|| "Cluster edge-a gone".to_string());
        true
    }

    /// Deletes what an owner that is gone left behind, retrying refused deletes with backoff.
    fn garbage_collector(&mut self) -> Result<bool> {
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
            match self.delete(
                kind,
                &name,
                "system:serviceaccount:kube-system:generic-garbage-collector",
            )? {
                Deleted::Refused(_) => {
                    self.refused_retry_later(Task::GarbageCollector, kind, &name, 5, 1000);
                }
                _ => did = true,
            }
        }
        Ok(did)
    }

    // ---------------------------------------------------------------- lifecycle

    fn lifecycle(&mut self) -> Result<Option<u64>> {
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

    /// The namespace controller: deletes every kind (one kind per pass, in random order),
    /// again and again until the namespace is empty.
    fn namespace_deletion(&mut self) -> Result<Option<u64>> {
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
            if let Deleted::Refused(_) = self.delete(
                kind,
                &name,
                "system:serviceaccount:kube-system:namespace-controller",
            )? {
                self.m.retries += 1;
            }
        }
        Ok(Some(if self.ns_kinds.is_empty() {
            self.rng.range(5, 30)
        } else {
            self.rng.range(0, 2)
        }))
    }

    /// clusterctl move: pause, create everything on the target, then annotate and delete each
    /// source object in random order, retrying a refused delete for about 159 s.
    fn clusterctl_move(&mut self) -> Result<Option<u64>> {
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

    /// The README's clean-up job: deletes every labelled template at least an hour old; the
    /// policy refuses those still in use, and the job moves on.
    fn cleanup_job(&mut self) -> Result<()> {
        let candidates: Vec<Ref> = self.read(|s| {
            s.objects
                .values()
                .filter(|o| o.kind.is_template())
                .filter(|o| o.labels.get(CLEANUP_LABEL).map(String::as_str) == Some("true"))
                .filter(|o| o.deleting.is_none() && o.created + CLEANUP_MIN_AGE <= self.now)
                .map(|o| Ref::new(o.kind, o.name.clone()))
                .collect()
        });
        for r in candidates {
            self.delete(
                r.kind,
                &r.name,
                "system:serviceaccount:edge-sites:template-cleanup",
            )?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- verdicts

    fn upgrade_finished(&self) -> bool {
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
    fn topology_applied(&self) -> bool {
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
    fn garbage_templates(&self) -> Vec<Ref> {
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

    fn flow_finished(&self) -> bool {
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

    fn finish(&mut self) {
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
        self.m.leaked += garbage.len() as u64;
        if !garbage.is_empty() {
            self.ev(|| {
                format!(
                    "LEAKED: {:?}",
                    garbage.iter().map(|r| r.to_string()).collect::<Vec<_>>()
                )
            });
        }
        self.m.host_calls = lock(&self.api).host_calls;
    }
}

fn ms_replicas(o: &Obj) -> u32 {
    match o.spec {
        Spec::MachineSet { replicas, .. } => replicas,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn every_flow_is_chosen_evenly() {
        let mut rng = Rng::new(0);
        let flows: BTreeSet<(usize, usize)> = (0..24)
            .map(|seed| {
                let sc = Scenario::generate(seed, &mut rng);
                (
                    Deployer::ALL
                        .iter()
                        .position(|d| *d == sc.deployer)
                        .unwrap(),
                    Lifecycle::ALL
                        .iter()
                        .position(|l| *l == sc.lifecycle)
                        .unwrap(),
                )
            })
            .collect();
        assert_eq!(flows.len(), 24);
    }

    #[test]
    fn without_the_policy_helm3_upgrades_lose_node_reuse_decisions() {
        // seeds 0, 24, 48, ... are Helm 3 upgrades
        let lost: u64 = (0..40).map(|i| run(i * 24).0.lost).sum();
        assert!(lost > 0);
    }
}
