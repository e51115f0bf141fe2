//! The live probe's reading, as tables: which template the guard's own decision keeps, and
//! which referrers count.

use guard::settings::Settings;
use rstest::rstest;
use serde_json::{Value, json};
use template_cleanup_core::answer::ErrorStatus;
use template_cleanup_core::delete_decision::{Referrers, Verdict};
use template_cleanup_core::probe::{
    MACHINE_DEPLOYMENT, Named, Probe, being_deleted, judge, targets,
};

mod common;
use common::*;

fn md(shape: &str, deleting: bool) -> Value {
    let (infra, bootstrap) = match shape {
        "v1beta1" => (
            json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate", "name": "m3mt-a", "namespace": "edge"}),
            json!({"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": "kct-a"}),
        ),
        _ => (
            json!({"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-a"}),
            json!({"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "kct-a"}),
        ),
    };
    let mut md = json!({"apiVersion": format!("cluster.x-k8s.io/{shape}"), "kind": "MachineDeployment",
        "metadata": {"name": "md", "namespace": "edge"},
        "spec": {"clusterName": "a", "template": {"spec": {"clusterName": "a", "infrastructureRef": infra, "bootstrap": {"configRef": bootstrap}}}}});
    if deleting {
        md["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    md
}

fn named(group: &str, kind: &str, name: &str) -> Named {
    Named {
        group: group.into(),
        kind: kind.into(),
        namespace: "edge".into(),
        name: name.into(),
    }
}

fn deployments(mds: &[Value]) -> Referrers {
    let mut deployments = Referrers::default();
    for md in mds {
        deployments.add(MACHINE_DEPLOYMENT, md).unwrap();
    }
    deployments
}

/// The targets come from the guard's own reading of a MachineDeployment's fields.
#[rstest]
#[case::v1beta1(md("v1beta1", false), 2)]
#[case::v1beta2(md("v1beta2", false), 2)]
#[case::being_deleted(md("v1beta2", true), 0)]
#[case::no_bootstrap(with(md("v1beta2", false), "/spec/template/spec/bootstrap", json!({"dataSecretName": "s"})), 1)]
#[case::no_namespace(with(md("v1beta1", false), "/metadata/namespace", Value::Null), 0)]
fn a_live_machine_deployment_names_the_probes_targets(#[case] md: Value, #[case] count: usize) {
    let expected = [
        named(
            "bootstrap.cluster.x-k8s.io",
            "KubeadmConfigTemplate",
            "kct-a",
        ),
        named(INFRA, "Metal3MachineTemplate", "m3mt-a"),
    ];
    let named = targets(&deployments(&[md]));
    assert_eq!(named.len(), count, "{named:?}");
    assert!(named.iter().all(|n| expected.contains(n)), "{named:?}");
}

#[test]
fn a_machine_deployment_the_guard_cannot_read_is_an_error() {
    let bad = with(
        md("v1beta2", false),
        "/spec/template/spec/infrastructureRef",
        json!("m3mt-a"),
    );
    let error = Referrers::default()
        .add(MACHINE_DEPLOYMENT, &bad)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("MachineDeployment edge/md cannot be read: "),
        "{error}"
    );
}

fn template(annotations: Value, owners: Value) -> Value {
    json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3MachineTemplate",
        "metadata": {"name": "m3mt-a", "namespace": "edge", "annotations": annotations, "ownerReferences": owners}})
}

fn owned_by_a() -> Value {
    json!([{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "a", "uid": "1"}])
}

/// Cluster `a` as listed, being deleted or not.
fn cluster_a(deleting: bool) -> Value {
    let mut cluster = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "a", "namespace": "edge"}, "spec": {}});
    if deleting {
        cluster["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    cluster
}

/// The probe's target is what the guard's own decision keeps: row 1 (a MachineDeployment names
/// it), row 5 (clusterctl move lets it go), row 6 (its Cluster is being deleted).
#[rstest]
#[case::named_by_a_live_deployment(template(json!({}), json!([])), None, "keeps")]
#[case::moving(template(json!({"clusterctl.cluster.x-k8s.io/delete-for-move": ""}), json!([])), None, "releases")]
#[case::its_cluster_live(template(json!({}), owned_by_a()), Some(false), "keeps")]
#[case::its_cluster_deleting(template(json!({}), owned_by_a()), Some(true), "releases")]
#[case::its_cluster_unread(template(json!({}), owned_by_a()), None, "releases")]
fn the_guards_own_decision_picks_the_target(
    #[case] template: Value,
    #[case] cluster_deleting: Option<bool>,
    #[case] expected: &str,
) {
    let target = named(INFRA, "Metal3MachineTemplate", "m3mt-a");
    let mut referrers = deployments(&[md("v1beta2", false)]);
    if let Some(deleting) = cluster_deleting {
        referrers.add("Cluster", &cluster_a(deleting)).unwrap();
    }
    let verdict =
        referrers.guard_decides(&target.group, &target.kind, &template, &Settings::default());
    match (expected, &verdict) {
        ("keeps", Verdict::Keeps(text)) => assert!(text.contains("MachineDeployment md"), "{text}"),
        ("releases", Verdict::Releases(_)) => {}
        _ => panic!("expected the guard to say {expected}, got {verdict:?}"),
    }
}

/// A MachineSet keeps its template as the guard decides it: one still scaled up keeps it, an
/// old revision scaled to zero lets it go (retired), as does one whose MachineDeployment is
/// gone (read at v1beta2); the current revision and one outside a MachineDeployment keep it
/// even at zero.
#[rstest]
#[case::scaled_up(json!(2), json!(2), Some("1"), true, "keeps")]
#[case::retired_revision(json!(0), json!(0), Some("1"), true, "releases")]
#[case::current_revision_at_zero(json!(0), json!(0), Some("2"), true, "keeps")]
#[case::owner_gone(json!(2), json!(2), None, true, "releases")]
#[case::standalone_at_zero(json!(0), json!(0), Some("1"), false, "keeps")]
fn a_machine_set_keeps_as_the_guard_decides(
    #[case] replicas: Value,
    #[case] machines: Value,
    #[case] revision: Option<&str>,
    #[case] in_deployment: bool,
    #[case] expected: &str,
) {
    let mut labels = json!({"cluster.x-k8s.io/cluster-name": "a"});
    if in_deployment {
        labels["cluster.x-k8s.io/deployment-name"] = json!("md");
    }
    let ms = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
        "metadata": {"name": "md-7f9c", "namespace": "edge", "labels": labels,
            "annotations": {"machinedeployment.clusters.x-k8s.io/revision": revision.unwrap_or("1")}},
        "spec": {"clusterName": "a", "replicas": replicas, "template": {"spec": {"clusterName": "a",
            "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-a"}}}},
        "status": {"replicas": machines}});
    let mut referrers = Referrers::default();
    // Its MachineDeployment, at revision 2, has moved on to another template; none when the
    // MachineSet's owner is gone.
    if revision.is_some() {
        let md = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": "md", "namespace": "edge",
                "annotations": {"machinedeployment.clusters.x-k8s.io/revision": "2"}},
            "spec": {"clusterName": "a", "template": {"spec": {"clusterName": "a",
                "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-b"}}}}});
        referrers.add("MachineDeployment", &md).unwrap();
    }
    referrers.add("MachineSet", &ms).unwrap();
    assert!(
        targets(&referrers).iter().all(|n| n.name != "m3mt-a"),
        "MachineSets are no probe targets"
    );
    let verdict = referrers.guard_decides(
        INFRA,
        "Metal3MachineTemplate",
        &template(json!({}), json!([])),
        &Settings::default(),
    );
    match (expected, &verdict) {
        ("keeps", Verdict::Keeps(text)) => assert!(text.contains("MachineSet md-7f9c"), "{text}"),
        ("releases", Verdict::Releases(_)) => {}
        _ => panic!("expected the guard to say {expected}, got {verdict:?}"),
    }
}

/// Every referrer kind the guard reads counts, as it decides: a control plane keeps its
/// machine template; a listed Cluster being deleted lets go of the template it owns that only its
/// own MachineDeployment names (row 6), a live one does not.
#[rstest]
#[case::control_plane("KubeadmControlPlane", None, "keeps")]
#[case::owning_cluster_live("MachineDeployment", Some(false), "keeps")]
#[case::owning_cluster_deleting("MachineDeployment", Some(true), "releases")]
fn every_listed_referrer_kind_counts(
    #[case] kind: &str,
    #[case] cluster_deleting: Option<bool>,
    #[case] expected: &str,
) {
    let referrer = match kind {
        "KubeadmControlPlane" => {
            json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": kind,
            "metadata": {"name": "cp", "namespace": "edge", "labels": {"cluster.x-k8s.io/cluster-name": "a"}},
            "spec": {"machineTemplate": {"spec": {"infrastructureRef":
                {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-a"}}}}})
        }
        _ => md("v1beta2", false),
    };
    let mut referrers = Referrers::default();
    referrers.add(kind, &referrer).unwrap();
    let mut owners = json!([]);
    if let Some(deleting) = cluster_deleting {
        referrers.add("Cluster", &cluster_a(deleting)).unwrap();
        owners = owned_by_a();
    }
    let verdict = referrers.guard_decides(
        INFRA,
        "Metal3MachineTemplate",
        &template(json!({}), owners),
        &Settings::default(),
    );
    match (expected, &verdict) {
        ("keeps", Verdict::Keeps(_)) | ("releases", Verdict::Releases(_)) => {}
        _ => panic!("expected the guard to say {expected}, got {verdict:?}"),
    }
}

#[test]
fn a_template_no_deployment_names_is_let_go() {
    let target = named(INFRA, "Metal3MachineTemplate", "m3mt-a");
    let verdict = Referrers::default().guard_decides(
        &target.group,
        &target.kind,
        &template(json!({}), json!([])),
        &Settings::default(),
    );
    assert!(matches!(verdict, Verdict::Releases(_)), "{verdict:?}");
}

#[test]
fn a_template_being_deleted_is_no_target() {
    assert!(!being_deleted(&json!({"metadata": {"name": "t"}})));
    assert!(being_deleted(
        &json!({"metadata": {"name": "t", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    ));
}

/// Only the guard's refusal proves it judges; 404 and a failed precondition try another
/// template; anything else stops the pass, saying what came back.
#[rstest]
#[case::refused(Some(refused(409, "", &format!("{DENIED}m3mt-a is referenced by MachineDeployment edge/md"), &[])), Probe::Judged("m3mt-a is referenced by MachineDeployment edge/md".into()))]
#[case::allowed_monitor_mode(None, Probe::NotJudged("2xx: the DELETE would have gone through, so the pods that answer do not refuse it (monitor mode, an older configuration, or rules that miss it)".into()))]
#[case::gone(Some(refused(404, "NotFound", "not found", &[])), Probe::Moved)]
#[case::recreated(Some(refused(409, "Conflict", BEFORE_DELETE_UID, &[])), Probe::Moved)]
#[case::the_main_guard_answered(Some(refused(409, "", &DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"), &[])), Probe::NotJudged(format!("409: {}", DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"))))]
#[case::unreachable(Some(refused(500, "InternalError", "Internal error occurred: failed calling webhook", &[])), Probe::NotJudged("500 InternalError: Internal error occurred: failed calling webhook".into()))]
fn the_probes_answer(#[case] answer: Option<ErrorStatus>, #[case] probe: Probe) {
    assert_eq!(judge("capi-template-guard-cleanup", answer.as_ref()), probe);
}
