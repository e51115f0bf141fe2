//! Minimal typed views of the Cluster API objects the policy reads.
//!
//! Each view holds only the fields a decision reads and accepts both the v1beta1 and the v1beta2
//! shape, because the API server converts every object to the version a list asks for and users
//! pick that version in the settings. Every field defaults when absent (or null), and every other
//! field is skipped unread, which keeps a list of thousands of objects cheap to decode.

use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

pub const CAPI_GROUP: &str = "cluster.x-k8s.io";
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const BOOTSTRAP_GROUP: &str = "bootstrap.cluster.x-k8s.io";

pub const METAL3_MACHINE_TEMPLATE: &str = "Metal3MachineTemplate";
pub const METAL3_MACHINE: &str = "Metal3Machine";

/// Annotation set by CAPI on every object cloned from a template: the template's name.
pub const CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";
/// Annotation set next to [`CLONED_FROM_NAME`]: `Kind.group` of the template.
pub const CLONED_FROM_GROUPKIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
/// Annotation `clusterctl move` puts on every object right before deleting it.
pub const DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";

/// `cluster.x-k8s.io/cloned-from-groupkind` value of objects cloned from a Metal3MachineTemplate
/// (`Kind.group`). A constant: it is compared once per listed Metal3Machine.
pub const METAL3_TEMPLATE_GROUPKIND: &str = "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io";

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

/// MachineDeployment and MachineSet share the paths the policy reads.
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct MachineSetLike {
    pub metadata: Metadata,
    pub spec: MachineSetSpec,
    pub status: ReplicaStatus,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct MachineSetSpec {
    pub replicas: Option<i64>,
    pub template: MachineTemplateSpec,
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

/// KubeadmControlPlane and RKE2ControlPlane, both API shapes.
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct ControlPlane {
    pub metadata: Metadata,
    pub spec: ControlPlaneSpec,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ControlPlaneSpec {
    pub machine_template: ControlPlaneMachineTemplate,
    /// RKE2ControlPlane v1beta1 only: the deprecated location.
    pub infrastructure_ref: Option<ObjectRef>,
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
#[serde(default)]
pub struct ClusterClass {
    pub metadata: Metadata,
    pub spec: ClusterClassSpec,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterClassSpec {
    pub control_plane: ClusterClassControlPlane,
    pub workers: Workers,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterClassControlPlane {
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

/// Any object of which only the metadata matters (Metal3Machine, Cluster, the template itself).
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct MetadataOnly {
    pub metadata: Metadata,
}

/// The fields of a Metal3MachineTemplate the policy reads.
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct Metal3MachineTemplate {
    pub metadata: Metadata,
    pub spec: Metal3MachineTemplateSpec,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Metal3MachineTemplateSpec {
    /// A plain bool in v1beta1, a pointer in v1beta2: absent means false for CAPM3.
    pub node_reuse: Option<bool>,
    pub template: Metal3MachineTemplateResource,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default)]
pub struct Metal3MachineTemplateResource {
    pub spec: Metal3MachineSpec,
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Metal3MachineSpec {
    pub automated_cleaning_mode: Option<String>,
}

/// The `items` of a list answer; everything else in the list is skipped.
#[derive(Deserialize, Debug)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub struct List<T> {
    #[serde(default = "Vec::new", deserialize_with = "nullable")]
    pub items: Vec<T>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn groupkind_is_kind_dot_group() {
        assert_eq!(
            METAL3_TEMPLATE_GROUPKIND,
            format!("{METAL3_MACHINE_TEMPLATE}.{INFRASTRUCTURE_GROUP}")
        );
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
