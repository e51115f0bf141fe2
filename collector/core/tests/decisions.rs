//! The decisions as tables: candidates, deploy tools' desired state (on the shapes the tools
//! write). The pre-flight, the probe and the answers to a DELETE are in preflight.rs.

use std::collections::BTreeMap;
use std::io::Write;

use base64::Engine;
use rstest::rstest;
use serde_json::{json, Value};
use template_cleanup_core::declared::{
    argo_application, flux_helm_storage_namespaces, flux_kustomization, helm_current,
    helm_release_secret, Declared, HelmRevision,
};
use template_cleanup_core::select::{candidate, Skip, Template};
use template_cleanup_core::{Kind, ObjectRef};

const INFRA: &str = "infrastructure.cluster.x-k8s.io";

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> Kind {
    Kind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn m3mt(version: &str) -> Kind {
    kind(
        INFRA,
        version,
        "Metal3MachineTemplate",
        "metal3machinetemplates",
    )
}

fn oref(group: &str, kind: &str, namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        group: group.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

fn template(labels: &[(&str, &str)], created: i64, deleting: bool) -> Template {
    Template {
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

const LABEL: (&str, &str) = ("capi-template-guard.kubewarden.io/cleanup", "true");
const TOPOLOGY: (&str, &str) = ("topology.cluster.x-k8s.io/owned", "");

#[rstest]
#[case::labelled_and_old(vec![LABEL], 0, false, false, Ok(()))]
#[case::topology_copy(vec![TOPOLOGY], 0, false, false, Ok(()))]
#[case::label_false(vec![("capi-template-guard.kubewarden.io/cleanup", "false")], 0, false, false, Err(Skip::NotMarked))]
#[case::unmarked(vec![], 0, false, false, Err(Skip::NotMarked))]
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
        ObjectRef {
            name: "t2".into(),
            ..t.object_ref()
        },
        "Kustomization other/x",
    );
    if is_declared {
        declared.insert(t.object_ref(), "Kustomization flux-system/sites");
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
        flux_kustomization(&bad).unwrap_err(),
        "Flux Kustomization n/k: inventory id \"nounderscores\" is not <namespace>_<name>_<group>_<Kind>."
    );
}

/// An Argo CD Application's status as argo-cd writes it; a retired template (no longer in Git)
/// is listed with requiresPruning until it is gone, and is not declared.
#[test]
fn argo_status_resources_name_group_kind_namespace_and_name() {
    let app = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "sites", "namespace": "argocd"},
        "status": {"resources": [
            {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "site-a-md-v2", "status": "Synced", "health": {"status": "Healthy"}},
            {"version": "v1", "kind": "Namespace", "name": "edge", "status": "Synced"},
            {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "site-a-md-v1", "status": "OutOfSync", "requiresPruning": true},
        ]},
    });
    assert_eq!(
        argo_application(&app).unwrap(),
        vec![
            oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
            oref("", "Namespace", "", "edge"),
        ]
    );
    let bad = json!({"metadata": {"name": "a", "namespace": "argocd"}, "status": {"resources": [{"kind": "X"}]}});
    assert!(argo_application(&bad)
        .unwrap_err()
        .starts_with("Argo CD Application argocd/a: a status.resources entry has no kind or name"));
}

/// Where Flux helm-controller stores a HelmRelease's releases: `spec.storageNamespace`, defaulting
/// to the HelmRelease's namespace, and `status.storageNamespace`, where the current release is
/// (helm-controller v1.5.0 `api/v2/helmrelease_types.go`).
#[rstest]
#[case::default_own_namespace(json!({}), json!({}), Ok(vec!["flux-system"]))]
#[case::spec(json!({"storageNamespace": "store"}), json!({}), Ok(vec!["store"]))]
#[case::status_and_spec(json!({"storageNamespace": "new"}), json!({"storageNamespace": "old"}), Ok(vec!["old", "new"]))]
#[case::status_same_as_default(json!({}), json!({"storageNamespace": "flux-system"}), Ok(vec!["flux-system"]))]
#[case::not_a_string(json!({"storageNamespace": 3}), json!({}), Err("Flux HelmRelease flux-system/sites: /spec/storageNamespace holds 3, which is not a string."))]
fn flux_helmreleases_name_their_storage_namespaces(
    #[case] spec: Value,
    #[case] status: Value,
    #[case] expected: Result<Vec<&str>, &str>,
) {
    let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "sites", "namespace": "flux-system"}, "spec": spec, "status": status});
    let expected = expected
        .map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .map_err(str::to_string);
    assert_eq!(flux_helm_storage_namespaces(&release), expected);
    assert_eq!(
        flux_helm_storage_namespaces(&json!({"metadata": {"name": "x"}})).unwrap_err(),
        "Flux HelmRelease /x has no metadata.namespace."
    );
}

const MANIFEST: &str = "---\n# Source: sites/templates/m3mt.yaml\napiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\nmetadata:\n  name: site-a-md-v2\nspec: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n";

/// A release Secret as Helm's Secrets driver stores it (helm pkg/storage/driver/secrets.go and
/// util.go): JSON, gzip, base64 by Helm, then base64 again as the API shows Secret data.
fn helm_secret(name: &str, version: i64, status: &str, gzip: bool) -> Value {
    let release = json!({
        "name": name, "namespace": "edge", "version": version,
        "info": {"status": status, "description": "Upgrade complete"},
        "chart": {"metadata": {"name": "sites", "version": "1.0.0"}},
        "manifest": MANIFEST,
    });
    let json = serde_json::to_vec(&release).unwrap();
    let bytes = if gzip {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&json).unwrap();
        encoder.finish().unwrap()
    } else {
        json
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let helm = b64.encode(bytes);
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": format!("sh.helm.release.v1.{name}.v{version}"), "namespace": "edge",
            "labels": {"owner": "helm", "name": name, "status": status, "version": version.to_string()}},
        "data": {"release": b64.encode(helm)},
    })
}

#[rstest]
#[case::gzipped(true)]
#[case::stored_before_compression(false)]
fn helm_release_secrets_decode_to_their_manifest_objects(#[case] gzip: bool) {
    let revision = helm_release_secret(&helm_secret("sites", 3, "deployed", gzip))
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            revision.name.as_str(),
            revision.version,
            revision.status.as_str()
        ),
        ("sites", 3, "deployed")
    );
    assert_eq!(
        revision.objects,
        vec![
            oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
            oref("", "ConfigMap", "other", "cm"),
        ]
    );
}

#[rstest]
#[case::other_secret(json!({"type": "Opaque", "data": {"release": "x"}}), None)]
#[case::not_base64(json!({"type": "helm.sh/release.v1", "metadata": {"name": "s", "namespace": "n"}, "data": {"release": "!!"}}), Some("Helm release Secret n/s: data.release is not base64"))]
#[case::no_data(json!({"type": "helm.sh/release.v1", "metadata": {"name": "s", "namespace": "n"}}), Some("Helm release Secret n/s has no data.release."))]
#[case::not_helms_base64(json!({"type": "helm.sh/release.v1", "metadata": {"name": "s", "namespace": "n"}, "data": {"release": "ISE="}}), Some("Helm release Secret n/s: the release is not Helm's base64"))]
fn helm_secrets_that_are_not_releases(#[case] secret: Value, #[case] error: Option<&str>) {
    match (helm_release_secret(&secret), error) {
        (Ok(None), None) => {}
        (Err(e), Some(start)) => assert!(e.starts_with(start), "{e}"),
        (other, _) => panic!("unexpected {other:?}"),
    }
}

fn rev(name: &str, version: i64, status: &str) -> HelmRevision {
    HelmRevision {
        namespace: "edge".into(),
        name: name.into(),
        version,
        status: status.into(),
        objects: vec![],
    }
}

#[test]
fn the_current_helm_revisions_are_the_deployed_and_each_releases_newest() {
    let revisions = vec![
        rev("a", 1, "superseded"),
        rev("a", 2, "deployed"),
        rev("a", 3, "pending-upgrade"),
        rev("b", 4, "superseded"),
        rev("b", 5, "failed"),
        rev("c", 1, "uninstalled"),
        rev("d", 7, "deployed"),
    ];
    let current: Vec<(&str, i64)> = helm_current(&revisions)
        .iter()
        .map(|r| (r.name.as_str(), r.version))
        .collect();
    assert_eq!(current, [("a", 2), ("a", 3), ("b", 5), ("d", 7)]);
}
