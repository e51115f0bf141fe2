//! The simulated API server: typed objects of one namespace, served in the shape of the API
//! version asked for (Cluster API v1beta1 ObjectReferences with apiVersion, v1beta2
//! ContractVersionedObjectReferences with apiGroup), with field masks, list answers, the CRD list
//! and the host's error texts from [`crate::kube`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use crate::host::Responder;
use crate::kube::{self, Crd};
use crate::session::KubeRequest;

pub const NAMESPACE: &str = "edge-sites";
pub const CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";
pub const CLONED_FROM_GROUPKIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
pub const DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";
pub const CLEANUP_LABEL: &str = "capi-template-guard.kubewarden.io/cleanup";
pub const MS_FINALIZER: &str = "cluster.x-k8s.io/machineset";
pub const MS_TOPOLOGY_FINALIZER: &str = "machineset.topology.cluster.x-k8s.io";

const CAPI: &str = "cluster.x-k8s.io";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const BOOTSTRAP: &str = "bootstrap.cluster.x-k8s.io";
const CONTROLPLANE: &str = "controlplane.cluster.x-k8s.io";

/// Who installs a kind, and so which versions of it are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Capi,
    Metal3,
    Rke2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Cluster,
    ClusterClass,
    MachineDeployment,
    MachineSet,
    Metal3Machine,
    KubeadmControlPlane,
    Rke2ControlPlane,
    Metal3MachineTemplate,
    KubeadmConfigTemplate,
    Rke2ConfigTemplate,
}

/// Kinds the simulated providers install but the simulation holds no objects of: listed, they
/// are served and empty.
const EMPTY_KINDS: &[(&str, &str, Provider)] = &[
    (CAPI, "Machine", Provider::Capi),
    (CAPI, "MachinePool", Provider::Capi),
    (CAPI, "MachineHealthCheck", Provider::Capi),
    (BOOTSTRAP, "KubeadmConfig", Provider::Capi),
    (CONTROLPLANE, "KubeadmControlPlaneTemplate", Provider::Capi),
    (INFRA, "Metal3Cluster", Provider::Metal3),
    (INFRA, "Metal3ClusterTemplate", Provider::Metal3),
    (INFRA, "Metal3DataTemplate", Provider::Metal3),
    (BOOTSTRAP, "RKE2Config", Provider::Rke2),
    (CONTROLPLANE, "RKE2ControlPlaneTemplate", Provider::Rke2),
];

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Cluster,
        Kind::ClusterClass,
        Kind::MachineDeployment,
        Kind::MachineSet,
        Kind::Metal3Machine,
        Kind::KubeadmControlPlane,
        Kind::Rke2ControlPlane,
        Kind::Metal3MachineTemplate,
        Kind::KubeadmConfigTemplate,
        Kind::Rke2ConfigTemplate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cluster => "Cluster",
            Kind::ClusterClass => "ClusterClass",
            Kind::MachineDeployment => "MachineDeployment",
            Kind::MachineSet => "MachineSet",
            Kind::Metal3Machine => "Metal3Machine",
            Kind::KubeadmControlPlane => "KubeadmControlPlane",
            Kind::Rke2ControlPlane => "RKE2ControlPlane",
            Kind::Metal3MachineTemplate => "Metal3MachineTemplate",
            Kind::KubeadmConfigTemplate => "KubeadmConfigTemplate",
            Kind::Rke2ConfigTemplate => "RKE2ConfigTemplate",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            Kind::Cluster | Kind::ClusterClass | Kind::MachineDeployment | Kind::MachineSet => CAPI,
            Kind::Metal3Machine | Kind::Metal3MachineTemplate => INFRA,
            Kind::KubeadmControlPlane | Kind::Rke2ControlPlane => CONTROLPLANE,
            Kind::KubeadmConfigTemplate | Kind::Rke2ConfigTemplate => BOOTSTRAP,
        }
    }

    pub fn plural(self) -> String {
        kube::plural(self.name())
    }

    pub fn provider(self) -> Provider {
        match self {
            Kind::Metal3Machine | Kind::Metal3MachineTemplate => Provider::Metal3,
            Kind::Rke2ControlPlane | Kind::Rke2ConfigTemplate => Provider::Rke2,
            _ => Provider::Capi,
        }
    }

    pub fn is_template(self) -> bool {
        matches!(
            self,
            Kind::Metal3MachineTemplate | Kind::KubeadmConfigTemplate | Kind::Rke2ConfigTemplate
        )
    }

    fn from_group_name(group: &str, name: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.name() == name)
    }
}

/// The installed releases: which API versions each provider serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// Cluster API >= 1.11 (with kubeadm bootstrap and control plane): v1beta1 and v1beta2.
    pub capi_v1beta2: bool,
    /// CAPM3 >= 1.13: v1beta1 and v1beta2 (and node reuse read from the owner's template).
    pub metal3_v1beta2: bool,
    /// RKE2 provider installed, and >= 0.22 (v1beta2).
    pub rke2: Option<bool>,
}

impl Release {
    fn provider_serves(&self, provider: Provider, version: &str) -> bool {
        let v2 = match provider {
            Provider::Capi => self.capi_v1beta2,
            Provider::Metal3 => self.metal3_v1beta2,
            Provider::Rke2 => match self.rke2 {
                Some(v2) => v2,
                None => return false,
            },
        };
        version == "v1beta1" || (version == "v1beta2" && v2)
    }

    pub fn serves(&self, kind: Kind, version: &str) -> bool {
        self.provider_serves(kind.provider(), version)
    }

    /// The version a client of this release uses by default for `kind`.
    pub fn preferred(&self, kind: Kind) -> &'static str {
        if self.serves(kind, "v1beta2") {
            "v1beta2"
        } else {
            "v1beta1"
        }
    }

    /// Whether any installed kind serves `group`/`version` (API discovery).
    fn group_version_served(&self, group: &str, version: &str) -> bool {
        Kind::ALL
            .iter()
            .any(|k| k.group() == group && self.serves(*k, version))
            || EMPTY_KINDS
                .iter()
                .any(|(g, _, p)| *g == group && self.provider_serves(*p, version))
    }

    pub fn describe(&self) -> String {
        format!(
            "CAPI {}, CAPM3 {}, RKE2 {}",
            if self.capi_v1beta2 { ">=1.11" } else { "1.10" },
            if self.metal3_v1beta2 {
                ">=1.13"
            } else {
                "<=1.12"
            },
            match self.rke2 {
                None => "not installed",
                Some(true) => ">=0.22",
                Some(false) => "0.21",
            }
        )
    }
}

/// A reference to a template (same namespace).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ref {
    pub kind: Kind,
    pub name: String,
}

impl Ref {
    pub fn new(kind: Kind, name: impl Into<String>) -> Self {
        Ref {
            kind,
            name: name.into(),
        }
    }
}

impl std::fmt::Display for Ref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.name(), self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub class: String,
    pub infra: Ref,
    pub bootstrap: Ref,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    Cluster {
        paused: bool,
    },
    Template {
        node_reuse: bool,
        cleaning: Option<String>,
    },
    MachineDeployment {
        infra: Ref,
        bootstrap: Ref,
        replicas: u32,
        max_surge: u32,
        max_unavailable: u32,
    },
    MachineSet {
        infra: Ref,
        bootstrap: Ref,
        replicas: u32,
        status_replicas: Option<u32>,
    },
    ControlPlane {
        infra: Ref,
        replicas: u32,
        max_surge: u32,
        /// RKE2 v1beta1 only: the reference sits in the deprecated `spec.infrastructureRef`.
        legacy_ref: bool,
    },
    ClusterClass {
        cp_infra: Ref,
        workers: Vec<Worker>,
    },
    Metal3Machine {
        cleaning: Option<String>,
        ready_at: u64,
        /// What the template it was cloned from said (simulation truth, never rendered).
        intent: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Obj {
    pub kind: Kind,
    pub name: String,
    pub uid: u64,
    pub created: u64,
    pub deleting: Option<u64>,
    pub finalizers: BTreeSet<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner_cluster: Option<String>,
    pub controller: Option<(Kind, String)>,
    pub spec: Spec,
}

impl Obj {
    pub fn new(kind: Kind, name: impl Into<String>, spec: Spec) -> Self {
        Obj {
            kind,
            name: name.into(),
            uid: 0,
            created: 0,
            deleting: None,
            finalizers: BTreeSet::new(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            owner_cluster: None,
            controller: None,
            spec,
        }
    }

    pub fn key(&self) -> (Kind, String) {
        (self.kind, self.name.clone())
    }
}

/// One API server's objects (one namespace).
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub objects: BTreeMap<(Kind, String), Obj>,
    pub namespace_terminating: bool,
    next_uid: u64,
}

impl Store {
    pub fn get(&self, kind: Kind, name: &str) -> Option<&Obj> {
        self.objects.get(&(kind, name.to_string()))
    }

    pub fn get_mut(&mut self, kind: Kind, name: &str) -> Option<&mut Obj> {
        self.objects.get_mut(&(kind, name.to_string()))
    }

    pub fn exists(&self, r: &Ref) -> bool {
        self.get(r.kind, &r.name).is_some()
    }

    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Obj> {
        self.objects
            .range((kind, String::new())..)
            .take_while(move |((k, _), _)| *k == kind)
            .map(|(_, o)| o)
    }

    pub fn names(&self, kind: Kind) -> Vec<String> {
        self.of_kind(kind).map(|o| o.name.clone()).collect()
    }

    /// Creates `obj` (uid and creation time set here). `false` when the namespace is terminating.
    pub fn create(&mut self, mut obj: Obj, now: u64) -> bool {
        if self.namespace_terminating {
            return false;
        }
        self.next_uid += 1;
        obj.uid = self.next_uid;
        obj.created = now;
        self.objects.insert(obj.key(), obj);
        true
    }

    /// The API server's part of a delete the admission chain accepted: gone at once without
    /// finalizers, else marked. Returns whether the object is gone.
    pub fn delete(&mut self, kind: Kind, name: &str, now: u64) -> bool {
        let key = (kind, name.to_string());
        match self.objects.get_mut(&key) {
            None => true,
            Some(o) if o.finalizers.is_empty() => {
                self.objects.remove(&key);
                true
            }
            Some(o) => {
                o.deleting.get_or_insert(now);
                false
            }
        }
    }

    /// A controller drops its finalizer; the object goes when it was the last one and the object
    /// is being deleted.
    pub fn drop_finalizer(&mut self, kind: Kind, name: &str, finalizer: &str) {
        let key = (kind, name.to_string());
        let gone = match self.objects.get_mut(&key) {
            Some(o) => {
                o.finalizers.remove(finalizer);
                o.finalizers.is_empty() && o.deleting.is_some()
            }
            None => false,
        };
        if gone {
            self.objects.remove(&key);
        }
    }
}

/// The simulated cluster(s) the host answers from: the management cluster, and the target of a
/// `clusterctl move`.
#[derive(Debug, Clone)]
pub struct Api {
    pub release: Release,
    pub stores: [Store; 2],
    /// Which store answers the policy's lookups (0: source, 1: move target).
    pub active: usize,
    pub host_calls: u64,
}

impl Api {
    pub fn new(release: Release) -> Self {
        Api {
            release,
            stores: [Store::default(), Store::default()],
            active: 0,
            host_calls: 0,
        }
    }

    fn resolve(&self, api_version: &str, kind: &str) -> Result<Resolved, String> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !self.release.group_version_served(group, version) {
            return Err(kube::no_such_group_version(api_version, kind));
        }
        let not_found = || kube::no_such_kind(api_version, kind);
        match Kind::from_group_name(group, kind) {
            Some(k) if self.release.serves(k, version) => Ok(Resolved::Kind(k)),
            Some(_) => Err(not_found()),
            None => match EMPTY_KINDS
                .iter()
                .find(|(g, n, _)| *g == group && *n == kind)
            {
                Some((_, _, p)) if self.release.provider_serves(*p, version) => Ok(Resolved::Empty),
                _ => Err(not_found()),
            },
        }
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        let resolved = self.resolve(api_version, kind)?;
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let selector = parse_selector(label_selector)?;
        if field_selector.is_some_and(|f| !f.is_empty()) {
            return Err(format!(
                "simulation: field selectors are not simulated ({field_selector:?})"
            ));
        }
        let store = &self.stores[self.active];
        let mut items = Vec::new();
        if let Resolved::Kind(k) = resolved {
            if namespace == NAMESPACE {
                for obj in store.of_kind(k) {
                    if selector
                        .iter()
                        .all(|(key, value)| obj.labels.get(key) == Some(value))
                    {
                        items.push(kube::apply_masks(
                            &render(obj, version, &self.release),
                            masks,
                        ));
                    }
                }
            }
        }
        serde_json::to_vec(&kube::list_answer(api_version, kind, "1", items))
            .map_err(|e| e.to_string())
    }

    fn get(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&String>,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        let resolved = self.resolve(api_version, kind)?;
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let not_found =
            || kube::no_such_object(api_version, kind, name, namespace.map(String::as_str));
        let Resolved::Kind(k) = resolved else {
            return Err(not_found());
        };
        if namespace.map(String::as_str) != Some(NAMESPACE) {
            return Err(not_found());
        }
        let obj = self.stores[self.active]
            .get(k, name)
            .ok_or_else(not_found)?;
        serde_json::to_vec(&kube::apply_masks(
            &render(obj, version, &self.release),
            masks,
        ))
        .map_err(|e| e.to_string())
    }

    /// The CRDs of every kind the installed providers serve, built from the same tables the
    /// lookups resolve against, so a kind added there is installed here too.
    pub fn crds(&self) -> Vec<Crd> {
        let kinds = Kind::ALL
            .iter()
            .map(|k| (k.group(), k.name(), k.provider()));
        let empty = EMPTY_KINDS.iter().map(|(g, n, p)| (*g, *n, *p));
        kinds
            .chain(empty)
            .filter_map(|(group, kind, provider)| {
                let versions: Vec<(String, bool)> = ["v1beta1", "v1beta2"]
                    .into_iter()
                    .filter(|v| self.release.provider_serves(provider, v))
                    .map(|v| (v.to_string(), true))
                    .collect();
                (!versions.is_empty()).then(|| Crd {
                    group: group.into(),
                    kind: kind.into(),
                    versions,
                })
            })
            .collect()
    }
}

enum Resolved {
    Kind(Kind),
    Empty,
}

fn parse_selector(selector: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let Some(text) = selector.filter(|s| !s.is_empty()) else {
        return Ok(Vec::new());
    };
    text.split(',')
        .map(|term| {
            term.split_once('=')
                .filter(|(k, _)| !k.ends_with('!'))
                .map(|(k, v)| (k.to_string(), v.trim_start_matches('=').to_string()))
                .ok_or_else(|| format!("simulation: label selector {text:?} is not simulated"))
        })
        .collect()
}

/// The host side of the simulation: answers the policy's Kubernetes calls from [`Api`].
pub struct SimHost {
    pub api: Arc<Mutex<Api>>,
}

impl Responder for SimHost {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        let mut api = self.api.lock().unwrap_or_else(PoisonError::into_inner);
        api.host_calls += 1;
        match request {
            KubeRequest::KubernetesListResourceNamespace(r) => api.list(
                &r.api_version,
                &r.kind,
                &r.namespace,
                r.label_selector.as_deref(),
                r.field_selector.as_deref(),
                r.field_masks.as_ref(),
            ),
            KubeRequest::KubernetesListResourceAll(r)
                if (r.api_version.as_str(), r.kind.as_str())
                    == (kube::CRD_API_VERSION, kube::CRD_KIND) =>
            {
                serde_json::to_vec(&kube::crd_list(&api.crds(), r.field_masks.as_ref()))
                    .map_err(|e| e.to_string())
            }
            // one namespace holds every object
            KubeRequest::KubernetesListResourceAll(r) => api.list(
                &r.api_version,
                &r.kind,
                NAMESPACE,
                r.label_selector.as_deref(),
                r.field_selector.as_deref(),
                r.field_masks.as_ref(),
            ),
            KubeRequest::KubernetesGetResource(r) => api.get(
                &r.api_version,
                &r.kind,
                &r.name,
                r.namespace.as_ref(),
                r.field_masks.as_ref(),
            ),
        }
    }
}

/// RFC 3339 time of a simulated second (the simulation starts 2026-11-01T00:00:00Z).
pub fn timestamp(secs: u64) -> String {
    let day = 1 + secs / 86_400;
    let rest = secs % 86_400;
    format!(
        "2026-11-{:02}T{:02}:{:02}:{:02}Z",
        day.min(30),
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn reference(r: &Ref, version: &str, release: &Release) -> Value {
    if version == "v1beta1" {
        // v1beta1 ObjectReference: apiVersion carries the version the provider serves its
        // templates at.
        json!({
            "apiVersion": format!("{}/{}", r.kind.group(), release.preferred(r.kind)),
            "kind": r.kind.name(),
            "name": r.name,
            "namespace": NAMESPACE,
        })
    } else {
        json!({"apiGroup": r.kind.group(), "kind": r.kind.name(), "name": r.name})
    }
}

fn class_ref(r: &Ref, release: &Release) -> Value {
    json!({
        "apiVersion": format!("{}/{}", r.kind.group(), release.preferred(r.kind)),
        "kind": r.kind.name(),
        "name": r.name,
    })
}

/// The object as the API server returns it at `version`.
/// The spec a MachineDeployment and a MachineSet share: replicas and the Machine template.
fn machine_set_spec(
    obj: &Obj,
    infra: &Ref,
    bootstrap: &Ref,
    replicas: u32,
    version: &str,
    release: &Release,
) -> Value {
    json!({
        "clusterName": obj.owner_cluster,
        "replicas": replicas,
        "template": {"spec": {
            "clusterName": obj.owner_cluster,
            "version": "v1.33.4",
            "bootstrap": {"configRef": reference(bootstrap, version, release)},
            "infrastructureRef": reference(infra, version, release),
        }},
    })
}

pub fn render(obj: &Obj, version: &str, release: &Release) -> Value {
    let mut meta = json!({
        "name": obj.name,
        "namespace": NAMESPACE,
        "uid": format!("00000000-0000-4000-8000-{:012x}", obj.uid),
        "resourceVersion": obj.uid.to_string(),
        "generation": 1,
        "creationTimestamp": timestamp(obj.created),
        "managedFields": [{"manager": "simulation", "operation": "Update", "apiVersion": format!("{}/{version}", obj.kind.group())}],
    });
    let m = meta.as_object_mut().expect("metadata is an object");
    if !obj.labels.is_empty() {
        m.insert("labels".into(), json!(obj.labels));
    }
    if !obj.annotations.is_empty() {
        m.insert("annotations".into(), json!(obj.annotations));
    }
    if !obj.finalizers.is_empty() {
        m.insert("finalizers".into(), json!(obj.finalizers));
    }
    if let Some(t) = obj.deleting {
        m.insert("deletionTimestamp".into(), json!(timestamp(t)));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    let mut owners = Vec::new();
    if let Some(cluster) = &obj.owner_cluster {
        owners.push(json!({
            "apiVersion": format!("{CAPI}/{}", release.preferred(Kind::Cluster)),
            "kind": "Cluster",
            "name": cluster,
            "uid": format!("c1a55e00-0000-4000-8000-{:>012}", cluster.len()),
        }));
    }
    if let Some((kind, name)) = &obj.controller {
        owners.push(json!({
            "apiVersion": format!("{}/{}", kind.group(), release.preferred(*kind)),
            "kind": kind.name(),
            "name": name,
            "uid": "0c0c0c0c-0000-4000-8000-000000000000",
            "controller": true,
            "blockOwnerDeletion": true,
        }));
    }
    if !owners.is_empty() {
        m.insert("ownerReferences".into(), Value::Array(owners));
    }

    let v1 = version == "v1beta1";
    let (spec, status) = match &obj.spec {
        Spec::Cluster { paused } => (
            json!({"paused": paused, "controlPlaneEndpoint": {"host": "192.0.2.10", "port": 6443}}),
            json!({"phase": if obj.deleting.is_some() { "Deleting" } else { "Provisioned" }}),
        ),
        Spec::Template {
            node_reuse,
            cleaning,
        } => {
            let mut inner = if obj.kind == Kind::Metal3MachineTemplate {
                json!({
                    "image": {
                        "url": "https://images.edge.internal/ubuntu-2404-kube-v1.33.4.qcow2",
                        "checksum": "https://images.edge.internal/ubuntu-2404-kube-v1.33.4.qcow2.sha256sum",
                        "checksumType": "sha256",
                    },
                    "hostSelector": {"matchLabels": {"edge.example.org/role": "storage-worker"}},
                })
            } else {
                json!({"joinConfiguration": {"nodeRegistration": {"name": "{{ ds.meta_data.name }}"}}})
            };
            if let (Some(c), Some(map)) = (cleaning, inner.as_object_mut()) {
                map.insert("automatedCleaningMode".into(), json!(c));
            }
            let mut spec = json!({"template": {"spec": inner}});
            if obj.kind == Kind::Metal3MachineTemplate {
                if let Some(map) = spec.as_object_mut() {
                    map.insert("nodeReuse".into(), json!(node_reuse));
                }
            }
            (spec, Value::Null)
        }
        Spec::MachineDeployment {
            infra,
            bootstrap,
            replicas,
            max_surge,
            max_unavailable,
        } => {
            let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}});
            let mut spec = machine_set_spec(obj, infra, bootstrap, *replicas, version, release);
            if let Some(map) = spec.as_object_mut() {
                if v1 {
                    map.insert("strategy".into(), strategy);
                } else {
                    map.insert("rollout".into(), json!({ "strategy": strategy }));
                }
            }
            (spec, json!({"replicas": replicas}))
        }
        Spec::MachineSet {
            infra,
            bootstrap,
            replicas,
            status_replicas,
        } => (
            machine_set_spec(obj, infra, bootstrap, *replicas, version, release),
            match status_replicas {
                Some(n) => json!({"replicas": n}),
                None => json!({}),
            },
        ),
        Spec::ControlPlane {
            infra,
            replicas,
            max_surge,
            legacy_ref,
        } => {
            let r = reference(infra, version, release);
            let mut spec = json!({
                "replicas": replicas,
                "version": "v1.33.4",
                "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge}},
            });
            if let Some(map) = spec.as_object_mut() {
                if !v1 {
                    map.insert(
                        "machineTemplate".into(),
                        json!({"spec": {"infrastructureRef": r}}),
                    );
                } else if *legacy_ref && obj.kind == Kind::Rke2ControlPlane {
                    map.insert("infrastructureRef".into(), r);
                } else {
                    map.insert("machineTemplate".into(), json!({ "infrastructureRef": r }));
                }
            }
            (spec, json!({"replicas": replicas}))
        }
        Spec::ClusterClass { cp_infra, workers } => {
            let workers: Vec<Value> = workers
                .iter()
                .map(|w| {
                    if v1 {
                        json!({"class": w.class, "template": {
                            "bootstrap": {"ref": class_ref(&w.bootstrap, release)},
                            "infrastructure": {"ref": class_ref(&w.infra, release)},
                        }})
                    } else {
                        json!({"class": w.class,
                            "bootstrap": {"templateRef": class_ref(&w.bootstrap, release)},
                            "infrastructure": {"templateRef": class_ref(&w.infra, release)},
                        })
                    }
                })
                .collect();
            let key = if v1 { "ref" } else { "templateRef" };
            (
                json!({
                    "controlPlane": {"machineInfrastructure": {key: class_ref(cp_infra, release)}},
                    "workers": {"machineDeployments": workers},
                }),
                Value::Null,
            )
        }
        Spec::Metal3Machine { cleaning, .. } => {
            let mut spec = json!({
                "image": {"url": "https://images.edge.internal/ubuntu-2404-kube-v1.33.4.qcow2"},
                "hostSelector": {"matchLabels": {"edge.example.org/role": "storage-worker"}},
            });
            if let (Some(c), Some(map)) = (cleaning, spec.as_object_mut()) {
                map.insert("automatedCleaningMode".into(), json!(c));
            }
            (spec, Value::Null)
        }
    };
    let mut out = json!({
        "apiVersion": format!("{}/{version}", obj.kind.group()),
        "kind": obj.kind.name(),
        "metadata": meta,
        "spec": spec,
    });
    if !status.is_null() {
        if let Some(map) = out.as_object_mut() {
            map.insert("status".into(), status);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::{
        GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    };

    fn release() -> Release {
        Release {
            capi_v1beta2: true,
            metal3_v1beta2: false,
            rke2: None,
        }
    }

    fn api_with_ms() -> Api {
        let mut api = Api::new(release());
        let mut ms = Obj::new(
            Kind::MachineSet,
            "md-1",
            Spec::MachineSet {
                infra: Ref::new(Kind::Metal3MachineTemplate, "w-1"),
                bootstrap: Ref::new(Kind::KubeadmConfigTemplate, "b-1"),
                replicas: 2,
                status_replicas: Some(2),
            },
        );
        ms.owner_cluster = Some("edge-a".into());
        api.stores[0].create(ms, 10);
        api
    }

    fn call(api: &Api, req: KubeRequest) -> Result<Value, String> {
        let mut host = SimHost {
            api: Arc::new(Mutex::new(api.clone())),
        };
        host.respond(&req)
            .map(|b| serde_json::from_slice(&b).expect("json"))
    }

    fn list(api_version: &str, kind: &str, masks: &[&str]) -> KubeRequest {
        KubeRequest::KubernetesListResourceNamespace(ListResourcesByNamespaceRequest {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: NAMESPACE.into(),
            label_selector: None,
            field_selector: None,
            field_masks: Some(masks.iter().map(|s| s.to_string()).collect()),
        })
    }

    #[test]
    fn list_in_both_shapes_with_masks() {
        let api = api_with_ms();
        let v2 = call(
            &api,
            list(
                "cluster.x-k8s.io/v1beta2",
                "MachineSet",
                &["spec.template.spec.infrastructureRef", "status.replicas"],
            ),
        )
        .unwrap();
        assert_eq!(v2["kind"], "MachineSetList");
        let item = &v2["items"][0];
        assert_eq!(
            item["spec"],
            json!({"template": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "w-1"}}}})
        );
        assert_eq!(item["status"], json!({"replicas": 2}));
        assert!(item["metadata"].get("managedFields").is_none());
        assert_eq!(item["metadata"]["ownerReferences"][0]["kind"], "Cluster");
        let v1 = call(
            &api,
            list(
                "cluster.x-k8s.io/v1beta1",
                "MachineSet",
                &["spec.template.spec.infrastructureRef"],
            ),
        )
        .unwrap();
        // CAPM3 <= 1.12 serves its templates at v1beta1 only
        assert_eq!(
            v1["items"][0]["spec"]["template"]["spec"]["infrastructureRef"]["apiVersion"],
            "infrastructure.cluster.x-k8s.io/v1beta1"
        );
    }

    #[test]
    fn host_error_texts() {
        let api = api_with_ms();
        assert_eq!(
            call(
                &api,
                list(
                    "infrastructure.cluster.x-k8s.io/v1beta2",
                    "Metal3Machine",
                    &[]
                )
            )
            .unwrap_err()
            .split(':')
            .next(),
            Some("error finding resource infrastructure.cluster.x-k8s.io/v1beta2 / Metal3Machine")
        );
        assert_eq!(
            call(
                &api,
                list(
                    "controlplane.cluster.x-k8s.io/v1beta2",
                    "RKE2ControlPlane",
                    &[]
                )
            )
            .unwrap_err(),
            "Cannot find resource controlplane.cluster.x-k8s.io/v1beta2/RKE2ControlPlane"
        );
        let get = KubeRequest::KubernetesGetResource(GetResourceRequest {
            api_version: "cluster.x-k8s.io/v1beta2".into(),
            kind: "Cluster".into(),
            name: "edge-a".into(),
            namespace: Some(NAMESPACE.into()),
            disable_cache: false,
            field_masks: None,
        });
        assert_eq!(
            call(&api, get).unwrap_err(),
            "Cannot find cluster.x-k8s.io/v1beta2/Cluster named 'edge-a' inside of namespace 'Some(\"edge-sites\")'"
        );
        // an installed kind the simulation holds no objects of
        let machines = call(&api, list("cluster.x-k8s.io/v1beta2", "Machine", &[])).unwrap();
        assert_eq!(machines["items"], json!([]));
    }

    #[test]
    fn the_crd_list_names_the_installed_kinds_at_their_served_versions() {
        let api = api_with_ms();
        let crds = call(
            &api,
            KubeRequest::KubernetesListResourceAll(ListAllResourcesRequest {
                api_version: kube::CRD_API_VERSION.into(),
                kind: kube::CRD_KIND.into(),
                label_selector: None,
                field_selector: None,
                field_masks: None,
            }),
        )
        .unwrap();
        let names: Vec<&str> = crds["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["metadata"]["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"clusterclasses.cluster.x-k8s.io"),
            "{names:?}"
        );
        // RKE2 is not installed in this release: no CRD, so the policy makes no call for it
        assert!(!names.iter().any(|n| n.contains("rke2")), "{names:?}");
        let m3mt = crds["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["spec"]["names"]["kind"] == "Metal3MachineTemplate")
            .unwrap();
        assert_eq!(
            m3mt["spec"]["versions"],
            json!([{"name": "v1beta1", "served": true, "storage": true}])
        );
    }
}
