//! Which templates does an object name, and under which field? The catalogue's field paths are
//! walked over the object's masked JSON, so the paths the host keeps and the paths read here are
//! one list: a field cannot be extracted without being masked, or masked without being read.

use serde_json::Value;
use std::borrow::Cow;

use crate::capi::{Metadata, Object, ObjectRef, CLONED_FROM_GROUPKIND, CLONED_FROM_NAME};
use crate::catalogue::{split_key, ReferrerKind, CLUSTER};

/// The label Cluster API puts on the objects of a Cluster.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// A field of an object that names a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate {
    /// Path of the field, as a user would look it up (`kubectl explain` style), list items named
    /// by their key (`spec.workers.machineDeployments[class=md-0]...`); a fixed field is not
    /// copied for each object.
    pub field: Cow<'static, str>,
    pub reference: ObjectRef,
}

/// A listed object that may keep a template: what the decision needs of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Candidate {
    pub name: String,
    pub deleting: bool,
    /// The Cluster it belongs to: `spec.clusterName`, else the cluster-name label; a Cluster
    /// belongs to itself.
    pub cluster: Option<String>,
    /// `spec.replicas` and `status.replicas` (the machines it has), MachineSets only.
    pub replicas: Option<i64>,
    pub machines: Option<i64>,
    pub named: Vec<NamedTemplate>,
}

impl Candidate {
    /// A MachineSet scaled to zero with no machines left.
    pub fn scaled_down(&self) -> bool {
        self.replicas == Some(0) && self.machines == Some(0)
    }

    /// Whether it may still have machines. A MachineSet whose controller has not written
    /// `status.replicas` yet (v1beta2 omits it until then) is taken to have some: its machines
    /// could need their node-reuse template, and the controller writes the count on its next
    /// reconcile, deletion included, so the wait is short.
    pub fn has_machines(&self) -> bool {
        self.machines.is_none_or(|n| n > 0)
    }
}

/// A field of a listed object that does not have the shape its path promises: the policy cannot
/// tell what the object names, so the lookup fails (closed) rather than guess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadField {
    pub field: String,
    pub expected: &'static str,
}

fn bad(field: &str, expected: &'static str) -> BadField {
    BadField {
        field: field.to_string(),
        expected,
    }
}

fn string_at(value: &Value, key: &str, field: &str) -> Result<Option<String>, BadField> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(bad(field, "an object reference")),
    }
}

/// A template reference in any of the shapes CAPI uses (see [`ObjectRef`]).
fn reference_at(value: &Value, field: &str) -> Result<ObjectRef, BadField> {
    if !value.is_object() {
        return Err(bad(field, "an object reference"));
    }
    Ok(ObjectRef {
        api_version: string_at(value, "apiVersion", field)?,
        api_group: string_at(value, "apiGroup", field)?,
        kind: string_at(value, "kind", field)?.unwrap_or_default(),
        name: string_at(value, "name", field)?.unwrap_or_default(),
    })
}

/// Walks `path` (dotted segments, `name[key]` for a list) from `value`, at `shown`, which it
/// leaves as it found it; an absent or null step names nothing.
fn walk(
    value: &Value,
    path: &str,
    shown: &mut String,
    out: &mut Vec<NamedTemplate>,
) -> Result<(), BadField> {
    if path.is_empty() {
        let reference = reference_at(value, shown)?;
        out.push(NamedTemplate {
            field: Cow::Owned(shown.clone()),
            reference,
        });
        return Ok(());
    }
    let Value::Object(fields) = value else {
        return Err(bad(shown, "an object"));
    };
    let (segment, rest) = path.split_once('.').unwrap_or((path, ""));
    let (name, key) = split_key(segment);
    let child = match fields.get(name) {
        None | Some(Value::Null) => return Ok(()),
        Some(child) => child,
    };
    let at = shown.len();
    shown.extend([".", name]);
    let walked = match (key, child) {
        (None, _) => walk(child, rest, shown, out),
        (Some(key), Value::Array(items)) => items.iter().try_for_each(|item| {
            let label = item.get(key).and_then(Value::as_str).unwrap_or_default();
            let here = shown.len();
            shown.extend(["[", key, "=", label, "]"]);
            let walked = walk(item, rest, shown, out);
            shown.truncate(here);
            walked
        }),
        (Some(_), _) => Err(bad(shown, "a list")),
    };
    shown.truncate(at);
    walked
}

/// Every template `object` names through `path` (a catalogue field). Most objects lack most
/// fields: nothing is allocated for one whose first step is absent.
fn named_at(object: &Object, path: &str) -> Result<Vec<NamedTemplate>, BadField> {
    let (root, rest) = path.split_once('.').unwrap_or((path, ""));
    let value = match root {
        "spec" => &object.spec,
        "status" => &object.status,
        _ => return Ok(vec![]),
    };
    let first = split_key(rest.split('.').next().unwrap_or_default()).0;
    let absent = match value {
        Value::Null => true,
        Value::Object(fields) if !rest.is_empty() => fields.get(first).is_none_or(Value::is_null),
        _ => false,
    };
    let mut out = Vec::new();
    if !absent {
        walk(value, rest, &mut root.to_string(), &mut out)?;
    }
    Ok(out)
}

/// The fields besides references are read only where the kind masks them: a field read but not
/// masked would be stripped by the host and silently read as absent.
fn integer_at(kind: &ReferrerKind, object: &Object, path: &str) -> Result<Option<i64>, BadField> {
    if !kind.resource.reads.contains(&path) {
        return Ok(None);
    }
    match object.at(path) {
        None => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| bad(path, "an integer")),
    }
}

fn text_at(kind: &ReferrerKind, object: &Object, path: &str) -> Result<Option<String>, BadField> {
    if !kind.resource.reads.contains(&path) {
        return Ok(None);
    }
    match object.at(path) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(bad(path, "a string")),
    }
}

/// Gives the references found at `field` that name no kind the kind `field` implies, if any.
fn imply(kind: &ReferrerKind, field: &str, found: &mut [NamedTemplate]) {
    if let Some(implied) = kind.implied.iter().find(|i| i.field == field) {
        for reference in found.iter_mut().map(|n| &mut n.reference) {
            if reference.kind.is_empty() {
                reference.kind = implied.kind.to_string();
                if reference.group().is_none() {
                    reference.api_group = Some(implied.group.to_string());
                }
            }
        }
    }
}

/// What a listed object of `kind` names, and what the decision needs to know of it.
pub fn candidate_of(kind: &ReferrerKind, object: &Object) -> Result<Candidate, BadField> {
    take_candidate(kind, &mut object.clone())
}

/// [`candidate_of`], taking the object's strings instead of copying them, as a list's objects
/// are read once: on an error (a field of another shape) the object is left whole.
pub fn take_candidate(kind: &ReferrerKind, object: &mut Object) -> Result<Candidate, BadField> {
    let mut named = Vec::new();
    for field in kind.fields {
        let mut found = named_at(object, field)?;
        imply(kind, field, &mut found);
        named.extend(found);
    }
    let facts = facts(kind, object)?;
    let meta = &mut object.metadata;
    if kind.cloned_from {
        named.extend(take_cloned(meta));
    }
    Ok(candidate_from(kind, facts, meta, named))
}

/// The candidate of an object whose [`facts`] were read: its name and cluster-name label are
/// taken out of `meta`.
fn candidate_from(
    kind: &ReferrerKind,
    (cluster, replicas, machines): Facts,
    meta: &mut Metadata,
    named: Vec<NamedTemplate>,
) -> Candidate {
    let cluster = match kind.resource == CLUSTER {
        true => Some(meta.name.clone()),
        false => cluster.or_else(|| meta.labels.remove(CLUSTER_NAME_LABEL)),
    };
    Candidate {
        name: std::mem::take(&mut meta.name),
        deleting: meta.is_deleting(),
        cluster,
        replicas,
        machines,
        named,
    }
}

/// `spec.clusterName` (when not empty), `spec.replicas` and `status.replicas`, where the kind
/// reads them.
type Facts = (Option<String>, Option<i64>, Option<i64>);

fn facts(kind: &ReferrerKind, object: &Object) -> Result<Facts, BadField> {
    Ok((
        text_at(kind, object, "spec.clusterName")?.filter(|name| !name.is_empty()),
        integer_at(kind, object, "spec.replicas")?,
        integer_at(kind, object, "status.replicas")?,
    ))
}

/// What a scanned object of a catalogue kind served at a version the policy does not know names:
/// every reference the scan finds, and the name-only references at the kind's implied fields
/// (Kairos' `kairosConfigTemplate: {name}`) where that field still reads as a reference.
pub fn scan_known(kind: &ReferrerKind, object: &Object) -> Vec<NamedTemplate> {
    let mut named = scan(object);
    for implied in kind.implied {
        // A field of another shape at this version implies nothing: the scan has read it.
        let Ok(mut found) = named_at(object, implied.field) else {
            continue;
        };
        found.retain(|n| n.reference.kind.is_empty() && !n.reference.name.is_empty());
        imply(kind, implied.field, &mut found);
        named.extend(found);
    }
    named
}

/// The candidate of an object of `kind` that names `named`, its other fields read where the
/// catalogue says; a field of another shape is a [`BadField`].
pub fn candidate_naming(
    kind: &ReferrerKind,
    object: &Object,
    named: Vec<NamedTemplate>,
) -> Result<Candidate, BadField> {
    let facts = facts(kind, object)?;
    Ok(candidate_from(
        kind,
        facts,
        &mut object.metadata.clone(),
        named,
    ))
}

/// Every reference anywhere in a scanned object's spec, for a kind the catalogue does not know: a
/// map that names a kind and a name (strings), with its group where it gives one, at the path
/// where it sits (list items by index). Maps that are not references are walked into; values of
/// other shapes are skipped, since nothing says what they should be.
pub fn scan(object: &Object) -> Vec<NamedTemplate> {
    fn walk(value: &Value, here: &str, out: &mut Vec<NamedTemplate>) {
        match value {
            Value::Object(fields) => {
                let text = |key: &str| fields.get(key).and_then(Value::as_str);
                if let (Some(kind), Some(name)) = (text("kind"), text("name")) {
                    out.push(NamedTemplate {
                        field: Cow::Owned(here.to_string()),
                        reference: ObjectRef {
                            api_version: text("apiVersion").map(str::to_string),
                            api_group: text("apiGroup").map(str::to_string),
                            kind: kind.to_string(),
                            name: name.to_string(),
                        },
                    });
                }
                for (key, child) in fields {
                    walk(child, &format!("{here}.{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{here}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&object.spec, "spec", &mut out);
    out
}

/// The Cluster a scanned object belongs to: its cluster-name label.
pub fn cluster_label(meta: &Metadata) -> Option<String> {
    meta.label(CLUSTER_NAME_LABEL).map(str::to_string)
}

/// The template an object was cloned from, as its cloned-from annotations name it: the name and
/// `Kind.group` (split at the first dot, as kinds have none).
pub fn cloned_from(meta: &Metadata) -> Option<ObjectRef> {
    take_cloned(&mut meta.clone()).map(|named| named.reference)
}

/// Where a Metal3Machine names its template: [`CLONED_FROM_NAME`].
const CLONED_FIELD: &str = "metadata.annotations[cluster.x-k8s.io/cloned-from-name]";

/// Metal3Machine: the template named by its cloned-from annotations ([`cloned_from`]), taken out
/// of them.
fn take_cloned(meta: &mut Metadata) -> Option<NamedTemplate> {
    let mut kind = meta.annotations.remove(CLONED_FROM_GROUPKIND)?;
    let dot = kind.find('.')?;
    let group = kind[dot + 1..].to_string();
    kind.truncate(dot);
    Some(NamedTemplate {
        field: Cow::Borrowed(CLONED_FIELD),
        reference: ObjectRef {
            api_version: None,
            api_group: Some(group),
            kind,
            name: meta.annotations.remove(CLONED_FROM_NAME)?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::TemplateRef;
    use crate::catalogue::{INFRASTRUCTURE_GROUP, REFERRERS};
    use crate::testing::{fixture, masked, referrer_kind as kind};
    use rstest::rstest;
    use serde_json::json;

    fn fields_of(kind_name: &str, object: &Object) -> Vec<(String, String)> {
        let mut fields: Vec<(String, String)> = candidate_of(kind(kind_name), object)
            .unwrap()
            .named
            .into_iter()
            .map(|n| (n.field.into_owned(), n.reference.name))
            .collect();
        fields.sort();
        fields
    }

    fn pair(field: &str, name: &str) -> (String, String) {
        (field.to_string(), name.to_string())
    }

    #[rstest]
    #[case::v1beta1("v1beta1/04-machinedeployment.json")]
    #[case::v1beta2("v1beta2/04-machinedeployment.json")]
    fn machine_deployment_names_both_templates(#[case] file: &str) {
        assert_eq!(
            fields_of("MachineDeployment", &fixture(file)),
            vec![
                pair(
                    "spec.template.spec.bootstrap.configRef",
                    "edge-a-workers-kct-9a4f01"
                ),
                pair(
                    "spec.template.spec.infrastructureRef",
                    "edge-a-workers-7f3c9d2e"
                ),
            ]
        );
    }

    #[rstest]
    #[case::kcp_v1beta1(
        "KubeadmControlPlane",
        "v1beta1/07-kubeadmcontrolplane.json",
        "spec.machineTemplate.infrastructureRef",
        "edge-a-cp-5d21c0aa"
    )]
    #[case::kcp_v1beta2(
        "KubeadmControlPlane",
        "v1beta2/08-kubeadmcontrolplane.json",
        "spec.machineTemplate.spec.infrastructureRef",
        "edge-a-cp-5d21c0aa"
    )]
    #[case::rke2_v1beta1(
        "RKE2ControlPlane",
        "v1beta1/08-rke2controlplane.json",
        "spec.machineTemplate.infrastructureRef",
        "edge-b-cp-0c7e11f2"
    )]
    #[case::rke2_v1beta1_legacy(
        "RKE2ControlPlane",
        "v1beta1/09-rke2controlplane-legacy-infraref.json",
        "spec.infrastructureRef",
        "edge-c-cp-9b02d4e1"
    )]
    #[case::rke2_v1beta2(
        "RKE2ControlPlane",
        "v1beta2/10-rke2controlplane.json",
        "spec.machineTemplate.spec.infrastructureRef",
        "edge-b-cp-0c7e11f2"
    )]
    fn control_plane_names_its_machine_template(
        #[case] kind_name: &str,
        #[case] file: &str,
        #[case] field: &str,
        #[case] name: &str,
    ) {
        assert_eq!(
            fields_of(kind_name, &fixture(file)),
            vec![pair(field, name)]
        );
    }

    /// The other control planes, each at the path its own API types give.
    #[rstest]
    #[case::talos("TalosControlPlane", json!({"infrastructureTemplate": {"kind": "K", "name": "t"}}), "spec.infrastructureTemplate")]
    #[case::microk8s("MicroK8sControlPlane", json!({"machineTemplate": {"infrastructureTemplate": {"kind": "K", "name": "t"}}}), "spec.machineTemplate.infrastructureTemplate")]
    #[case::ck8s("CK8sControlPlane", json!({"machineTemplate": {"infrastructureTemplate": {"kind": "K", "name": "t"}}}), "spec.machineTemplate.infrastructureTemplate")]
    #[case::k0s("K0sControlPlane", json!({"machineTemplate": {"infrastructureRef": {"kind": "K", "name": "t"}}}), "spec.machineTemplate.infrastructureRef")]
    #[case::k3s_v1beta1("KThreesControlPlane", json!({"infrastructureTemplate": {"kind": "K", "name": "t"}}), "spec.infrastructureTemplate")]
    #[case::k3s_v1beta2("KThreesControlPlane", json!({"machineTemplate": {"infrastructureRef": {"kind": "K", "name": "t"}}}), "spec.machineTemplate.infrastructureRef")]
    #[case::kairos("KairosControlPlane", json!({"machineTemplate": {"infrastructureRef": {"kind": "K", "name": "t"}}}), "spec.machineTemplate.infrastructureRef")]
    #[case::kairos_bootstrap("KairosControlPlane", json!({"kairosConfigTemplate": {"kind": "KairosConfigTemplate", "name": "t"}}), "spec.kairosConfigTemplate")]
    #[case::ocne("OCNEControlPlane", json!({"machineTemplate": {"infrastructureRef": {"kind": "K", "name": "t"}}}), "spec.machineTemplate.infrastructureRef")]
    #[case::etcdadm("EtcdadmCluster", json!({"infrastructureTemplate": {"kind": "K", "name": "t"}}), "spec.infrastructureTemplate")]
    fn every_control_plane_names_its_machine_template(
        #[case] kind_name: &str,
        #[case] spec: Value,
        #[case] field: &str,
    ) {
        let object: Object =
            serde_json::from_value(json!({"metadata": {"name": "cp"}, "spec": spec})).unwrap();
        assert_eq!(fields_of(kind_name, &object), vec![pair(field, "t")]);
    }

    /// Kairos writes `spec.kairosConfigTemplate` with a name only and its controller fills in
    /// the kind; CAPM3's v1beta2 data-template references carry only a name. The catalogue's
    /// implied kind (and group) makes them match; a kind given is kept as written.
    #[rstest]
    #[case::kairos_name_only("KairosControlPlane", json!({"kairosConfigTemplate": {"name": "t"}}), "spec.kairosConfigTemplate", Some(("bootstrap.cluster.x-k8s.io", "KairosConfigTemplate")))]
    #[case::kairos_kind_given("KairosControlPlane", json!({"kairosConfigTemplate": {"kind": "OtherTemplate", "name": "t"}}), "spec.kairosConfigTemplate", None)]
    #[case::metal3_machine_name_only("Metal3Machine", json!({"dataTemplate": {"name": "t"}}), "spec.dataTemplate", Some(("infrastructure.cluster.x-k8s.io", "Metal3DataTemplate")))]
    #[case::claim_v1beta1("Metal3DataClaim", json!({"template": {"kind": "Metal3DataTemplate", "name": "t"}}), "spec.template", Some(("infrastructure.cluster.x-k8s.io", "Metal3DataTemplate")))]
    #[case::machine_template("Metal3MachineTemplate", json!({"template": {"spec": {"dataTemplate": {"name": "t"}}}}), "spec.template.spec.dataTemplate", Some(("infrastructure.cluster.x-k8s.io", "Metal3DataTemplate")))]
    #[case::no_kind_not_implied("TalosControlPlane", json!({"infrastructureTemplate": {"name": "t"}}), "spec.infrastructureTemplate", None)]
    fn implied_kinds(
        #[case] kind_name: &str,
        #[case] spec: Value,
        #[case] field: &str,
        #[case] names: Option<(&str, &str)>,
    ) {
        let object: Object =
            serde_json::from_value(json!({"metadata": {"name": "o"}, "spec": spec})).unwrap();
        let candidate = candidate_of(kind(kind_name), &object).unwrap();
        assert_eq!(candidate.named[0].field, field);
        let reference = &candidate.named[0].reference;
        let matched = names.map(|(group, kind)| TemplateRef {
            group: group.into(),
            kind: kind.into(),
            name: "t".into(),
        });
        match matched {
            Some(template) => assert!(template.is_named_by(reference), "{reference:?}"),
            None => assert!(
                reference.kind != "KairosConfigTemplate" && reference.kind != "Metal3DataTemplate"
            ),
        }
    }

    /// The scan walks a whole spec: a reference at any depth is found with its path, and what is
    /// not shaped as a reference (a kind that is no string, a bare name) is skipped, not an error.
    #[test]
    fn a_scan_finds_references_at_any_depth_and_skips_other_shapes() {
        let mut spec = json!({"kind": "Metal3MachineTemplate", "name": "t"});
        for _ in 0..100 {
            spec = json!({"x": [spec, {"kind": 7, "name": "t"}, {"name": "t"}, "t"]});
        }
        let object: Object =
            serde_json::from_value(json!({"metadata": {"name": "o"}, "spec": spec})).unwrap();
        let found = scan(&object);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, format!("spec{}", ".x[0]".repeat(100)));
        assert_eq!(found[0].reference.name, "t");
    }

    #[rstest]
    #[case::v1beta1("v1beta1/11-clusterclass.json", "ref", "template.")]
    #[case::v1beta2("v1beta2/13-clusterclass.json", "templateRef", "")]
    fn cluster_class_names_machine_templates(
        #[case] file: &str,
        #[case] slot: &str,
        #[case] nesting: &str,
    ) {
        let worker = "spec.workers.machineDeployments[class=storage]";
        let mut expected = vec![
            pair(
                &format!("spec.infrastructure.{slot}"),
                "metal3-kubeadm-cluster",
            ),
            pair(&format!("spec.controlPlane.{slot}"), "metal3-kubeadm-cp"),
            pair(
                &format!("spec.controlPlane.machineInfrastructure.{slot}"),
                "metal3-kubeadm-cp-machines",
            ),
            pair(
                &format!("{worker}.{nesting}infrastructure.{slot}"),
                "metal3-kubeadm-storage-machines",
            ),
            pair(
                &format!("{worker}.{nesting}bootstrap.{slot}"),
                "metal3-kubeadm-storage-bootstrap",
            ),
        ];
        expected.sort();
        assert_eq!(fields_of("ClusterClass", &fixture(file)), expected);
    }

    #[test]
    fn cluster_class_machine_pools_count_too() {
        let class: Object = serde_json::from_value(json!({
            "spec": {"workers": {"machinePools": [{"class": "pool", "bootstrap": {"templateRef": {
                "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate", "name": "b"}}}]}}
        }))
        .unwrap();
        assert_eq!(
            fields_of("ClusterClass", &class),
            vec![pair(
                "spec.workers.machinePools[class=pool].bootstrap.templateRef",
                "b"
            )]
        );
    }

    /// Remediation templates, v1beta1 and v1beta2 shapes.
    #[rstest]
    #[case::health_check_v1beta1("MachineHealthCheck", json!({"remediationTemplate": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3RemediationTemplate", "name": "r"}}), "spec.remediationTemplate")]
    #[case::health_check_v1beta2("MachineHealthCheck", json!({"remediation": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3RemediationTemplate", "name": "r"}}}), "spec.remediation.templateRef")]
    #[case::class_control_plane_v1beta1("ClusterClass", json!({"controlPlane": {"machineHealthCheck": {"remediationTemplate": {"kind": "Metal3RemediationTemplate", "name": "r"}}}}), "spec.controlPlane.machineHealthCheck.remediationTemplate")]
    #[case::class_worker_v1beta2("ClusterClass", json!({"workers": {"machineDeployments": [{"class": "md", "healthCheck": {"remediation": {"templateRef": {"kind": "Metal3RemediationTemplate", "name": "r"}}}}]}}), "spec.workers.machineDeployments[class=md].healthCheck.remediation.templateRef")]
    #[case::topology_control_plane_v1beta2("Cluster", json!({"topology": {"controlPlane": {"healthCheck": {"remediation": {"templateRef": {"kind": "Metal3RemediationTemplate", "name": "r"}}}}}}), "spec.topology.controlPlane.healthCheck.remediation.templateRef")]
    #[case::topology_worker_v1beta1("Cluster", json!({"topology": {"workers": {"machineDeployments": [{"name": "md-0", "machineHealthCheck": {"remediationTemplate": {"kind": "Metal3RemediationTemplate", "name": "r"}}}]}}}), "spec.topology.workers.machineDeployments[name=md-0].machineHealthCheck.remediationTemplate")]
    fn remediation_templates_are_named_by_health_checks(
        #[case] kind_name: &str,
        #[case] spec: Value,
        #[case] field: &str,
    ) {
        let object: Object =
            serde_json::from_value(json!({"metadata": {"name": "o"}, "spec": spec})).unwrap();
        assert_eq!(fields_of(kind_name, &object), vec![pair(field, "r")]);
    }

    /// A field whose shape is not the one its path promises is an error, not "names nothing".
    #[rstest]
    #[case::reference_is_a_string("MachineSet", json!({"spec": {"template": {"spec": {"infrastructureRef": "t"}}}}), "spec.template.spec.infrastructureRef", "an object reference")]
    #[case::name_is_a_number("MachineSet", json!({"spec": {"template": {"spec": {"infrastructureRef": {"kind": "K", "name": 7}}}}}), "spec.template.spec.infrastructureRef", "an object reference")]
    #[case::step_is_a_list("MachineDeployment", json!({"spec": {"template": []}}), "spec.template", "an object")]
    #[case::workers_not_a_list("ClusterClass", json!({"spec": {"workers": {"machineDeployments": {}}}}), "spec.workers.machineDeployments", "a list")]
    #[case::replicas_a_string("MachineSet", json!({"spec": {"replicas": "2"}}), "spec.replicas", "an integer")]
    #[case::cluster_name_a_number("MachineDeployment", json!({"spec": {"clusterName": 1}}), "spec.clusterName", "a string")]
    fn fields_of_the_wrong_shape_are_errors(
        #[case] kind_name: &str,
        #[case] object: Value,
        #[case] field: &str,
        #[case] expected: &'static str,
    ) {
        let object: Object = serde_json::from_value(object).unwrap();
        assert_eq!(
            candidate_of(kind(kind_name), &object),
            Err(BadField {
                field: field.into(),
                expected,
            })
        );
    }

    #[rstest]
    #[case::label("MachineDeployment", json!({"metadata": {"name": "md", "labels": {CLUSTER_NAME_LABEL: "a"}}}), Some("a"))]
    #[case::cluster_name_wins("MachineSet", json!({"metadata": {"name": "ms", "labels": {CLUSTER_NAME_LABEL: "a"}}, "spec": {"clusterName": "b"}}), Some("b"))]
    #[case::a_cluster_is_its_own("Cluster", json!({"metadata": {"name": "c"}}), Some("c"))]
    #[case::none("ClusterClass", json!({"metadata": {"name": "cc"}}), None)]
    fn the_cluster_a_referrer_belongs_to(
        #[case] kind_name: &str,
        #[case] object: Value,
        #[case] cluster: Option<&str>,
    ) {
        let object: Object = serde_json::from_value(object).unwrap();
        assert_eq!(
            candidate_of(kind(kind_name), &object)
                .unwrap()
                .cluster
                .as_deref(),
            cluster
        );
    }

    /// An object of `kind` with every field of the catalogue set (each list with two items), and
    /// unrelated fields beside them: what masking must never change the reading of.
    fn everything(kind: &ReferrerKind) -> Value {
        let reference = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "K", "name": "t"});
        let mut object = json!({"metadata": {"name": "o", "labels": {CLUSTER_NAME_LABEL: "c"}, "annotations": {CLONED_FROM_NAME: "t", CLONED_FROM_GROUPKIND: "K.infrastructure.cluster.x-k8s.io"}}, "spec": {"unrelated": 1, "clusterName": "c", "replicas": 2}, "status": {"replicas": 1, "other": true}});
        fn set(value: &mut Value, path: &[&str], leaf: &Value) {
            let Some((segment, rest)) = path.split_first() else {
                *value = leaf.clone();
                return;
            };
            let (name, key) = split_key(segment);
            let slot = &mut value[name];
            match key {
                None => set(slot, rest, leaf),
                Some(key) => {
                    if !slot.is_array() {
                        *slot = json!([{key: "a", "unrelated": 1}, {key: "b"}]);
                    }
                    for item in slot.as_array_mut().into_iter().flatten() {
                        set(item, rest, leaf);
                    }
                }
            }
        }
        for field in kind.fields {
            let path: Vec<&str> = field.split('.').collect();
            set(&mut object, &path, &reference);
        }
        object
    }

    /// The one-table promise: for every referrer kind, the host's masking (the policy server
    /// keeps only the masked paths) never changes what the policy extracts.
    #[test]
    fn masking_never_changes_what_is_extracted() {
        let fixtures: Vec<(&str, &str)> = vec![
            ("MachineDeployment", "v1beta1/04-machinedeployment.json"),
            ("MachineDeployment", "v1beta2/04-machinedeployment.json"),
            ("MachineSet", "v1beta1/05-machineset-old-revision.json"),
            ("MachineSet", "v1beta2/05-machineset-old-revision.json"),
            ("KubeadmControlPlane", "v1beta1/07-kubeadmcontrolplane.json"),
            ("KubeadmControlPlane", "v1beta2/08-kubeadmcontrolplane.json"),
            (
                "RKE2ControlPlane",
                "v1beta1/09-rke2controlplane-legacy-infraref.json",
            ),
            ("RKE2ControlPlane", "v1beta2/10-rke2controlplane.json"),
            ("ClusterClass", "v1beta1/11-clusterclass.json"),
            ("ClusterClass", "v1beta2/13-clusterclass.json"),
            ("Metal3Machine", "v1beta1/06-metal3machine-worker.json"),
            ("Metal3Machine", "v1beta2/06-metal3machine-worker.json"),
        ];
        let mut objects: Vec<(&ReferrerKind, Value)> = fixtures
            .into_iter()
            .map(|(k, file)| (kind(k), fixture::<Value>(file)))
            .collect();
        objects.extend(REFERRERS.iter().map(|k| (k, everything(k))));
        for (kind, object) in objects {
            let whole: Object = serde_json::from_value(object.clone()).unwrap();
            let kept: Object = serde_json::from_value(masked(&object, &kind.masks())).unwrap();
            let expected = candidate_of(kind, &whole).unwrap();
            assert_eq!(
                candidate_of(kind, &kept).unwrap(),
                expected,
                "{}",
                kind.kind()
            );
            if !kind.cloned_from {
                assert!(!expected.named.is_empty(), "{}: names nothing", kind.kind());
            }
        }
    }

    fn template(group: &str, kind: &str, name: &str) -> TemplateRef {
        TemplateRef {
            group: group.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    #[rstest]
    #[case::same_everything(r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"Metal3MachineTemplate","name":"t"}"#, true)]
    #[case::api_version_shape(r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"Metal3MachineTemplate","name":"t"}"#, true)]
    #[case::no_group_in_reference(r#"{"kind":"Metal3MachineTemplate","name":"t"}"#, true)]
    #[case::other_name(r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"Metal3MachineTemplate","name":"u"}"#, false)]
    #[case::other_kind_same_name(
        r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachineTemplate","name":"t"}"#,
        false
    )]
    #[case::other_group_same_kind(
        r#"{"apiGroup":"infrastructure.example.com","kind":"Metal3MachineTemplate","name":"t"}"#,
        false
    )]
    #[case::other_group_in_api_version(
        r#"{"apiVersion":"example.com/v1","kind":"Metal3MachineTemplate","name":"t"}"#,
        false
    )]
    fn reference_matching(#[case] json: &str, #[case] expected: bool) {
        let reference: ObjectRef = serde_json::from_str(json).unwrap();
        assert_eq!(
            template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t").is_named_by(&reference),
            expected
        );
    }

    #[rstest]
    #[case::metal3_template(
        "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io",
        Some(("infrastructure.cluster.x-k8s.io", "Metal3MachineTemplate"))
    )]
    #[case::bootstrap_template(
        "KubeadmConfigTemplate.bootstrap.cluster.x-k8s.io",
        Some(("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate"))
    )]
    #[case::no_dot("Metal3MachineTemplate", None)]
    fn metal3_machine_clone_source(
        #[case] groupkind: &str,
        #[case] expected: Option<(&str, &str)>,
    ) {
        let mut machine: Object = fixture("v1beta2/06-metal3machine-worker.json");
        machine
            .metadata
            .annotations
            .insert(CLONED_FROM_GROUPKIND, groupkind.into());
        let candidate = candidate_of(kind("Metal3Machine"), &machine).unwrap();
        let annotation = candidate
            .named
            .iter()
            .find(|n| n.field.starts_with("metadata."));
        let got: Option<(String, String, String)> = annotation.map(|n| {
            (
                n.reference.group().unwrap_or_default().to_string(),
                n.reference.kind.clone(),
                n.reference.name.clone(),
            )
        });
        assert_eq!(
            got,
            expected.map(|(g, k)| (
                g.to_string(),
                k.to_string(),
                "edge-a-workers-1b8e4a60".to_string()
            ))
        );
    }

    #[test]
    fn metal3_machine_cloned_field_is_the_annotation() {
        assert_eq!(
            CLONED_FIELD,
            format!("metadata.annotations[{CLONED_FROM_NAME}]")
        );
    }

    #[test]
    fn metal3_machine_without_annotations_names_nothing() {
        let candidate = candidate_of(kind("Metal3Machine"), &Object::default()).unwrap();
        assert_eq!(candidate.named, vec![]);
    }

    #[rstest]
    #[case::scaled_down(json!({"spec": {"replicas": 0}, "status": {"replicas": 0}}), true)]
    #[case::machines_left(json!({"spec": {"replicas": 0}, "status": {"replicas": 1}}), false)]
    #[case::status_unknown(json!({"spec": {"replicas": 0}}), false)]
    #[case::scaled_up(json!({"spec": {"replicas": 2}, "status": {"replicas": 0}}), false)]
    fn scaled_down_machine_sets(#[case] value: Value, #[case] expected: bool) {
        let ms: Object = serde_json::from_value(value).unwrap();
        assert_eq!(
            candidate_of(kind("MachineSet"), &ms).unwrap().scaled_down(),
            expected
        );
    }
}
