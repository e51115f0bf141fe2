//! A minimal typed view of the Cluster API objects the policy reads ([`Object`], one view for
//! every kind), the admission payload, and the template being deleted.
//!
//! The view holds only the fields a decision reads and accepts both the v1beta1 and the v1beta2
//! shape, because the API server converts every object to the version a list asks for and users
//! pick that version in the settings. Every field defaults when absent (or null), and every other
//! field is skipped unread, which keeps a list of thousands of objects cheap to decode.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::catalogue::{self, TemplateClass, CAPI_GROUP, INFRASTRUCTURE_GROUP};
use crate::error::Error;

/// Annotation set by CAPI on every object cloned from a template: the template's name.
pub const CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";
/// Annotation set next to [`CLONED_FROM_NAME`]: `Kind.group` of the template.
pub const CLONED_FROM_GROUPKIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
/// Annotation `clusterctl move` puts on every object right before deleting it.
pub const DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";

/// Treats an explicit `null` like an absent field.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// The group part of an `apiVersion` (`""` for the core group `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version
        .split_once('/')
        .map_or("", |(group, _version)| group)
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Metadata {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub namespace: String,
    pub deletion_timestamp: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
    #[serde(deserialize_with = "nullable")]
    pub owner_references: Vec<OwnerReference>,
}

impl Metadata {
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(deserialize_with = "nullable")]
    pub api_version: String,
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

/// A reference to a template in any of the shapes CAPI uses: v1beta1 `ObjectReference`
/// (apiVersion), v1beta2 `ContractVersionedObjectReference` (apiGroup) and v1beta2
/// `ClusterClassTemplateReference` (apiVersion).
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: Option<String>,
    pub api_group: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

impl ObjectRef {
    /// The group the reference names, if it names one.
    pub fn group(&self) -> Option<&str> {
        match (&self.api_group, &self.api_version) {
            (Some(group), _) if !group.is_empty() => Some(group),
            (_, Some(version)) if !version.is_empty() => Some(group_of(version)),
            _ => None,
        }
    }
}

/// Every object the policy reads, as one view: the union of the paths it reads of each kind.
/// One view means one decoder in the module (the size budget); no two kinds use one path with
/// different types, and a path a kind does not have simply stays at its default.
///
/// - MachineDeployment, MachineSet: `spec.replicas`, `spec.template.spec.{infrastructureRef,
///   bootstrap.configRef}`, `status.replicas`;
/// - KubeadmControlPlane, RKE2ControlPlane: `spec.machineTemplate.infrastructureRef` (v1beta1),
///   `spec.machineTemplate.spec.infrastructureRef` (v1beta2), `spec.infrastructureRef` (RKE2's
///   deprecated field);
/// - ClusterClass: `spec.infrastructure`, `spec.controlPlane`, `spec.workers`;
/// - Metal3MachineTemplate: `spec.nodeReuse`, `spec.template.spec.automatedCleaningMode`;
/// - Metal3Machine, Cluster, the template being deleted: metadata.
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct Object {
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    pub metadata: Metadata,
    pub spec: Spec,
    pub status: ReplicaStatus,
}

/// The kinds' views are the one [`Object`]; the names say what a caller reads.
pub type MachineSetLike = Object;
pub type ControlPlane = Object;
pub type ClusterClass = Object;
pub type MetadataOnly = Object;
pub type Metal3MachineTemplate = Object;

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Spec {
    pub replicas: Option<i64>,
    /// MachineDeployment / MachineSet machines; Metal3MachineTemplate's machine spec.
    pub template: MachineTemplateSpec,
    pub machine_template: ControlPlaneMachineTemplate,
    /// RKE2ControlPlane v1beta1 only: the deprecated location.
    pub infrastructure_ref: Option<ObjectRef>,
    pub infrastructure: TemplateSlot,
    pub control_plane: ClusterClassControlPlane,
    pub workers: Workers,
    /// A plain bool in v1beta1, a pointer in v1beta2: absent means false for CAPM3.
    pub node_reuse: Option<bool>,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct MachineTemplateSpec {
    pub spec: MachineSpec,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct MachineSpec {
    pub infrastructure_ref: Option<ObjectRef>,
    pub bootstrap: Bootstrap,
    /// Metal3MachineTemplate: `spec.template.spec.automatedCleaningMode`.
    pub automated_cleaning_mode: Option<String>,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Bootstrap {
    pub config_ref: Option<ObjectRef>,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct ReplicaStatus {
    pub replicas: Option<i64>,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ControlPlaneMachineTemplate {
    /// v1beta1 location.
    pub infrastructure_ref: Option<ObjectRef>,
    /// v1beta2 location (`spec.machineTemplate.spec.infrastructureRef`).
    pub spec: ControlPlaneMachineTemplateSpec,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ControlPlaneMachineTemplateSpec {
    pub infrastructure_ref: Option<ObjectRef>,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterClassControlPlane {
    /// The control plane's own template: `ref` in v1beta1.
    #[serde(rename = "ref")]
    pub reference: Option<ObjectRef>,
    /// The control plane's own template: `templateRef` in v1beta2.
    pub template_ref: Option<ObjectRef>,
    pub machine_infrastructure: TemplateSlot,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Workers {
    #[serde(deserialize_with = "nullable")]
    pub machine_deployments: Vec<WorkerClass>,
    #[serde(deserialize_with = "nullable")]
    pub machine_pools: Vec<WorkerClass>,
}

/// A worker class: v1beta1 nests the slots under `template`, v1beta2 does not.
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkerClass {
    #[serde(deserialize_with = "nullable")]
    pub class: String,
    pub template: WorkerSlots,
    pub infrastructure: TemplateSlot,
    pub bootstrap: TemplateSlot,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct WorkerSlots {
    pub infrastructure: TemplateSlot,
    pub bootstrap: TemplateSlot,
}

/// A ClusterClass template slot: `ref` in v1beta1, `templateRef` in v1beta2.
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct TemplateSlot {
    #[serde(rename = "ref")]
    pub reference: Option<ObjectRef>,
    pub template_ref: Option<ObjectRef>,
}

/// The parts of a validate payload the policy reads: the admission request and the settings.
/// Every field defaults when absent or null; everything else is skipped unread.
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct Payload {
    pub request: AdmissionRequest,
    pub settings: Value,
}

/// The fields of an AdmissionRequest the policy reads. `request.kind` is the one the API server
/// guarantees (`request.resource.kind` is not).
#[derive(Deserialize, Default, Debug)]
#[serde(default, rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub kind: GroupKind,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub namespace: String,
    #[serde(deserialize_with = "nullable")]
    pub operation: String,
    pub object: Value,
    pub old_object: Value,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct GroupKind {
    #[serde(deserialize_with = "nullable")]
    pub group: String,
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
}

/// Reads a typed view out of a JSON value. Views are only ever decoded from bytes, so each has
/// one deserializer in the module instead of two: re-encoding one object costs less than the
/// code a second deserializer adds to the size budget.
pub fn view_of<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, serde_json::Error> {
    serde_json::from_slice(&serde_json::to_vec(value)?)
}

/// A list answer. `items` is required: an answer without it is not an empty list.
#[derive(Deserialize, Debug)]
pub struct List {
    #[serde(default)]
    pub kind: Option<String>,
    pub items: Vec<Object>,
}

/// Whether `name` can be an object name (a DNS-1123 subdomain of at most 253 characters). Names
/// read from annotations and owner references are checked before any lookup, so that a name
/// such as `w-1/status` never reaches the host as a path.
pub fn is_object_name(name: &str) -> bool {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    !name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)
}

/// The template a DELETE is about, as read from the request's `oldObject`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub reference: TemplateRef,
    pub class: TemplateClass,
    pub namespace: String,
    /// `spec.nodeReuse: true` on a Metal3MachineTemplate.
    pub node_reuse: bool,
    /// Carries `clusterctl.cluster.x-k8s.io/delete-for-move`.
    pub moving: bool,
    /// Names of the Cluster API Clusters among its owners, sorted, each a valid object name.
    pub cluster_owners: Vec<String>,
}

/// The template a request is about: kind, group and name (its namespace is the request's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}

impl TemplateRef {
    /// Kind and name must match; the group too when the reference carries one.
    pub fn is_named_by(&self, reference: &ObjectRef) -> bool {
        reference.kind == self.kind
            && reference.name == self.name
            && reference.group().is_none_or(|group| group == self.group)
    }
}

impl Template {
    /// Reads a guarded template from a DELETE request. `name` is the request's name, used when
    /// the old object has none (items of a deletecollection arrive with an empty request name,
    /// so the old object's name wins).
    pub fn from_old_object(
        group: &str,
        kind: &str,
        class: TemplateClass,
        name: &str,
        namespace: &str,
        old_object: &Value,
    ) -> Result<Template, Error> {
        if !old_object.is_object() {
            return Err(Error::NoOldObject);
        }
        let object: Object =
            view_of(old_object).map_err(|e| Error::UnreadableOldObject(e.to_string()))?;
        let meta = object.metadata;
        let mut cluster_owners: Vec<String> = meta
            .owner_references
            .iter()
            .filter(|owner| {
                owner.kind == catalogue::CLUSTER.kind
                    && group_of(&owner.api_version) == CAPI_GROUP
                    && is_object_name(&owner.name)
            })
            .map(|owner| owner.name.clone())
            .collect();
        cluster_owners.sort();
        cluster_owners.dedup();
        let name = if meta.name.is_empty() {
            name
        } else {
            &meta.name
        };
        if name.is_empty() {
            return Err(Error::Unnamed);
        }
        let namespace = if namespace.is_empty() {
            &meta.namespace
        } else {
            namespace
        };
        Ok(Template {
            reference: TemplateRef {
                group: group.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
            },
            class,
            namespace: namespace.to_string(),
            node_reuse: group == INFRASTRUCTURE_GROUP
                && kind == catalogue::METAL3_MACHINE_TEMPLATE.kind
                && object.spec.node_reuse == Some(true),
            moving: meta.annotations.contains_key(DELETE_FOR_MOVE),
            cluster_owners,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn template_of(
        name: &str,
        namespace: &str,
        old_object: serde_json::Value,
    ) -> Result<Template, Error> {
        Template::from_old_object(
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            TemplateClass::Machine,
            name,
            namespace,
            &old_object,
        )
    }

    #[test]
    fn a_deletecollection_item_is_named_by_its_old_object() {
        // Items of a deletecollection arrive with an empty request name (and, cluster-wide, an
        // empty namespace): the old object names the template.
        let template = template_of(
            "",
            "",
            serde_json::json!({"metadata": {"name": "t-1", "namespace": "ns"}, "spec": {"nodeReuse": true}}),
        )
        .unwrap();
        assert_eq!(template.reference.name, "t-1");
        assert_eq!(template.namespace, "ns");
        assert!(template.node_reuse);
    }

    #[rstest]
    #[case::no_old_object(serde_json::Value::Null, Error::NoOldObject)]
    #[case::nameless(serde_json::json!({"metadata": {}}), Error::Unnamed)]
    fn templates_that_cannot_be_checked(
        #[case] old_object: serde_json::Value,
        #[case] error: Error,
    ) {
        assert_eq!(template_of("", "ns", old_object), Err(error));
    }

    #[test]
    fn an_old_object_of_the_wrong_shape_is_unreadable() {
        let error =
            template_of("t", "ns", serde_json::json!({"metadata": {"name": 7}})).unwrap_err();
        assert!(matches!(error, Error::UnreadableOldObject(_)), "{error:?}");
    }

    #[rstest]
    #[case::capi_cluster("cluster.x-k8s.io/v1beta2", "Cluster", "edge-a", vec!["edge-a"])]
    #[case::other_group("example.com/v1", "Cluster", "edge-a", vec![])]
    #[case::not_a_cluster("cluster.x-k8s.io/v1beta2", "MachineSet", "ms", vec![])]
    #[case::invalid_name("cluster.x-k8s.io/v1beta2", "Cluster", "a/status", vec![])]
    fn cluster_owners(
        #[case] api_version: &str,
        #[case] kind: &str,
        #[case] name: &str,
        #[case] expected: Vec<&str>,
    ) {
        let template = template_of(
            "t",
            "ns",
            serde_json::json!({"metadata": {"name": "t", "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": name}]}}),
        )
        .unwrap();
        assert_eq!(template.cluster_owners, expected);
    }

    #[rstest]
    #[case::simple("edge-a-workers-7f3c9d2e", true)]
    #[case::dotted("a.b-c.d", true)]
    #[case::longest(&"a".repeat(253).chars().enumerate().map(|(i, c)| if i % 60 == 59 { '.' } else { c }).collect::<String>(), true)]
    #[case::too_long(&"a.".repeat(127), false)]
    #[case::subresource("w-1/status", false)]
    #[case::empty("", false)]
    #[case::upper("Edge", false)]
    #[case::leading_dash("-a", false)]
    #[case::empty_label("a..b", false)]
    #[case::non_ascii("é", false)]
    #[case::label_too_long(&"a".repeat(64), false)]
    fn object_names(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_object_name(name), expected);
    }

    #[rstest]
    #[case::v1beta1_api_version(
        r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"K","name":"n"}"#,
        Some("infrastructure.cluster.x-k8s.io")
    )]
    #[case::v1beta2_api_group(
        r#"{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"K","name":"n"}"#,
        Some("bootstrap.cluster.x-k8s.io")
    )]
    #[case::core_group(r#"{"apiVersion":"v1","kind":"K","name":"n"}"#, Some(""))]
    #[case::no_group(r#"{"kind":"K","name":"n"}"#, None)]
    #[case::empty_group_falls_back_to_api_version(
        r#"{"apiGroup":"","apiVersion":"x.io/v1","kind":"K","name":"n"}"#,
        Some("x.io")
    )]
    fn reference_group(#[case] json: &str, #[case] expected: Option<&str>) {
        let reference: ObjectRef = serde_json::from_str(json).unwrap();
        assert_eq!(reference.group(), expected);
    }

    #[test]
    fn nulls_count_as_absent() {
        let meta: Metadata =
            serde_json::from_str(r#"{"name":null,"annotations":null,"ownerReferences":null}"#)
                .unwrap();
        assert_eq!(meta, Metadata::default());
    }

    #[test]
    fn wrong_types_are_errors_not_defaults() {
        assert!(serde_json::from_str::<Metadata>(r#"{"name":7}"#).is_err());
    }
}
