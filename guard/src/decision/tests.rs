//! The decision's tests, one table per row of docs/design.md, over the in-memory lookups.
use super::*;
use crate::capi::TemplateRef;
use crate::catalogue::{self, BOOTSTRAP_GROUP, INFRASTRUCTURE_GROUP, TemplateClass};
use crate::error::Failure;
use crate::references::NamedTemplate;
use crate::testing::{Memory, referrer_kind as kind};
use rstest::rstest;
use serde_json::json;

pub(super) fn template(group: &str, kind: &str, name: &str) -> Template {
    Template {
        reference: TemplateRef {
            group: group.into(),
            kind: kind.into(),
            name: name.into(),
        },
        class: catalogue::template_class(group, kind).expect("a guarded kind"),
        namespace: "ns".into(),
        node_reuse: false,
        moving: false,
        cluster_owners: vec![],
    }
}

pub(super) fn metal3(name: &str) -> Template {
    template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", name)
}

pub(super) fn names(field: &str, group: &str, kind: &str, name: &str) -> NamedTemplate {
    NamedTemplate {
        field: field.to_string().into(),
        reference: serde_json::from_value(json!({"apiGroup": group, "kind": kind, "name": name}))
            .unwrap(),
    }
}

pub(super) const INFRA: &str = "spec.template.spec.infrastructureRef";

pub(super) fn candidate(name: &str, named: Vec<NamedTemplate>) -> Candidate {
    Candidate {
        name: name.into(),
        named,
        ..Default::default()
    }
}

pub(super) fn naming_t(name: &str) -> Candidate {
    candidate(
        name,
        vec![names(
            INFRA,
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "t",
        )],
    )
}

fn kept(decision: Decision) -> Vec<(String, String, Vec<String>)> {
    match decision {
        Decision::Keep(referrers) => referrers
            .into_iter()
            .map(|r| {
                let fields = r.fields.into_iter().map(|f| f.into_owned()).collect();
                (r.kind.kind().to_string(), r.name, fields)
            })
            .collect(),
        Decision::Release(release) => panic!("released: {release:?}"),
    }
}

pub(super) fn decide_with(
    template: &Template,
    memory: &mut Memory,
) -> Result<Decision, LookupError> {
    decide(template, &Settings::default(), memory)
}

#[rstest]
#[case::row1_a_machine_deployment("MachineDeployment")]
#[case::row1_a_machine_set("MachineSet")]
#[case::row2_a_control_plane("RKE2ControlPlane")]
fn a_listed_referrer_keeps_the_template_it_names(#[case] referrer: &'static str) {
    let mut memory = Memory::default().with(referrer, vec![naming_t("r")]);
    assert_eq!(
        kept(decide_with(&metal3("t"), &mut memory).unwrap()),
        vec![(referrer.into(), "r".into(), vec![INFRA.into()])]
    );
}

#[test]
fn row1_a_machine_set_being_deleted_keeps_nothing() {
    let mut deleting = naming_t("ms");
    deleting.deleting = true;
    let mut memory = Memory::default().with("MachineSet", vec![deleting]);
    assert_eq!(
        decide_with(&metal3("t"), &mut memory),
        Ok(Decision::Release(ReleaseReason::Unused))
    );
}

#[test]
fn row1_scaled_down_machine_deployment_still_counts() {
    let mut md = naming_t("md");
    md.replicas = Some(0);
    md.machines = Some(0);
    let mut memory = Memory::default().with("MachineDeployment", vec![md]);
    assert!(matches!(
        decide_with(&metal3("t"), &mut memory),
        Ok(Decision::Keep(_))
    ));
}

#[rstest]
#[case::same_everything(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t", true)]
#[case::other_name(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "u", false)]
#[case::other_kind(INFRASTRUCTURE_GROUP, "AWSMachineTemplate", "t", false)]
#[case::other_group("infrastructure.example.com", "Metal3MachineTemplate", "t", false)]
fn row1_a_reference_names_kind_name_and_group(
    #[case] group: &str,
    #[case] kind_name: &str,
    #[case] name: &str,
    #[case] is_kept: bool,
) {
    let mut memory = Memory::default().with(
        "MachineSet",
        vec![candidate("ms", vec![names(INFRA, group, kind_name, name)])],
    );
    let decision = decide_with(&metal3("t"), &mut memory).unwrap();
    assert_eq!(matches!(decision, Decision::Keep(_)), is_kept);
}

/// A kind that is not installed is answered as an empty list by the lookups (its CRD is
/// absent); every failure is the decision's failure, never "none".
#[rstest]
#[case::capi_no_readable_version("MachineSet", Failure::NoReadableVersion)]
#[case::control_plane_wrong_version("KubeadmControlPlane", Failure::WrongVersion { setting: catalogue::VersionSetting::ControlPlane })]
#[case::control_plane_denied("KubeadmControlPlane", Failure::AccessDenied)]
#[case::unreadable_list("ClusterClass", Failure::Unreadable)]
#[case::other("TalosControlPlane", Failure::Other)]
fn a_failed_list_is_the_decisions_failure(#[case] failing: &'static str, #[case] failure: Failure) {
    let mut memory = Memory::default().failing(failing, failure);
    let decision = decide_with(&metal3("t"), &mut memory);
    assert_eq!(decision.unwrap_err().failure, failure);
}

/// Rule 1 (cluster-api issue 13536, PR 13558; CAPRKE2 issue 1004, PR 1007): a control plane
/// keeps its machine template while it is being deleted, and through its Cluster's deletion.
#[rstest]
#[case::kubeadm("KubeadmControlPlane")]
#[case::rke2("RKE2ControlPlane")]
#[case::talos("TalosControlPlane")]
#[case::etcdadm("EtcdadmCluster")]
fn rule1_a_deleting_control_plane_keeps_its_template_through_cluster_deletion(
    #[case] control_plane: &'static str,
) {
    let mut cp = naming_t("cp");
    cp.deleting = true;
    cp.cluster = Some("c".into());
    let mut t = metal3("t");
    t.cluster_owners = vec!["c".into()];
    let mut memory = Memory::default()
        .with(control_plane, vec![cp])
        .cluster_is("c", Ok(ClusterState::Deleting));
    assert_eq!(
        kept(decide_with(&t, &mut memory).unwrap()),
        vec![(control_plane.into(), "cp".into(), vec![INFRA.into()])]
    );
}

/// Rule 2 (CAPM3 PR 3168, >= 1.13): a MachineSet being deleted keeps a node-reuse template
/// while it has machines, or may have (no `status.replicas` written yet); an empty one keeps
/// nothing (the topology finalizer deletes its templates then, and must not deadlock).
#[rstest]
#[case::reuse_with_machines(true, Some(2), true)]
#[case::reuse_without_machines(true, Some(0), false)]
#[case::reuse_machines_not_counted_yet(true, None, true)]
#[case::no_reuse_with_machines(false, Some(2), false)]
fn rule2_a_deleting_machine_set_keeps_a_node_reuse_template_while_it_has_machines(
    #[case] node_reuse: bool,
    #[case] machines: Option<i64>,
    #[case] is_kept: bool,
) {
    let mut ms = naming_t("ms");
    ms.deleting = true;
    ms.replicas = Some(0);
    ms.machines = machines;
    let mut t = metal3("t");
    t.node_reuse = node_reuse;
    let mut memory = Memory::default().with("MachineSet", vec![ms]);
    let decision = decide_with(&t, &mut memory).unwrap();
    assert_eq!(
        matches!(decision, Decision::Keep(_)),
        is_kept,
        "{decision:?}"
    );
}

/// Rule 3: a deleting or gone Cluster releases only what its own objects need.
#[rstest]
#[case::own_machine_deployment("MachineDeployment", Some("c"), true)]
#[case::other_clusters_machine_deployment("MachineDeployment", Some("other"), false)]
#[case::machine_deployment_of_no_cluster("MachineDeployment", None, false)]
#[case::own_metal3_machine("Metal3Machine", Some("c"), true)]
#[case::a_cluster_class("ClusterClass", None, false)]
#[case::own_control_plane("KubeadmControlPlane", Some("c"), false)]
fn rule3_a_deleting_cluster_releases_only_what_its_own_objects_need(
    #[case] referrer: &'static str,
    #[case] cluster: Option<&str>,
    #[case] released: bool,
) {
    let mut r = naming_t("r");
    if referrer == "Metal3Machine" {
        r.named = vec![names(
            "metadata.annotations[cluster.x-k8s.io/cloned-from-name]",
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "t",
        )];
    }
    r.cluster = cluster.map(str::to_string);
    let mut t = metal3("t");
    t.node_reuse = true;
    t.cluster_owners = vec!["c".into()];
    let mut memory = Memory::default()
        .with(referrer, vec![r])
        .cluster_is("c", Ok(ClusterState::Deleting));
    let decision = decide_with(&t, &mut memory).unwrap();
    assert_eq!(
        decision == Decision::Release(ReleaseReason::ClusterDeleted),
        released,
        "{decision:?}"
    );
}

#[test]
fn rule3_beyond_the_owner_limit_row6_reads_no_cluster_and_keeps() {
    let mut t = metal3("t");
    t.cluster_owners = (0..=MAX_CLUSTER_OWNERS).map(|i| format!("c{i}")).collect();
    let mut md = naming_t("md");
    md.cluster = Some("c0".into());
    let mut memory = Memory::default().with("MachineDeployment", vec![md]);
    assert!(matches!(
        decide_with(&t, &mut memory),
        Ok(Decision::Keep(_))
    ));
    assert!(!memory.asked.iter().any(|a| a.starts_with("Cluster ")));
    // At the limit, every owner is read.
    t.cluster_owners.pop();
    let mut memory = Memory::default().with("MachineDeployment", vec![naming_t("md")]);
    decide_with(&t, &mut memory).unwrap();
    let reads = memory
        .asked
        .iter()
        .filter(|a| a.starts_with("Cluster "))
        .count();
    assert_eq!(reads, MAX_CLUSTER_OWNERS);
}

/// Rule 5: remediation templates are kept by MachineHealthChecks, ClusterClass health checks
/// and a Cluster's topology health checks, and read only from those kinds.
#[rstest]
#[case::health_check("MachineHealthCheck", "spec.remediation.templateRef")]
#[case::cluster_class(
    "ClusterClass",
    "spec.controlPlane.healthCheck.remediation.templateRef"
)]
#[case::cluster_topology(
    "Cluster",
    "spec.topology.controlPlane.machineHealthCheck.remediationTemplate"
)]
fn rule5_remediation_templates_are_kept_by_health_checks(
    #[case] referrer: &'static str,
    #[case] field: &str,
) {
    let t = template(INFRASTRUCTURE_GROUP, "Metal3RemediationTemplate", "t");
    let naming = candidate(
        "r",
        vec![names(
            field,
            INFRASTRUCTURE_GROUP,
            "Metal3RemediationTemplate",
            "t",
        )],
    );
    let mut memory = Memory::default().with(referrer, vec![naming]);
    assert_eq!(
        kept(decide_with(&t, &mut memory).unwrap()),
        vec![(referrer.into(), "r".into(), vec![field.into()])]
    );
    assert_eq!(
        memory.asked,
        ["ClusterClass", "MachineHealthCheck", "Cluster"]
    );
}

#[rstest]
#[case::infrastructure_cluster_template(
    INFRASTRUCTURE_GROUP,
    "Metal3ClusterTemplate",
    "spec.infrastructure.templateRef"
)]
#[case::control_plane_template(
    "controlplane.cluster.x-k8s.io",
    "KubeadmControlPlaneTemplate",
    "spec.controlPlane.templateRef"
)]
#[case::managed_control_plane_template(
    INFRASTRUCTURE_GROUP,
    "AzureManagedControlPlaneTemplate",
    "spec.controlPlane.ref"
)]
#[case::machine_pool_template(
    INFRASTRUCTURE_GROUP,
    "DockerMachinePoolTemplate",
    "spec.workers.machinePools[class=p].infrastructure.templateRef"
)]
fn row3_cluster_class_templates_are_kept_by_cluster_classes_only(
    #[case] group: &str,
    #[case] kind_name: &str,
    #[case] field: &str,
) {
    let mut memory = Memory::default().with(
        "ClusterClass",
        vec![candidate("cc", vec![names(field, group, kind_name, "t")])],
    );
    let t = template(group, kind_name, "t");
    assert_eq!(
        kept(decide_with(&t, &mut memory).unwrap()),
        vec![("ClusterClass".into(), "cc".into(), vec![field.into()])]
    );
    assert_eq!(memory.asked, vec!["ClusterClass"]);
}

#[test]
fn row3_a_cluster_class_being_deleted_releases_its_templates() {
    let mut cc = candidate(
        "cc",
        vec![names(
            "spec.infrastructure.ref",
            INFRASTRUCTURE_GROUP,
            "Metal3ClusterTemplate",
            "t",
        )],
    );
    cc.deleting = true;
    let mut memory = Memory::default().with("ClusterClass", vec![cc]);
    let t = template(INFRASTRUCTURE_GROUP, "Metal3ClusterTemplate", "t");
    assert_eq!(
        decide_with(&t, &mut memory),
        Ok(Decision::Release(ReleaseReason::Unused))
    );
}

fn cloned_from_t(name: &str, deleting: bool) -> Candidate {
    let mut c = candidate(
        name,
        vec![names(
            "metadata.annotations[cluster.x-k8s.io/cloned-from-name]",
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "t",
        )],
    );
    c.deleting = deleting;
    c
}

#[rstest]
#[case::node_reuse_live_machine(true, false, true)]
#[case::node_reuse_deleting_machine(true, true, true)]
#[case::no_node_reuse(false, false, false)]
fn row4_metal3_machines_keep_a_node_reuse_template(
    #[case] node_reuse: bool,
    #[case] deleting: bool,
    #[case] is_kept: bool,
) {
    let mut t = metal3("t");
    t.node_reuse = node_reuse;
    let mut memory = Memory::default().with("Metal3Machine", vec![cloned_from_t("m", deleting)]);
    let decision = decide_with(&t, &mut memory).unwrap();
    assert_eq!(matches!(decision, Decision::Keep(_)), is_kept);
    assert_eq!(
        memory.asked.contains(&"Metal3Machine".to_string()),
        node_reuse
    );
}

/// The control planes, in catalogue order: each can keep a machine template.
const CONTROL_PLANES: [&str; 12] = [
    "KubeadmControlPlane",
    "RKE2ControlPlane",
    "TalosControlPlane",
    "MicroK8sControlPlane",
    "CK8sControlPlane",
    "K0sControlPlane",
    "KThreesControlPlane",
    "OCNEControlPlane",
    "K3sControlPlane",
    "OpenshiftAssistedControlPlane",
    "KairosControlPlane",
    "EtcdadmCluster",
];

fn machine_keepers(node_reuse: bool) -> Vec<&'static str> {
    let mut kinds = vec!["MachineDeployment", "MachineSet"];
    kinds.extend(CONTROL_PLANES);
    kinds.push("ClusterClass");
    if node_reuse {
        kinds.push("Metal3Machine");
    }
    kinds
}

#[rstest]
#[case::node_reuse_machine_template(
    INFRASTRUCTURE_GROUP,
    "Metal3MachineTemplate",
    true,
    machine_keepers(true)
)]
#[case::other_machine_template(
    INFRASTRUCTURE_GROUP,
    "OpenStackMachineTemplate",
    false,
    machine_keepers(false)
)]
#[case::bootstrap_template(BOOTSTRAP_GROUP, "TalosConfigTemplate", false, vec!["MachineDeployment", "MachineSet", "KairosControlPlane", "ClusterClass"])]
fn rows_1_to_4_read_only_the_kinds_that_can_name_the_template(
    #[case] group: &str,
    #[case] kind_name: &str,
    #[case] node_reuse: bool,
    #[case] asked: Vec<&str>,
) {
    let mut memory = Memory::default();
    let mut t = template(group, kind_name, "t");
    t.node_reuse = node_reuse;
    decide_with(&t, &mut memory).unwrap();
    assert_eq!(memory.asked, asked);
}

#[test]
fn referrers_are_sorted_by_kind_then_name_with_sorted_fields() {
    let both = candidate(
        "b",
        vec![
            names(INFRA, INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t"),
            names(
                "spec.infrastructureRef",
                INFRASTRUCTURE_GROUP,
                "Metal3MachineTemplate",
                "t",
            ),
            names(INFRA, INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t"),
        ],
    );
    let mut memory = Memory::default()
        .with("ClusterClass", vec![naming_t("a")])
        .with("MachineSet", vec![naming_t("z"), naming_t("a")])
        .with("RKE2ControlPlane", vec![both]);
    assert_eq!(
        kept(decide_with(&metal3("t"), &mut memory).unwrap()),
        vec![
            ("MachineSet".into(), "a".into(), vec![INFRA.into()]),
            ("MachineSet".into(), "z".into(), vec![INFRA.into()]),
            (
                "RKE2ControlPlane".into(),
                "b".into(),
                vec!["spec.infrastructureRef".into(), INFRA.into()]
            ),
            ("ClusterClass".into(), "a".into(), vec![INFRA.into()]),
        ]
    );
}

#[test]
fn row5_move_is_released_before_any_lookup() {
    let mut t = metal3("t");
    t.moving = true;
    let mut memory = Memory::default().with("MachineDeployment", vec![naming_t("md")]);
    assert_eq!(
        decide_with(&t, &mut memory),
        Ok(Decision::Release(ReleaseReason::Moving))
    );
    assert!(memory.asked.is_empty());
}

#[rstest]
#[case::one_deleting(vec![("c", Ok(ClusterState::Deleting))], Ok(true))]
#[case::one_gone(vec![("c", Ok(ClusterState::Gone))], Ok(true))]
#[case::one_live(vec![("c", Ok(ClusterState::Live))], Ok(false))]
#[case::one_of_two_live(vec![("a", Ok(ClusterState::Deleting)), ("b", Ok(ClusterState::Live))], Ok(false))]
#[case::lookup_fails(vec![("c", Err(Failure::Other))], Err(Failure::Other))]
fn row6_owning_clusters(
    #[case] clusters: Vec<(&str, Result<ClusterState, Failure>)>,
    #[case] released: Result<bool, Failure>,
) {
    let mut t = metal3("t");
    let mut md = naming_t("md");
    md.cluster = clusters.first().map(|(name, _)| name.to_string());
    let mut memory = Memory::default().with("MachineDeployment", vec![md]);
    for (name, state) in clusters {
        t.cluster_owners.push(name.into());
        memory = memory.cluster_is(name, state);
    }
    let decision = decide_with(&t, &mut memory);
    assert_eq!(
        decision
            .map(|d| d == Decision::Release(ReleaseReason::ClusterDeleted))
            .map_err(|e| e.failure),
        released
    );
}

#[test]
fn row6_clusters_are_read_only_when_something_refers_to_the_template() {
    let mut t = metal3("t");
    t.cluster_owners = vec!["c".into()];
    let mut memory = Memory::default();
    assert_eq!(
        decide_with(&t, &mut memory),
        Ok(Decision::Release(ReleaseReason::Unused))
    );
    assert!(!memory.asked.iter().any(|a| a.starts_with("Cluster ")));
}

#[test]
fn row6_without_cluster_owners_keeps_without_a_cluster_lookup() {
    let mut memory = Memory::default().with("MachineDeployment", vec![naming_t("md")]);
    assert!(matches!(
        decide_with(&metal3("t"), &mut memory),
        Ok(Decision::Keep(_))
    ));
    assert!(!memory.asked.iter().any(|a| a.starts_with("Cluster ")));
}

#[test]
fn every_template_class_has_a_referrer() {
    for class in TemplateClass::ALL {
        assert!(
            REFERRERS.iter().any(|k| k.can_keep(class, false)),
            "{class:?}"
        );
    }
    assert!(kind("Metal3Machine").only_node_reuse);
}

/// Issue: Sylva's collector deleted a freshly rendered Metal3DataTemplate and a rolling upgrade
/// hung (sylva-core issue 2820). Its keepers, from CAPM3's API types: Metal3MachineTemplates,
/// Metal3Machines, Metal3DataClaims and Metal3Datas; nothing else is asked.
#[rstest]
#[case::machine_template("Metal3MachineTemplate", "spec.template.spec.dataTemplate")]
#[case::machine_template_failure_domain(
    "Metal3MachineTemplate",
    "spec.failureDomainDataTemplates[failureDomain=rack-1].dataTemplate"
)]
#[case::machine("Metal3Machine", "spec.dataTemplate")]
#[case::claim("Metal3DataClaim", "spec.template")]
#[case::data("Metal3Data", "spec.template")]
fn a_data_template_is_kept_by_what_names_it(#[case] referrer: &'static str, #[case] field: &str) {
    let t = template(INFRASTRUCTURE_GROUP, "Metal3DataTemplate", "d");
    let naming = candidate(
        "r",
        vec![names(
            field,
            INFRASTRUCTURE_GROUP,
            "Metal3DataTemplate",
            "d",
        )],
    );
    let mut memory = Memory::default().with(referrer, vec![naming]);
    let decision = decide_with(&t, &mut memory).unwrap();
    assert_eq!(
        kept(decision),
        vec![(referrer.into(), "r".into(), vec![field.into()])]
    );
    assert_eq!(
        memory.asked,
        [
            "Metal3Machine",
            "Metal3MachineTemplate",
            "Metal3DataClaim",
            "Metal3Data"
        ]
    );
}

/// A Metal3MachineTemplate or a claim being deleted keeps nothing: it clones no more machines,
/// and CAPM3's own finalizer waits for claims.
#[rstest]
#[case::machine_template("Metal3MachineTemplate")]
#[case::claim("Metal3DataClaim")]
fn a_data_template_user_being_deleted_keeps_nothing(#[case] referrer: &'static str) {
    let t = template(INFRASTRUCTURE_GROUP, "Metal3DataTemplate", "d");
    let mut naming = candidate(
        "r",
        vec![names(
            "spec.template",
            INFRASTRUCTURE_GROUP,
            "Metal3DataTemplate",
            "d",
        )],
    );
    naming.deleting = true;
    let mut memory = Memory::default().with(referrer, vec![naming]);
    assert_eq!(
        decide_with(&t, &mut memory),
        Ok(Decision::Release(ReleaseReason::Unused))
    );
}

fn scanned_control_plane(name: &str, reference: serde_json::Value) -> serde_json::Value {
    json!({"kind": "FooControlPlane", "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": "c"}},
        "spec": {"machineTemplate": {"infrastructureRef": reference}}})
}

/// A kind the catalogue cannot read field by field is scanned: any map in its spec naming the
/// template's kind and name (and group, where it gives one) keeps it, named by object and path.
#[rstest]
#[case::named(json!({"kind": "Metal3MachineTemplate", "name": "t"}), true)]
#[case::named_with_group(json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "t"}), true)]
#[case::other_group(json!({"apiVersion": "infrastructure.example.com/v1", "kind": "Metal3MachineTemplate", "name": "t"}), false)]
#[case::other_name(json!({"kind": "Metal3MachineTemplate", "name": "u"}), false)]
#[case::no_kind(json!({"name": "t"}), false)]
#[case::not_a_reference(json!("t"), false)]
fn a_scanned_reference_keeps_the_template(
    #[case] reference: serde_json::Value,
    #[case] is_kept: bool,
) {
    let mut memory = Memory::default().scanning(Ok(vec![(
        "FooControlPlane",
        vec![scanned_control_plane("cp", reference)],
    )]));
    let decision = decide_with(&metal3("t"), &mut memory).unwrap();
    match decision {
        Decision::Keep(referrers) => {
            assert!(is_kept);
            assert_eq!(referrers[0].kind, Keeper::Scanned("FooControlPlane".into()));
            assert_eq!(
                referrers[0].fields,
                ["spec.machineTemplate.infrastructureRef"]
            );
        }
        Decision::Release(_) => assert!(!is_kept),
    }
    assert_eq!(memory.scanned_for, [TemplateClass::Machine]);
}

/// A scanned object keeps its template through its Cluster's deletion (nothing says it lets go),
/// and a scan that cannot be done is the decision's failure.
#[test]
fn a_scanned_keeper_is_not_released_with_its_cluster_and_a_failed_scan_fails() {
    let mut t = metal3("t");
    t.cluster_owners = vec!["c".into()];
    let reference = json!({"kind": "Metal3MachineTemplate", "name": "t"});
    let mut memory = Memory::default()
        .scanning(Ok(vec![(
            "FooControlPlane",
            vec![scanned_control_plane("cp", reference)],
        )]))
        .cluster_is("c", Ok(ClusterState::Deleting));
    assert!(matches!(
        decide_with(&t, &mut memory),
        Ok(Decision::Keep(_))
    ));
    let mut memory = Memory::default().scanning(Err(Failure::AccessDenied));
    assert_eq!(
        decide_with(&metal3("t"), &mut memory).map_err(|e| e.failure),
        Err(Failure::AccessDenied)
    );
}

/// A referrer listed across namespaces names the template in its own namespace (Cluster API 1.8
/// and older read the Cluster's) and in the namespace its reference gives (1.9 and 1.10 read
/// `ref.Namespace`); a referrer of another namespace whose reference gives none or another names
/// it nowhere.
#[rstest]
#[case::another_namespace_naming_the_templates(
    Some("edge-east"),
    Some("ns"),
    Some(Some("edge-east"))
)]
#[case::own_namespace_empty_reference(Some("ns"), None, Some(None))]
#[case::own_namespace_naming_another(Some("ns"), Some("edge-west"), Some(None))]
#[case::another_namespace_naming_a_third(Some("edge-east"), Some("edge-west"), None)]
#[case::another_namespace_no_reference_namespace(Some("edge-east"), None, None)]
#[case::another_namespace_empty_reference(Some("edge-east"), Some(""), None)]
#[case::listed_in_the_namespace_ignores_the_field(None, Some("edge-west"), Some(None))]
fn row1_references_across_namespaces(
    #[case] listed_in: Option<&str>,
    #[case] reference_namespace: Option<&str>,
    #[case] kept_from: Option<Option<&str>>,
) {
    let mut md = naming_t("md");
    md.namespace = listed_in.map(str::to_string);
    md.named[0].reference.namespace = reference_namespace.map(str::to_string);
    let mut memory = Memory::default().with("MachineDeployment", vec![md]);
    let decision = decide_with(&metal3("t"), &mut memory).unwrap();
    let got = match decision {
        Decision::Keep(referrers) => Some(referrers[0].namespace.clone()),
        Decision::Release(_) => None,
    };
    assert_eq!(got, kept_from.map(|ns| ns.map(str::to_string)));
}

/// Row 6 releases only the referrers of the template's own namespace: an object of another
/// namespace belongs to a Cluster there, never to the template's owner of the same name.
#[test]
fn row6_a_referrer_in_another_namespace_is_not_released_with_the_owner() {
    let mut md = naming_t("md");
    md.namespace = Some("edge-east".into());
    md.cluster = Some("edge-a".into());
    md.named[0].reference.namespace = Some("ns".into());
    let mut memory = Memory::default()
        .with("MachineDeployment", vec![md])
        .cluster_is("edge-a", Ok(ClusterState::Deleting));
    let t = Template {
        cluster_owners: vec!["edge-a".into()],
        ..metal3("t")
    };
    assert!(matches!(
        decide_with(&t, &mut memory),
        Ok(Decision::Keep(_))
    ));
}
