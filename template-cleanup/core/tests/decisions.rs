//! The decisions as tables: candidates, deploy tools' desired state (on the shapes the tools
//! write). The pre-flight, the probe and the answers to a DELETE are in preflight.rs; Argo CD and
//! Helm in deploy_tools.rs; the sources table against the examples and docs in sources.rs.

use std::collections::BTreeMap;

use rstest::rstest;
use serde_json::{Value, json};
use template_cleanup_core::declared::{Declared, flux_kustomization};
use template_cleanup_core::select::{ListedTemplate, Skip, candidate};
use template_cleanup_core::{CLEANUP_LABEL, CLEANUP_VALUE, DeclaredObject};

mod common;
use common::{INFRA, m3mt, oref};

fn template(labels: &[(&str, &str)], created: i64, deleting: bool) -> ListedTemplate {
    ListedTemplate {
        guarded: None,
        kind: m3mt("v1beta1"),
        namespace: "edge".into(),
        name: "t1".into(),
        uid: "u".into(),
        resource_version: "1".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        created,
        deleting,
    }
}

const LABEL: (&str, &str) = (CLEANUP_LABEL, CLEANUP_VALUE);
const TOPOLOGY: (&str, &str) = ("topology.cluster.x-k8s.io/owned", "");

#[rstest]
#[case::labelled_and_old(vec![LABEL], 0, false, false, Ok(()))]
#[case::topology_copy(vec![TOPOLOGY], 0, false, false, Ok(()))]
#[case::label_false(vec![(CLEANUP_LABEL, "false")], 0, false, false, Err(Skip::NotMarked))]
#[case::unmarked(vec![], 0, false, false, Err(Skip::NotMarked))]
#[case::topology_copy_opted_out(vec![TOPOLOGY, (CLEANUP_LABEL, "false")], 0, false, false, Err(Skip::NotMarked))]
#[case::topology_copy_other_value(vec![TOPOLOGY, (CLEANUP_LABEL, "no")], 0, false, false, Ok(()))]
#[case::being_deleted(vec![LABEL], 0, true, false, Err(Skip::BeingDeleted))]
#[case::young(vec![LABEL], 1000 - 599, false, false, Err(Skip::TooYoung))]
#[case::exactly_min_age(vec![LABEL], 1000 - 600, false, false, Ok(()))]
#[case::declared(vec![LABEL], 0, false, true, Err(Skip::Declared { by: "Kustomization flux-system/sites".into() }))]
#[case::declared_topology_copy(vec![TOPOLOGY], 0, false, true, Err(Skip::Declared { by: "Kustomization flux-system/sites".into() }))]
fn candidates(
    #[case] labels: Vec<(&str, &str)>,
    #[case] created: i64,
    #[case] deleting: bool,
    #[case] is_declared: bool,
    #[case] expected: Result<(), Skip>,
) {
    let t = template(&labels, created, deleting);
    let mut declared = Declared::default();
    // a declaration of another version of the same object counts; another name does not
    declared.insert(
        DeclaredObject {
            name: "t2".into(),
            ..t.declared_object()
        },
        "Kustomization other/x",
    );
    if is_declared {
        declared.insert(t.declared_object(), "Kustomization flux-system/sites");
    }
    assert_eq!(candidate(&t, 1000, 600, &declared), expected);
}

// --- deploy tools' desired state

/// A Flux Kustomization's status as kustomize-controller (api/v1) writes it.
#[test]
fn flux_inventory_entries_name_namespace_name_group_and_kind() {
    let k: Value = yaml_serde::from_str(
        r#"
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: sites, namespace: flux-system}
status:
  inventory:
    entries:
      - id: edge_site-a-md-v2_infrastructure.cluster.x-k8s.io_Metal3MachineTemplate
        v: v1beta1
      - id: edge_site-a__ConfigMap
        v: v1
      - id: _edge__Namespace
        v: v1
      - id: _system__controller__manager_rbac.authorization.k8s.io_ClusterRole
        v: v1
"#,
    )
    .unwrap();
    let refs = flux_kustomization(&k).unwrap();
    assert_eq!(
        refs,
        vec![
            oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
            oref("", "ConfigMap", "edge", "site-a"),
            oref("", "Namespace", "", "edge"),
            oref(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "",
                "system:controller:manager"
            ),
        ]
    );
    assert_eq!(flux_kustomization(&json!({"status": {}})).unwrap(), vec![]);
    let bad = json!({"metadata": {"name": "k", "namespace": "n"}, "status": {"inventory": {"entries": [{"id": "nounderscores"}]}}});
    assert_eq!(
        flux_kustomization(&bad).unwrap_err().to_string(),
        "Flux Kustomization n/k: inventory id \"nounderscores\" is not <namespace>_<name>_<group>_<Kind>."
    );
}

/// The pass's clock in the table below, after 2026-01-01.
const NOW: i64 = 1_767_300_000;

/// A listed object as a template: its creation time parsed (none: created now), its labels, its
/// deletionTimestamp; without name, uid or resourceVersion it is an error (the DELETE's
/// preconditions need them).
#[rstest]
#[case::parsed(json!({"creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"}}), Ok((1_767_225_600, false, 1)))]
#[case::no_creation_time_is_now(json!({}), Ok((NOW, false, 0)))]
#[case::being_deleted(json!({"deletionTimestamp": "2026-01-01T00:00:00Z"}), Ok((NOW, true, 0)))]
#[case::null_deletion_time(json!({"deletionTimestamp": null}), Ok((NOW, false, 0)))]
#[case::no_uid(json!({"uid": null}), Err(()))]
#[case::no_resource_version(json!({"resourceVersion": ""}), Err(()))]
#[case::no_name(json!({"name": null}), Err(()))]
fn a_listed_object_as_a_template(
    #[case] metadata: Value,
    #[case] want: Result<(i64, bool, usize), ()>,
) {
    let mut item = json!({"metadata": {"namespace": "edge", "name": "t1", "uid": "u", "resourceVersion": "7"}});
    for (key, value) in metadata.as_object().into_iter().flatten() {
        item["metadata"][key] = value.clone();
    }
    match (
        ListedTemplate::from_listed(&m3mt("v1beta2"), &item, NOW),
        want,
    ) {
        (Ok(t), Ok((created, deleting, labels))) => {
            assert_eq!(
                (t.created, t.deleting, t.labels.len()),
                (created, deleting, labels)
            );
            assert_eq!((t.uid.as_str(), t.resource_version.as_str()), ("u", "7"));
            assert_eq!(t.kind, m3mt("v1beta2"));
        }
        (Err(e), Err(())) => assert_eq!(
            e.to_string(),
            format!(
                "the API server listed a metal3machinetemplates.{INFRA} without name, uid or resourceVersion (edge/{}).",
                item["metadata"]["name"].as_str().unwrap_or("")
            )
        ),
        (got, want) => panic!("got {got:?}, want {want:?}"),
    }
}
