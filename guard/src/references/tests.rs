//! Which templates an object names: the catalogue's paths over fixtures and odd shapes.
use super::*;
use crate::capi::TemplateRef;
use crate::catalogue::{INFRASTRUCTURE_GROUP, REFERRERS};
use crate::testing::{fixture, masked, referrer_kind as kind};
use rstest::rstest;
use serde_json::json;

const CLUSTER_NAME_LABEL: &str = ReadKey::ClusterName.key();
const DEPLOYMENT_NAME_LABEL: &str = ReadKey::DeploymentName.key();
const CLONED_FROM_NAME: &str = ReadKey::ClonedFromName.key();
const CLONED_FROM_GROUPKIND: &str = ReadKey::ClonedFromGroupKind.key();

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
    let reference =
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "K", "name": "t"});
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
#[case::same_everything(
    r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"Metal3MachineTemplate","name":"t"}"#,
    true
)]
#[case::api_version_shape(r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"Metal3MachineTemplate","name":"t"}"#, true)]
#[case::no_group_in_reference(r#"{"kind":"Metal3MachineTemplate","name":"t"}"#, true)]
#[case::other_name(
    r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"Metal3MachineTemplate","name":"u"}"#,
    false
)]
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
fn metal3_machine_clone_source(#[case] groupkind: &str, #[case] expected: Option<(&str, &str)>) {
    let mut machine: Object = fixture("v1beta2/06-metal3machine-worker.json");
    machine
        .metadata
        .annotations
        .insert(ReadKey::ClonedFromGroupKind, groupkind.into());
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

/// A MachineSet's deployment-name label is read as `isDeploymentChild` reads it (present, even
/// empty) and its revision annotation as `isCurrentMachineSet` does; a MachineDeployment's
/// revision too; other kinds read neither.
#[rstest]
#[case::labelled("MachineSet", json!({DEPLOYMENT_NAME_LABEL: "md"}), Some("md"), Some("3"))]
#[case::empty("MachineSet", json!({DEPLOYMENT_NAME_LABEL: ""}), Some(""), Some("3"))]
#[case::other_label("MachineSet", json!({CLUSTER_NAME_LABEL: "c"}), None, Some("3"))]
#[case::no_labels("MachineSet", json!(null), None, Some("3"))]
#[case::deployment("MachineDeployment", json!(null), None, Some("3"))]
#[case::control_plane("KubeadmControlPlane", json!({DEPLOYMENT_NAME_LABEL: "md"}), None, None)]
fn machine_set_owners_and_revisions(
    #[case] kind_name: &str,
    #[case] labels: Value,
    #[case] deployment: Option<&str>,
    #[case] revision: Option<&str>,
) {
    let value = json!({"metadata": {"labels": labels,
        "annotations": {"machinedeployment.clusters.x-k8s.io/revision": "3"}}});
    let object: Object = serde_json::from_value(value).unwrap();
    let candidate = candidate_of(kind(kind_name), &object).unwrap();
    assert_eq!(candidate.deployment.as_deref(), deployment);
    assert_eq!(candidate.revision.as_deref(), revision);
}
