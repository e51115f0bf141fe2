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

    pub fn name(self) -> &'static str {
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
}

impl TemplateClass {
    #[cfg(test)]
    pub const ALL: [TemplateClass; 6] = [
        TemplateClass::Machine,
        TemplateClass::MachinePool,
        TemplateClass::Cluster,
        TemplateClass::ControlPlane,
        TemplateClass::Bootstrap,
        TemplateClass::Remediation,
    ];
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

/// The class of a guarded template kind; `None` for every kind the policy does not guard. A
/// suffix alone (a kind named `MachineTemplate`) is not a provider's kind.
pub fn template_class(group: &str, kind: &str) -> Option<TemplateClass> {
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

/// A kind of object that can keep a template.
#[derive(Debug, PartialEq, Eq)]
pub struct ReferrerKind {
    pub resource: Resource,
    /// The fields that name a template, one path each. `name[key]` is a list whose items are told
    /// apart by their `key` field. The field masks and the extraction both come from these.
    pub fields: &'static [&'static str],
    /// Names its template through the cloned-from annotations instead of fields.
    pub cloned_from: bool,
    /// Creates machines itself, so it is a new machine's owner at creation (the mutation's
    /// fallback when the cloned-from annotations are missing).
    pub creates_machines: bool,
    /// The template classes its fields can name.
    pub keeps: &'static [TemplateClass],
    /// Keeps a template only when the template sets `spec.nodeReuse: true` (CAPM3 reads nothing
    /// else of it when the machine is deleted).
    pub only_node_reuse: bool,
    pub while_deleting: WhileDeleting,
    /// Still keeps its template while its Cluster is being deleted or gone (row 6 skips it).
    pub kept_through_cluster_deletion: bool,
    /// A MachineSet scaled to zero with no machines left keeps nothing (unless
    /// `countScaledDownMachineSets`).
    pub scaled_down_keeps_nothing: bool,
    pub advice: Advice,
}

impl ReferrerKind {
    pub fn kind(&self) -> &'static str {
        self.resource.kind
    }

    /// Whether listing this kind can find something that keeps a template of `class`.
    pub fn can_keep(&self, class: TemplateClass, node_reuse: bool) -> bool {
        self.keeps.contains(&class) && (node_reuse || !self.only_node_reuse)
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

/// A control plane (or etcdadm's etcd cluster): keeps its current machine template until it is
/// gone, also while it and its Cluster are being deleted. KubeadmControlPlane 1.12.0 to 1.12.5
/// hangs in deletion without it (cluster-api issue 13536, fixed by PR 13558 in 1.12.6 and 1.13.0,
/// `controlplane/kubeadm/internal/filters.go`); CAPRKE2 0.25.0 the same
/// (cluster-api-provider-rke2 issue 1004, PR 1007). Nothing waits for a control plane's template
/// to be deleted, so keeping it cannot deadlock; the garbage collector deletes it once the
/// Cluster is gone.
const fn control_plane(
    kind: &'static str,
    plural: &'static str,
    group: &'static str,
    versions: &'static [&'static str],
    setting: Option<VersionSetting>,
    fields: &'static [&'static str],
) -> ReferrerKind {
    ReferrerKind {
        resource: resource(kind, plural, group, versions, setting, &META),
        fields,
        cloned_from: false,
        creates_machines: true,
        keeps: &[TemplateClass::Machine],
        only_node_reuse: false,
        while_deleting: WhileDeleting::Keeps,
        kept_through_cluster_deletion: true,
        scaled_down_keeps_nothing: false,
        advice: Advice::Rollout,
    }
}

/// Health checks name remediation templates; nothing waits for one to be deleted, and a
/// health check being deleted remediates nothing more.
const fn health_check(resource: Resource, fields: &'static [&'static str]) -> ReferrerKind {
    ReferrerKind {
        resource,
        fields,
        cloned_from: false,
        creates_machines: false,
        keeps: &[TemplateClass::Remediation],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::HealthCheck,
    }
}

/// MachineDeployment, MachineSet: the templates of their machines.
const MACHINE_SET_FIELDS: &[&str] = &[
    "spec.template.spec.bootstrap.configRef",
    "spec.template.spec.infrastructureRef",
];

/// Every referrer kind, in the order lookups run and messages list them.
pub static REFERRERS: [ReferrerKind; 16] = [
    ReferrerKind {
        resource: resource(
            "MachineDeployment",
            "machinedeployments",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &[
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
            ],
        ),
        fields: MACHINE_SET_FIELDS,
        cloned_from: false,
        creates_machines: false,
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::Rollout,
    },
    // A MachineSet being deleted keeps its finalizer until its machines are gone, and CAPM3 >= 1.13
    // reads node reuse from the owning MachineSet's infrastructureRef when it deletes a
    // Metal3Machine (cluster-api-provider-metal3 PR 3168, `baremetal/metal3machine_manager.go`).
    // CAPI refreshes `status.replicas` while the MachineSet is being deleted.
    ReferrerKind {
        resource: resource(
            "MachineSet",
            "machinesets",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &[
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
                "spec.replicas",
                "status.replicas",
            ],
        ),
        fields: MACHINE_SET_FIELDS,
        cloned_from: false,
        creates_machines: true,
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNodeReuseWhileItHasMachines,
        kept_through_cluster_deletion: false,
        scaled_down_keeps_nothing: true,
        advice: Advice::Rollout,
    },
    control_plane(
        "KubeadmControlPlane",
        "kubeadmcontrolplanes",
        CONTROL_PLANE_GROUP,
        CAPI_VERSIONS,
        Some(VersionSetting::ControlPlane),
        &[
            "spec.machineTemplate.infrastructureRef",
            "spec.machineTemplate.spec.infrastructureRef",
        ],
    ),
    // v1beta1 still has the deprecated `spec.infrastructureRef`: both are checked.
    control_plane(
        "RKE2ControlPlane",
        "rke2controlplanes",
        CONTROL_PLANE_GROUP,
        CAPI_VERSIONS,
        Some(VersionSetting::ControlPlane),
        &[
            "spec.infrastructureRef",
            "spec.machineTemplate.infrastructureRef",
            "spec.machineTemplate.spec.infrastructureRef",
        ],
    ),
    // Each control plane's kind, versions and field as its own API types give them.
    // siderolabs/cluster-api-control-plane-provider-talos@v0.5.12 api/v1alpha3/taloscontrolplane_types.go
    control_plane(
        "TalosControlPlane",
        "taloscontrolplanes",
        CONTROL_PLANE_GROUP,
        &["v1alpha3"],
        None,
        &["spec.infrastructureTemplate"],
    ),
    // canonical/cluster-api-control-plane-provider-microk8s@v0.6.11 api/v1beta1/microk8scontrolplane_types.go
    control_plane(
        "MicroK8sControlPlane",
        "microk8scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA1],
        None,
        &["spec.machineTemplate.infrastructureTemplate"],
    ),
    // canonical/cluster-api-k8s@v0.6.1 controlplane/api/v1beta2/ck8scontrolplane_types.go (the
    // provider's own v1beta2, an ObjectReference under `infrastructureTemplate`)
    control_plane(
        "CK8sControlPlane",
        "ck8scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA2],
        None,
        &["spec.machineTemplate.infrastructureTemplate"],
    ),
    // k0sproject/k0smotron@v2.1.0 api/controlplane/v1beta2/k0s_types.go (v1beta1 reuses the type)
    control_plane(
        "K0sControlPlane",
        "k0scontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA2, V1BETA1],
        None,
        &["spec.machineTemplate.infrastructureRef"],
    ),
    // k3s-io/cluster-api-k3s@v0.3.1 controlplane/api/v1beta1 (top-level `infrastructureTemplate`)
    // and v1beta2 (`machineTemplate.infrastructureRef`) kthreescontrolplane_types.go
    control_plane(
        "KThreesControlPlane",
        "kthreescontrolplanes",
        CONTROL_PLANE_GROUP,
        &[V1BETA2, V1BETA1],
        None,
        &[
            "spec.infrastructureTemplate",
            "spec.machineTemplate.infrastructureRef",
        ],
    ),
    // verrazzano/cluster-api-provider-ocne@v1.7.0 controlplane/ocne/api/v1alpha1/ocne_control_plane_types.go
    control_plane(
        "OCNEControlPlane",
        "ocnecontrolplanes",
        CONTROL_PLANE_GROUP,
        &["v1alpha1"],
        None,
        &["spec.machineTemplate.infrastructureRef"],
    ),
    // kairos-io/cluster-api-provider-kairos@v0.1.0-alpha.2 api/controlplane/v1beta2/
    // kairoscontrolplane_types.go: its machine template and its own bootstrap template.
    ReferrerKind {
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        ..control_plane(
            "KairosControlPlane",
            "kairoscontrolplanes",
            CONTROL_PLANE_GROUP,
            &[V1BETA2],
            None,
            &[
                "spec.kairosConfigTemplate",
                "spec.machineTemplate.infrastructureRef",
            ],
        )
    },
    // aws/etcdadm-controller@v1.0.28 api/v1beta1 and api/v1alpha3 etcdadmcluster_types.go
    control_plane(
        "EtcdadmCluster",
        "etcdadmclusters",
        ETCD_GROUP,
        &[V1BETA1, "v1alpha3"],
        None,
        &["spec.infrastructureTemplate"],
    ),
    ReferrerKind {
        resource: resource(
            "ClusterClass",
            "clusterclasses",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &META,
        ),
        // v1beta1 `ref` and `machineHealthCheck`, v1beta2 `templateRef` and `healthCheck`.
        fields: &[
            "spec.controlPlane.healthCheck.remediation.templateRef",
            "spec.controlPlane.machineHealthCheck.remediationTemplate",
            "spec.controlPlane.machineInfrastructure.ref",
            "spec.controlPlane.machineInfrastructure.templateRef",
            "spec.controlPlane.ref",
            "spec.controlPlane.templateRef",
            "spec.infrastructure.ref",
            "spec.infrastructure.templateRef",
            "spec.workers.machineDeployments[class].bootstrap.templateRef",
            "spec.workers.machineDeployments[class].healthCheck.remediation.templateRef",
            "spec.workers.machineDeployments[class].infrastructure.templateRef",
            "spec.workers.machineDeployments[class].machineHealthCheck.remediationTemplate",
            "spec.workers.machineDeployments[class].template.bootstrap.ref",
            "spec.workers.machineDeployments[class].template.infrastructure.ref",
            "spec.workers.machinePools[class].bootstrap.templateRef",
            "spec.workers.machinePools[class].infrastructure.templateRef",
            "spec.workers.machinePools[class].template.bootstrap.ref",
            "spec.workers.machinePools[class].template.infrastructure.ref",
        ],
        cloned_from: false,
        creates_machines: false,
        keeps: &[
            TemplateClass::Machine,
            TemplateClass::MachinePool,
            TemplateClass::Cluster,
            TemplateClass::ControlPlane,
            TemplateClass::Bootstrap,
            TemplateClass::Remediation,
        ],
        only_node_reuse: false,
        while_deleting: WhileDeleting::KeepsNothing,
        kept_through_cluster_deletion: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::ClusterClass,
    },
    // Without its remediation template the MachineHealthCheck controller stops remediating every
    // unhealthy machine of the check (cluster-api `internal/controllers/machinehealthcheck/
    // machinehealthcheck_controller.go`, patchUnhealthyTargets).
    health_check(
        resource(
            "MachineHealthCheck",
            "machinehealthchecks",
            CAPI_GROUP,
            CAPI_VERSIONS,
            Some(VersionSetting::Capi),
            &[
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
            ],
        ),
        &["spec.remediation.templateRef", "spec.remediationTemplate"],
    ),
    // A Cluster's topology overrides its class's health checks; the topology controller resolves
    // their templates in the Cluster's namespace.
    health_check(
        CLUSTER,
        &[
            "spec.topology.controlPlane.healthCheck.remediation.templateRef",
            "spec.topology.controlPlane.machineHealthCheck.remediationTemplate",
            "spec.topology.workers.machineDeployments[name].healthCheck.remediation.templateRef",
            "spec.topology.workers.machineDeployments[name].machineHealthCheck.remediationTemplate",
        ],
    ),
    // CAPM3 <= 1.12 reads node reuse from the template named by the machine's cloned-from
    // annotation when it deletes the machine; the machine's deletion never waits for the template.
    ReferrerKind {
        resource: METAL3_MACHINE,
        fields: &[],
        cloned_from: true,
        creates_machines: false,
        keeps: &[TemplateClass::Machine],
        only_node_reuse: true,
        while_deleting: WhileDeleting::Keeps,
        kept_through_cluster_deletion: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::NodeReuse,
    },
];

/// Metal3Machines: only their metadata matters (the cloned-from annotations).
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

/// The template a new Metal3Machine is cloned from, read by the mutation.
pub const METAL3_MACHINE_TEMPLATE: Resource = resource(
    "Metal3MachineTemplate",
    "metal3machinetemplates",
    INFRASTRUCTURE_GROUP,
    CAPI_VERSIONS,
    Some(VersionSetting::Metal3),
    &[
        "metadata.name",
        "spec.nodeReuse",
        "spec.template.spec.automatedCleaningMode",
    ],
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

/// Where the Cluster referrer sits in [`REFERRERS`] (a test checks it).
const CLUSTER_REFERRER: usize = 14;

/// The Cluster referrer kind, whose masks the row 6 reads share (one cache in the policy server).
pub fn cluster_kind() -> &'static ReferrerKind {
    &REFERRERS[CLUSTER_REFERRER]
}

/// Every kind the policy reads, each at each of its versions: what metadata.yml's
/// `contextAwareResources` and the RBAC example must grant.
#[cfg(test)]
pub fn resources_read() -> impl Iterator<Item = &'static Resource> {
    REFERRERS
        .iter()
        .map(|r| &r.resource)
        .chain([&METAL3_MACHINE_TEMPLATE, &CRD])
}

#[cfg(test)]
mod tests;
