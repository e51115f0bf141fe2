//! What the policy knows about each kind of object, in one place.
//!
//! A template class says which DELETE requests are guarded; a referrer kind says how to read the
//! objects that can keep a template: its group, the versions the policy can read it at, the fields
//! that name a template (one path each), the other fields it reads, and what it keeps when. Field
//! masks, the lookups, the extraction of references, the messages' advice and the metadata checks
//! all derive from these tables: a referrer field is written once, here.

use std::collections::BTreeSet;

pub const CAPI_GROUP: &str = "cluster.x-k8s.io";
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const BOOTSTRAP_GROUP: &str = "bootstrap.cluster.x-k8s.io";
/// etcdadm's external etcd cluster (cluster-api-provider-etcdadm).
pub const ETCD_GROUP: &str = "etcdcluster.cluster.x-k8s.io";

/// Cluster API's two API versions: the ones a version setting can pin.
pub const V1BETA2: &str = "v1beta2";
pub const V1BETA1: &str = "v1beta1";
/// Cluster API and the providers that follow its releases: v1beta2 (stored since CAPI 1.11,
/// CAPM3 1.13, CAPRKE2 0.22) and the deprecated v1beta1.
const CAPI_VERSIONS: &[&str] = &[V1BETA2, V1BETA1];

/// The setting that pins the version a kind is read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum VersionSetting {
    Capi,
    ControlPlane,
    Metal3,
}

impl VersionSetting {
    #[cfg(test)]
    pub const ALL: [VersionSetting; 3] = [
        VersionSetting::Capi,
        VersionSetting::ControlPlane,
        VersionSetting::Metal3,
    ];

    /// The setting's name, written here only (the settings table reads it).
    pub const fn name(self) -> &'static str {
        match self {
            VersionSetting::Capi => "capiApiVersion",
            VersionSetting::ControlPlane => "controlPlaneApiVersion",
            VersionSetting::Metal3 => "metal3ApiVersion",
        }
    }
}

/// A kind the policy reads.
#[derive(Debug, PartialEq, Eq)]
pub struct Resource {
    pub kind: &'static str,
    /// The resource name that RBAC rules and webhook rules use (the CRD's `spec.names.plural`).
    pub plural: &'static str,
    pub group: &'static str,
    /// The versions the policy can read, newest first. It reads the newest one the cluster's CRD
    /// serves; metadata.yml grants each kind at each of them.
    pub versions: &'static [&'static str],
    /// The setting that can pin the version, for kinds read at v1beta2 and v1beta1.
    pub setting: Option<VersionSetting>,
    /// Every field the policy reads besides the referrer fields, metadata included. The field
    /// masks are these plus the referrer fields: the host keeps nothing else.
    pub reads: &'static [&'static str],
}

impl Resource {
    pub fn api_version(&self, version: &str) -> String {
        format!("{}/{version}", self.group)
    }
}

/// The classes of guarded templates, by who can name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TemplateClass {
    /// Infrastructure `*MachineTemplate`.
    Machine,
    /// Infrastructure `*MachinePoolTemplate`.
    MachinePool,
    /// Infrastructure `*ClusterTemplate`.
    Cluster,
    /// `*ControlPlaneTemplate`, in the control-plane group or (managed offerings) the
    /// infrastructure group.
    ControlPlane,
    /// Bootstrap `*ConfigTemplate`.
    Bootstrap,
    /// Infrastructure `*RemediationTemplate`, named by health checks.
    Remediation,
    /// CAPM3's `Metal3DataTemplate`, named by Metal3 machine templates, machines, data claims and
    /// datas (the one guarded kind that is not a suffix).
    Data,
}

impl TemplateClass {
    #[cfg(test)]
    pub const ALL: [TemplateClass; 7] = [
        TemplateClass::Machine,
        TemplateClass::MachinePool,
        TemplateClass::Cluster,
        TemplateClass::ControlPlane,
        TemplateClass::Bootstrap,
        TemplateClass::Remediation,
        TemplateClass::Data,
    ];

    /// The groups whose kinds the catalogue does not know are scanned for references to a
    /// template of this class. Control planes (and etcdadm's etcd cluster) name machine templates,
    /// and Kairos' its bootstrap template; every other class is named by Cluster API's own kinds
    /// or Metal3's, which the catalogue knows whole. Scanning only these groups keeps the scan
    /// to a few kinds, where every infrastructure group would list dozens.
    pub fn scanned_groups(self) -> &'static [&'static str] {
        match self {
            TemplateClass::Machine | TemplateClass::Bootstrap => &[CONTROL_PLANE_GROUP, ETCD_GROUP],
            _ => &[],
        }
    }
}

/// Which groups a guarded suffix applies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Groups {
    /// `infrastructure.cluster.x-k8s.io` and every group ending in `.infrastructure.cluster.x-k8s.io`
    /// (vSphere's supervisor mode uses `vmware.infrastructure.cluster.x-k8s.io`).
    Infrastructure,
    Bootstrap,
    ControlPlane,
}

impl Groups {
    fn contains(self, group: &str) -> bool {
        match self {
            Groups::Infrastructure => {
                group == INFRASTRUCTURE_GROUP
                    || group
                        .strip_suffix(INFRASTRUCTURE_GROUP)
                        .is_some_and(|prefix| prefix.ends_with('.') && prefix.len() > 1)
            }
            Groups::Bootstrap => group == BOOTSTRAP_GROUP,
            Groups::ControlPlane => group == CONTROL_PLANE_GROUP,
        }
    }
}

/// A guarded kind suffix in some groups.
#[derive(Debug)]
pub struct GuardedSuffix {
    pub groups: Groups,
    pub suffix: &'static str,
    pub class: TemplateClass,
}

const fn guarded(groups: Groups, suffix: &'static str, class: TemplateClass) -> GuardedSuffix {
    GuardedSuffix {
        groups,
        suffix,
        class,
    }
}

/// The guarded templates: DELETE of a kind matching one of these is checked, every other request
/// is accepted without a lookup. No suffix is a suffix of another in the same groups.
pub const GUARDED: [GuardedSuffix; 7] = [
    guarded(
        Groups::Infrastructure,
        "MachineTemplate",
        TemplateClass::Machine,
    ),
    guarded(
        Groups::Infrastructure,
        "MachinePoolTemplate",
        TemplateClass::MachinePool,
    ),
    guarded(
        Groups::Infrastructure,
        "ClusterTemplate",
        TemplateClass::Cluster,
    ),
    guarded(
        Groups::Infrastructure,
        "ControlPlaneTemplate",
        TemplateClass::ControlPlane,
    ),
    guarded(
        Groups::Infrastructure,
        "RemediationTemplate",
        TemplateClass::Remediation,
    ),
    guarded(
        Groups::Bootstrap,
        "ConfigTemplate",
        TemplateClass::Bootstrap,
    ),
    guarded(
        Groups::ControlPlane,
        "ControlPlaneTemplate",
        TemplateClass::ControlPlane,
    ),
];

/// CAPM3's data template kind, guarded by its whole name.
pub const METAL3_DATA_TEMPLATE: &str = "Metal3DataTemplate";

/// The class of a guarded template kind; `None` for every kind the policy does not guard. A
/// suffix alone (a kind named `MachineTemplate`) is not a provider's kind.
pub fn template_class(group: &str, kind: &str) -> Option<TemplateClass> {
    if group == INFRASTRUCTURE_GROUP && kind == METAL3_DATA_TEMPLATE {
        return Some(TemplateClass::Data);
    }
    GUARDED
        .iter()
        .find(|g| {
            g.groups.contains(group) && kind.len() > g.suffix.len() && kind.ends_with(g.suffix)
        })
        .map(|g| g.class)
}

/// The class of a guarded template, from the plural resource name a webhook rule uses (the kind
/// in lower case plus "s"): the metadata checks use it.
#[cfg(test)]
pub fn template_class_of_plural(group: &str, plural: &str) -> Option<TemplateClass> {
    if group == INFRASTRUCTURE_GROUP && plural == plural_of(METAL3_DATA_TEMPLATE).to_lowercase() {
        return Some(TemplateClass::Data);
    }
    GUARDED
        .iter()
        .find(|g| {
            let suffix = plural_of(g.suffix).to_ascii_lowercase();
            g.groups.contains(group) && plural.len() > suffix.len() && plural.ends_with(&suffix)
        })
        .map(|g| g.class)
}

/// The project's one pluralizer: a kind plus "s" ("es" after "ss"), as messages write it
/// ("ClusterClasses"). In lower case it is the resource plural of every kind the catalogue holds
/// (a test checks them), as Kubernetes derives it for a CRD that names none.
pub fn plural_of(kind: &str) -> String {
    if kind.ends_with("ss") {
        format!("{kind}es")
    } else {
        format!("{kind}s")
    }
}

/// What the rejection advises when a referrer of this kind keeps a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Advice {
    Rollout,
    ClusterClass,
    HealthCheck,
    NodeReuse,
    DataTemplate,
}

/// What a referrer that is being deleted still keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhileDeleting {
    /// Nothing: its deletion may wait for its templates to go (the topology controller deletes a
    /// MachineSet's or MachineDeployment's templates before it drops its finalizer).
    KeepsNothing,
    /// What it names, until it is gone: nothing waits for the template to be deleted.
    Keeps,
    /// A MachineSet: a `nodeReuse: true` Metal3MachineTemplate while it still has machines.
    KeepsNodeReuseWhileItHasMachines,
}

/// The kind a reference at `field` names when it gives none: its controller fills it in, or the
/// field's type has only a name.
#[derive(Debug, PartialEq, Eq)]
pub struct Implied {
    pub field: &'static str,
    pub group: &'static str,
    pub kind: &'static str,
}

/// A kind of object that can keep a template.
#[derive(Debug, PartialEq, Eq)]
pub struct ReferrerKind {
    pub resource: Resource,
    /// The fields that name a template, one path each. `name[key]` is a list whose items are told
    /// apart by their `key` field. The field masks and the extraction both come from these.
    pub fields: &'static [&'static str],
    /// The fields among `fields` whose references may leave out the kind, and what they name.
    pub implied: &'static [Implied],
    /// Names its template through the cloned-from annotations instead of fields.
    pub cloned_from: bool,
    /// Creates machines itself, so it is a new machine's owner at creation (the mutation's
    /// fallback when the cloned-from annotations are missing).
    pub creates_machines: bool,
    /// The template classes its fields can name.
    pub keeps: &'static [TemplateClass],
    /// Keeps a machine template only when the template sets `spec.nodeReuse: true` (CAPM3 reads
    /// nothing else of it when the machine is deleted); templates of other classes as usual.
    pub only_node_reuse: bool,
    pub while_deleting: WhileDeleting,
    /// Still keeps its template while its Cluster is being deleted or gone (row 6 skips it).
    pub kept_through_cluster_deletion: bool,
    /// Read as Cluster API's MachineSet controller reads a MachineSet: whether it needs its
    /// templates follows its MachineDeployment, by revision (see `decision::read_by_revision`).
    pub by_revision: bool,
    /// Its controller reads the template only in the namespace the reference resolves to (the
    /// reference's, else its own), never in its own when the reference names another. Without
    /// it, a kind listed across namespaces keeps the template in either: releases that read one
    /// or the other serve the same versions.
    pub reference_namespace_only: bool,
    /// The versions at which its controller reads a template at the namespace the reference
    /// gives (an empty one is the referrer's own): read there, the kind is listed cluster-wide
    /// and a reference names a template only in the namespace it resolves to. At any other
    /// version the template is read in the referrer's own namespace.
    pub follows_reference_namespace_at: &'static [&'static str],
    pub advice: Advice,
}

impl ReferrerKind {
    pub fn kind(&self) -> &'static str {
        self.resource.kind
    }

    /// Whether listing this kind can find something that keeps a template of `class`.
    pub fn can_keep(&self, class: TemplateClass, node_reuse: bool) -> bool {
        self.keeps.contains(&class)
            && (class != TemplateClass::Machine || node_reuse || !self.only_node_reuse)
    }

    /// Whether, read at `version`, its references may name a template in another namespace.
    pub fn follows_reference_namespace(&self, version: &str) -> bool {
        self.follows_reference_namespace_at.contains(&version)
    }

    /// Whether, read at `version`, its controller is known to read its MachineDeployment before
    /// any template, and to stop when that is gone: Cluster API 1.9 and newer (`Reconcile`
    /// returns `getOwnerMachineDeployment`'s error first, core/reconcilers/machineset/
    /// machineset_controller.go@v1.14.0, internal/controllers/machineset@v1.10.10), the
    /// releases that serve `v1beta2` from 1.11. At `v1beta1` the release may be 1.8 or older,
    /// which reads the template first (`reconcileExternalTemplateReference`@v1.8.0), or 1.7
    /// and older, which fail every reconcile on a missing template.
    pub fn owner_read_first(&self, version: &str) -> bool {
        self.by_revision && version == V1BETA2
    }

    /// Whether its revision annotation is read: a MachineSet's, and its MachineDeployment's,
    /// which says which MachineSet is current.
    pub fn reads_revision(&self) -> bool {
        self.by_revision
            || (self.resource.kind == "MachineDeployment" && self.resource.group == CAPI_GROUP)
    }

    /// The field masks a list of this kind sends: what it reads and the plain paths of its
    /// fields, each list's item key included, sorted.
    pub fn masks(&self) -> BTreeSet<String> {
        let mut masks = masks_of(&self.resource);
        for field in self.fields {
            let mut plain = String::new();
            for segment in field.split('.') {
                let (name, key) = split_key(segment);
                if !plain.is_empty() {
                    plain.push('.');
                }
                plain.push_str(name);
                if let Some(key) = key {
                    masks.insert(format!("{plain}.{key}"));
                }
            }
            masks.insert(plain);
        }
        masks
    }
}

/// The field masks of a kind read for its own fields only.
pub fn masks_of(resource: &Resource) -> BTreeSet<String> {
    resource.reads.iter().map(|r| r.to_string()).collect()
}

/// `machineDeployments[class]` -> (`machineDeployments`, Some(`class`)).
pub fn split_key(segment: &str) -> (&str, Option<&str>) {
    match segment.strip_suffix(']').and_then(|s| s.split_once('[')) {
        Some((name, key)) => (name, Some(key)),
        None => (segment, None),
    }
}

/// What every referrer reads of its metadata: its name, whether it is being deleted and the
/// `cluster.x-k8s.io/cluster-name` label (the Cluster it belongs to, for row 6).
const META: [&str; 3] = [
    "metadata.deletionTimestamp",
    "metadata.labels",
    "metadata.name",
];

const fn resource(
    kind: &'static str,
    plural: &'static str,
    group: &'static str,
    versions: &'static [&'static str],
    setting: Option<VersionSetting>,
    reads: &'static [&'static str],
) -> Resource {
    Resource {
        kind,
        plural,
        group,
        versions,
        setting,
        reads,
    }
}

/// The fields a scan of a kind the catalogue does not know reads: the referrer metadata and the
/// whole spec, where any reference may sit.
pub const SCAN_MASKS: [&str; 4] = [
    "metadata.deletionTimestamp",
    "metadata.labels",
    "metadata.name",
    "spec",
];

/// Metal3Machines: their metadata (the cloned-from annotations) and `spec.dataTemplate`.
pub const METAL3_MACHINE: Resource = resource(
    "Metal3Machine",
    "metal3machines",
    INFRASTRUCTURE_GROUP,
    CAPI_VERSIONS,
    Some(VersionSetting::Metal3),
    &[
        "metadata.annotations",
        "metadata.deletionTimestamp",
        "metadata.labels",
        "metadata.name",
    ],
);

/// The template a new Metal3Machine is cloned from, read by the mutation; listed as a referrer
/// of Metal3DataTemplates.
pub const METAL3_MACHINE_TEMPLATE: Resource = resource(
    "Metal3MachineTemplate",
    "metal3machinetemplates",
    INFRASTRUCTURE_GROUP,
    CAPI_VERSIONS,
    Some(VersionSetting::Metal3),
    &[
        "metadata.deletionTimestamp",
        "metadata.labels",
        "metadata.name",
        "spec.nodeReuse",
        "spec.template.spec.automatedCleaningMode",
    ],
);

/// CAPM3's claim on a data template, one per Metal3Machine.
pub const METAL3_DATA_CLAIM: Resource = resource(
    "Metal3DataClaim",
    "metal3dataclaims",
    INFRASTRUCTURE_GROUP,
    CAPI_VERSIONS,
    Some(VersionSetting::Metal3),
    &META,
);

/// The data CAPM3 renders from a data template for a claim.
pub const METAL3_DATA: Resource = resource(
    "Metal3Data",
    "metal3datas",
    INFRASTRUCTURE_GROUP,
    CAPI_VERSIONS,
    Some(VersionSetting::Metal3),
    &META,
);

/// Clusters: listed for their topology's health checks, read by name for row 6.
pub const CLUSTER: Resource = resource(
    "Cluster",
    "clusters",
    CAPI_GROUP,
    CAPI_VERSIONS,
    Some(VersionSetting::Capi),
    &META,
);

/// The cluster's CRDs: which kinds are installed and at which versions they are served. Listed
/// once per request, cluster-wide.
pub const CRD: Resource = resource(
    "CustomResourceDefinition",
    "customresourcedefinitions",
    "apiextensions.k8s.io",
    &["v1"],
    None,
    &[
        "metadata.name",
        "spec.group",
        "spec.names.kind",
        "spec.names.plural",
        "spec.versions.name",
        "spec.versions.served",
    ],
);

/// The referrer entry of a catalogue kind.
pub fn referrer_of(resource: &Resource) -> Option<&'static ReferrerKind> {
    REFERRERS.iter().find(|r| r.resource == *resource)
}

/// The referrer entry of the catalogue kind named `kind`.
pub fn referrer_named(kind: &str) -> Option<&'static ReferrerKind> {
    REFERRERS.iter().find(|r| r.kind() == kind)
}

/// The Cluster referrer kind, whose masks the row 6 reads share (one cache in the policy server).
/// Found by kind, not by position; the table holds it (a test checks it).
pub fn cluster_kind() -> &'static ReferrerKind {
    referrer_of(&CLUSTER).unwrap_or(&REFERRERS[0])
}

/// Every kind the policy reads, once each: what metadata.yml's `contextAwareResources` and the
/// RBAC example must grant at each of its versions.
pub fn resources_read() -> impl Iterator<Item = &'static Resource> {
    REFERRERS.iter().map(|r| &r.resource).chain([&CRD])
}

/// Every kind the Metal3Machine mutation reads, once each: the CRDs, the kinds that create
/// machines (a new machine's owner, read when its cloned-from annotations are missing) and
/// Metal3MachineTemplates. What the mutation's example policy lists at each of their versions.
pub fn resources_read_by_the_mutation() -> impl Iterator<Item = &'static Resource> {
    REFERRERS
        .iter()
        .filter(|r| r.creates_machines)
        .map(|r| &r.resource)
        .chain([&METAL3_MACHINE_TEMPLATE, &CRD])
}

/// Kinds in a scanned group that name no machine or bootstrap template: control planes that run
/// no machines (hosted in the management cluster, or managed by a cloud) and the parts of such a
/// control plane. Known whole and never scanned, so that installing one does not make every
/// machine-template delete wait for a grant. From their API types:
/// - k0sproject/k0smotron@v2.1.0 `api/controlplane/v1beta2/k0smotron_types.go`;
/// - clastix/cluster-api-control-plane-provider-kamaji@v0.20.0
///   `api/v1alpha2/kamajicontrolplane_types.go`;
/// - kubernetes-sigs/cluster-api-provider-aws@v2.11.1 `controlplane/eks/api/v1beta2/
///   awsmanagedcontrolplane_types.go` and `controlplane/rosa/api/v1beta2/rosacontrolplane_types.go`
///   (its references are LocalObjectReferences to roles, secrets and networks);
/// - teutonet/cluster-api-provider-hosted-control-plane@v1.7.2
///   `api/v1alpha1/hostedcontrolplane_types.go` (v1alpha1: version, replicas, the deployment,
///   gateway, konnectivity, kube-proxy, CoreDNS, etcd, OIDC and certificate settings; its one
///   reference, `gateway`, is a name and a namespace);
/// - kubernetes-sigs/cluster-api-provider-nested@4d19ac60 (v0.1.0 and after)
///   `controlplane/nested/api/v1alpha4/nestedcontrolplane_types.go` (ObjectReferences to its
///   NestedEtcd, NestedAPIServer and NestedControllerManager), `nestedetcd_types.go`,
///   `nestedapiserver_types.go` and `nestedcontrollermanager_types.go` (a `NestedComponentSpec`
///   of addon settings, resources and replicas, `nestedcomponent_types.go`);
/// - sapcc/cluster-api-control-plane-provider-kubernikus@487baba1
///   `api/v1alpha1/kubernikuscontrolplane_types.go` (a version only: SAP's hosted Kubernikus);
/// - butlerdotdev/cluster-api-control-plane-provider-steward@54c37581
///   `api/v1alpha1/stewardcontrolplane_types.go` (a hosted control plane: datastore, addons,
///   components, network and deployment settings; its references are Gateway parents).
pub const NAME_NO_TEMPLATE: [(&str, &str); 11] = [
    (CONTROL_PLANE_GROUP, "AWSManagedControlPlane"),
    (CONTROL_PLANE_GROUP, "HostedControlPlane"),
    (CONTROL_PLANE_GROUP, "K0smotronControlPlane"),
    (CONTROL_PLANE_GROUP, "KamajiControlPlane"),
    (CONTROL_PLANE_GROUP, "KubernikusControlPlane"),
    (CONTROL_PLANE_GROUP, "NestedAPIServer"),
    (CONTROL_PLANE_GROUP, "NestedControlPlane"),
    (CONTROL_PLANE_GROUP, "NestedControllerManager"),
    (CONTROL_PLANE_GROUP, "NestedEtcd"),
    (CONTROL_PLANE_GROUP, "ROSAControlPlane"),
    (CONTROL_PLANE_GROUP, "StewardControlPlane"),
];

/// Whether the catalogue knows `kind` of `group` whole: a kind it reads, a guarded template, or a
/// kind that names no template.
pub fn is_known(group: &str, kind: &str) -> bool {
    template_class(group, kind).is_some()
        || NAME_NO_TEMPLATE.contains(&(group, kind))
        || is_read(group, kind)
}

/// Whether the policy reads `kind` of `group` field by field (or lists it, the CRDs).
pub fn is_read(group: &str, kind: &str) -> bool {
    resources_read().any(|r| r.group == group && r.kind == kind)
}

mod providers;
mod referrers;
pub use providers::{PROVIDERS, Provider};
pub use referrers::REFERRERS;

#[cfg(test)]
mod tests;
