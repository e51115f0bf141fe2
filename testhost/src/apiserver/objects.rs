//! The simulated objects of one namespace: their kinds (and which provider installs each, so
//! which versions are served), the installed releases, specs and the store an API server keeps
//! them in.

use std::collections::{BTreeMap, BTreeSet};

pub const NAMESPACE: &str = "edge-sites";
pub const CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";
pub const CLONED_FROM_GROUPKIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
pub const DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";
pub use template_cleanup_core::CLEANUP_LABEL;
pub const CLUSTER: &str = "edge-a";
/// The control plane's name.
pub const CP: &str = "edge-a-cp";
pub const CLASS: &str = "metal3-kubeadm";
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const TOPOLOGY_OWNED: &str = "topology.cluster.x-k8s.io/owned";
pub const CLUSTER_FINALIZER: &str = "cluster.cluster.x-k8s.io";
pub const MD_FINALIZER: &str = "cluster.x-k8s.io/machinedeployment";
pub const MD_TOPOLOGY_FINALIZER: &str = "machinedeployment.topology.cluster.x-k8s.io";
pub const MS_FINALIZER: &str = "cluster.x-k8s.io/machineset";
pub const MS_TOPOLOGY_FINALIZER: &str = "machineset.topology.cluster.x-k8s.io";
pub const CP_FINALIZER: &str = "controlplane.cluster.x-k8s.io";
pub const M3M_FINALIZER: &str = "metal3machine.infrastructure.cluster.x-k8s.io";
pub const HOUR: u64 = 3600;
/// The MachineDeployment controller's revision, on a MachineDeployment and each of its
/// MachineSets (internal/controllers/machinedeployment/mdutil/util.go@v1.10.10).
pub const REVISION: &str = "machinedeployment.clusters.x-k8s.io/revision";

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

/// The simulated kinds, each said once: its group, name and provider.
macro_rules! kinds {
    ($($kind:ident: $group:ident $name:literal $provider:ident,)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind {
            $($kind,)*
        }

        impl Kind {
            pub const ALL: [Kind; [$($name),*].len()] = [$(Kind::$kind),*];

            /// Group, kind and provider.
            fn installed(self) -> (&'static str, &'static str, Provider) {
                match self {
                    $(Kind::$kind => ($group, $name, Provider::$provider),)*
                }
            }
        }
    };
}

kinds! {
    Cluster: CAPI "Cluster" Capi,
    ClusterClass: CAPI "ClusterClass" Capi,
    MachineDeployment: CAPI "MachineDeployment" Capi,
    MachineSet: CAPI "MachineSet" Capi,
    Metal3Machine: INFRA "Metal3Machine" Metal3,
    KubeadmControlPlane: CONTROLPLANE "KubeadmControlPlane" Capi,
    Rke2ControlPlane: CONTROLPLANE "RKE2ControlPlane" Rke2,
    Metal3MachineTemplate: INFRA "Metal3MachineTemplate" Metal3,
    KubeadmConfigTemplate: BOOTSTRAP "KubeadmConfigTemplate" Capi,
    Rke2ConfigTemplate: BOOTSTRAP "RKE2ConfigTemplate" Rke2,
}

/// Kinds the simulated providers install but the simulation holds no objects of: listed, they
/// are served and empty.
const EMPTY_KINDS: [(&str, &str, Provider); 10] = [
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

/// Every installed kind: group, kind, provider and the simulated kind (`None`: held empty).
pub fn installed() -> impl Iterator<Item = (&'static str, &'static str, Provider, Option<Kind>)> {
    let simulated = Kind::ALL.into_iter().map(|k| {
        let (group, name, provider) = k.installed();
        (group, name, provider, Some(k))
    });
    simulated.chain(EMPTY_KINDS.into_iter().map(|(g, n, p)| (g, n, p, None)))
}

impl Kind {
    pub fn group(self) -> &'static str {
        self.installed().0
    }

    pub fn name(self) -> &'static str {
        self.installed().1
    }

    pub fn is_template(self) -> bool {
        matches!(
            self,
            Kind::Metal3MachineTemplate | Kind::KubeadmConfigTemplate | Kind::Rke2ConfigTemplate
        )
    }
}

/// Which provider releases are installed, and so which API versions each provider serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Providers {
    /// Cluster API >= 1.11 (with kubeadm bootstrap and control plane): v1beta1 and v1beta2.
    pub capi_v1beta2: bool,
    /// CAPM3 >= 1.13: v1beta1 and v1beta2 (and node reuse read from the owner's template).
    pub metal3_v1beta2: bool,
    /// RKE2 provider installed, and >= 0.22 (v1beta2).
    pub rke2: Option<bool>,
}

impl Providers {
    pub const fn new(capi_v1beta2: bool, metal3_v1beta2: bool, rke2: Option<bool>) -> Self {
        Providers {
            capi_v1beta2,
            metal3_v1beta2,
            rke2,
        }
    }

    pub fn provider_serves(&self, provider: Provider, version: &str) -> bool {
        let v2 = match provider {
            Provider::Capi => Some(self.capi_v1beta2),
            Provider::Metal3 => Some(self.metal3_v1beta2),
            // not installed: nothing served
            Provider::Rke2 => self.rke2,
        };
        v2.is_some_and(|v2| version == "v1beta1" || (version == "v1beta2" && v2))
    }

    pub fn serves(&self, kind: Kind, version: &str) -> bool {
        self.provider_serves(kind.installed().2, version)
    }

    /// `group/version` of `kind` as a client of this release names it by default.
    pub fn api_version(&self, kind: Kind) -> String {
        let version = if self.serves(kind, "v1beta2") {
            "v1beta2"
        } else {
            "v1beta1"
        };
        format!("{}/{version}", kind.group())
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
pub struct MdSpec {
    pub infra: Ref,
    pub bootstrap: Ref,
    pub replicas: u32,
    pub max_surge: u32,
    pub max_unavailable: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MsSpec {
    pub infra: Ref,
    pub bootstrap: Ref,
    pub replicas: u32,
    pub status_replicas: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CpSpec {
    pub infra: Ref,
    pub replicas: u32,
    pub max_surge: u32,
    /// RKE2 v1beta1 only: the reference sits in the deprecated `spec.infrastructureRef`.
    pub legacy_ref: bool,
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
    MachineDeployment(MdSpec),
    MachineSet(MsSpec),
    ControlPlane(CpSpec),
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

impl Spec {
    /// The templates a MachineDeployment, MachineSet or control plane points at, the
    /// infrastructure template first.
    pub fn templates(&self) -> Vec<&Ref> {
        match self {
            Spec::MachineDeployment(md) => vec![&md.infra, &md.bootstrap],
            Spec::MachineSet(ms) => vec![&ms.infra, &ms.bootstrap],
            Spec::ControlPlane(cp) => vec![&cp.infra],
            _ => Vec::new(),
        }
    }

    /// Its infrastructure template (of those [`Spec::templates`] names).
    pub fn infra(&self) -> Option<&Ref> {
        self.templates().first().copied()
    }

    /// The replicas a MachineDeployment, MachineSet or control plane asks for (0 for any other
    /// spec).
    pub fn replicas(&self) -> u32 {
        match self {
            Spec::MachineDeployment(MdSpec { replicas, .. })
            | Spec::MachineSet(MsSpec { replicas, .. })
            | Spec::ControlPlane(CpSpec { replicas, .. }) => *replicas,
            _ => 0,
        }
    }
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

    pub fn to_ref(&self) -> Ref {
        Ref::new(self.kind, self.name.clone())
    }

    pub fn cloned_from(&self) -> Option<&String> {
        self.annotations.get(CLONED_FROM_NAME)
    }

    /// The cloned-from annotations Cluster API puts on what it creates from `source`.
    pub fn set_cloned_from(&mut self, source: &Ref) {
        self.annotations
            .insert(CLONED_FROM_NAME.into(), source.name.clone());
        let group_kind = format!("{}.{}", source.kind.name(), source.kind.group());
        self.annotations
            .insert(CLONED_FROM_GROUPKIND.into(), group_kind);
    }

    /// Its revision annotation, 0 when it has none.
    pub fn revision(&self) -> u64 {
        self.annotations
            .get(REVISION)
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    }

    /// Whether its controller owner is `kind` (named `name`, when given).
    pub fn controlled_by(&self, kind: Kind, name: Option<&str>) -> bool {
        self.controller
            .as_ref()
            .is_some_and(|(k, n)| *k == kind && name.is_none_or(|name| n == name))
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

    pub fn spec_mut(&mut self, kind: Kind, name: &str) -> Option<&mut Spec> {
        self.get_mut(kind, name).map(|o| &mut o.spec)
    }

    pub fn exists(&self, r: &Ref) -> bool {
        self.get(r.kind, &r.name).is_some()
    }

    /// Whether the template `r` is a copy of the class template `source`.
    pub fn is_copy_of(&self, r: &Ref, source: &Ref) -> bool {
        self.get(r.kind, &r.name).and_then(Obj::cloned_from) == Some(&source.name)
    }

    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Obj> {
        self.objects
            .range((kind, String::new())..)
            .take_while(move |((k, _), _)| *k == kind)
            .map(|(_, o)| o)
    }

    /// The objects of `kind` that `owner` (of kind `owner_kind`) controls.
    pub fn owned<'s>(
        &'s self,
        kind: Kind,
        owner_kind: Kind,
        owner: &'s str,
    ) -> impl Iterator<Item = &'s Obj> {
        self.of_kind(kind)
            .filter(move |o| o.controlled_by(owner_kind, Some(owner)))
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
    /// finalizers, else marked.
    pub fn delete(&mut self, kind: Kind, name: &str, now: u64) {
        let key = (kind, name.to_string());
        match self.objects.get_mut(&key) {
            Some(o) if !o.finalizers.is_empty() => {
                o.deleting.get_or_insert(now);
            }
            _ => {
                self.objects.remove(&key);
            }
        }
    }

    /// A controller drops its finalizer; the object goes when it was the last one and the object
    /// is being deleted.
    pub fn drop_finalizer(&mut self, kind: Kind, name: &str, finalizer: &str) {
        let key = (kind, name.to_string());
        if let Some(o) = self.objects.get_mut(&key) {
            o.finalizers.remove(finalizer);
            if o.finalizers.is_empty() && o.deleting.is_some() {
                self.objects.remove(&key);
            }
        }
    }
}
