//! Argo CD and Helm as tables, on the shapes the tools write: what an Application declares with
//! and without its target state, which Helm revisions are read, how a release Secret decodes and
//! where its decoding stops, and which namespaces an unreadable release holds.

use std::collections::BTreeMap;
use std::io::Write;

use base64::Engine;
use rstest::rstest;
use serde_json::{Value, json};
use template_cleanup_core::declared::{Declared, argo_application};
use template_cleanup_core::helm::{
    FluxHelmRelease, MAX_RELEASE_BYTES, SECRET_TYPE, StoredRevision, Unreadable, current_revisions,
    flux_helm_release, release_from_secret, stored_release, stored_revision, unreadable_namespaces,
};

mod common;
use common::{INFRA, oref};

// --- Argo CD

/// An Application as argo-cd v3.5.1 writes its status: `site-a-md-v1` left Git and reads
/// `requiresPruning`, `conditions` as given.
fn application(conditions: Value) -> Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "sites", "namespace": "argocd"},
        "status": {
            "conditions": conditions,
            "resources": [
                {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "site-a-md-v2", "status": "Synced", "health": {"status": "Healthy"}},
                {"version": "v1", "kind": "Namespace", "name": "edge", "status": "Synced"},
                {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "site-a-md-v1", "status": "OutOfSync", "requiresPruning": true},
            ],
        },
    })
}

/// The condition `CompareAppState` sets when the repo server cannot generate the manifests
/// (argo-cd v3.5.1 `controller/state.go:697-699`): every live object then reads
/// `requiresPruning`, the retired and the current alike.
fn comparison_error() -> Value {
    json!({"type": "ComparisonError", "message": "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = authentication required", "lastTransitionTime": "2026-12-03T10:00:00Z"})
}

#[rstest]
#[case::target_state_loaded(json!(null), false, None)]
#[case::other_conditions(json!([{"type": "SharedResourceWarning", "message": "shared"}, {"type": "SyncError", "message": "sync failed"}]), false, None)]
#[case::comparison_error(json!([comparison_error()]), true, Some("(its target state did not load, ComparisonError \"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = authentication required\": every resource it lists counts as declared)"))]
#[case::comparison_error_among_others(json!([{"type": "SharedResourceWarning", "message": "shared"}, {"type": "ComparisonError"}]), true, Some("(its target state did not load, ComparisonError \"\": every resource it lists counts as declared)"))]
fn argo_requires_pruning_retires_only_when_the_target_state_loaded(
    #[case] conditions: Value,
    #[case] pruned_is_declared: bool,
    #[case] note: Option<&str>,
) {
    let declaration = argo_application(&application(conditions)).unwrap();
    let mut expected = vec![
        oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
        oref("", "Namespace", "", "edge"),
    ];
    if pruned_is_declared {
        expected.push(oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v1"));
    }
    assert_eq!(declaration.objects, expected);
    assert_eq!(declaration.note.as_deref(), note);
}

#[rstest]
#[case::entry_without_a_name(json!({"status": {"resources": [{"kind": "X"}]}}), "Argo CD Application argocd/a: a status.resources entry has no kind or name")]
#[case::resources_not_a_list(json!({"status": {"resources": {}}}), "Argo CD Application argocd/a: status.resources is not a list.")]
#[case::conditions_not_a_list(json!({"status": {"resources": [], "conditions": "ComparisonError"}}), "Argo CD Application argocd/a: status.conditions is not a list.")]
fn argo_applications_argo_cd_did_not_write(#[case] mut app: Value, #[case] error: &str) {
    app["metadata"] = json!({"name": "a", "namespace": "argocd"});
    let e = argo_application(&app).unwrap_err().to_string();
    assert!(e.starts_with(error), "{e}");
}

#[test]
fn an_application_without_resources_declares_nothing() {
    let app = json!({"metadata": {"name": "a", "namespace": "argocd"}, "status": {"conditions": [comparison_error()]}});
    assert_eq!(argo_application(&app).unwrap().objects, vec![]);
}

// --- Helm: the labels, and which revisions are read

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn stored(release: &str, version: u64, status: &str) -> StoredRevision {
    StoredRevision {
        namespace: "edge".into(),
        secret: format!("sh.helm.release.v1.{release}.v{version}"),
        release: release.into(),
        version,
        status: status.into(),
    }
}

/// The labels helm v4.2.4 `newSecretsObject` writes (`pkg/storage/driver/secrets.go:263-266`),
/// and Secrets labelled `owner=helm` that are not release storage.
#[rstest]
#[case::release_storage(
    "sh.helm.release.v1.sites.v3",
    &[("owner", "helm"), ("name", "sites"), ("status", "deployed"), ("version", "3"), ("team", "edge")],
    Ok(Some(stored("sites", 3, "deployed")))
)]
#[case::another_secret_labelled_owner_helm("sites-tls", &[("owner", "helm")], Ok(None))]
#[case::no_version_label(
    "sh.helm.release.v1.sites.v3",
    &[("owner", "helm"), ("name", "sites"), ("status", "deployed")],
    Err(("sites", "its Secret sh.helm.release.v1.sites.v3 has no version label"))
)]
#[case::no_name_label_names_the_release_from_the_secret(
    "sh.helm.release.v1.sites.v3",
    &[("owner", "helm"), ("status", "deployed"), ("version", "3")],
    Err(("sites", "its Secret sh.helm.release.v1.sites.v3 has no name label"))
)]
#[case::version_not_a_number(
    "sh.helm.release.v1.sites.v3",
    &[("owner", "helm"), ("name", "sites"), ("status", "deployed"), ("version", "three")],
    Err(("sites", "its Secret sh.helm.release.v1.sites.v3 has version label \"three\", not a revision number"))
)]
#[case::empty_status(
    "sh.helm.release.v1.sites.v3",
    &[("owner", "helm"), ("name", "sites"), ("status", ""), ("version", "3")],
    Err(("sites", "its Secret sh.helm.release.v1.sites.v3 has no status label"))
)]
fn release_secrets_are_known_by_helms_labels(
    #[case] secret: &str,
    #[case] pairs: &[(&str, &str)],
    #[case] expected: Result<Option<StoredRevision>, (&str, &str)>,
) {
    let expected = expected.map_err(|(release, reason)| Unreadable {
        namespace: "edge".into(),
        release: release.into(),
        reason: reason.into(),
    });
    assert_eq!(stored_revision("edge", secret, &labels(pairs)), expected);
}

/// Which revisions are fetched: Helm's current (`Storage.Deployed`, the newest deployed one) and
/// the newest when it is newer and not uninstalled (pending, failed, or superseded with nothing
/// deployed: helm v4.2.4 `pkg/action/upgrade.go:246-273`).
#[rstest]
#[case::deployed_newest(&[("a", 1, "superseded"), ("a", 2, "superseded"), ("a", 3, "deployed")], &[("a", 3)])]
#[case::pending_upgrade_over_deployed(&[("a", 1, "superseded"), ("a", 2, "deployed"), ("a", 3, "pending-upgrade")], &[("a", 2), ("a", 3)])]
#[case::pending_install(&[("a", 1, "pending-install")], &[("a", 1)])]
#[case::pending_rollback(&[("a", 4, "deployed"), ("a", 5, "pending-rollback")], &[("a", 4), ("a", 5)])]
#[case::failed_upgrade_over_deployed(&[("a", 4, "deployed"), ("a", 5, "failed")], &[("a", 4), ("a", 5)])]
#[case::failed_with_nothing_deployed(&[("a", 4, "superseded"), ("a", 5, "failed")], &[("a", 5)])]
#[case::superseded_with_nothing_deployed(&[("a", 4, "superseded"), ("a", 5, "superseded")], &[("a", 5)])]
#[case::two_deployed_takes_the_newest(&[("a", 2, "deployed"), ("a", 3, "deployed"), ("a", 1, "superseded")], &[("a", 3)])]
#[case::uninstalled_keeps_history(&[("a", 1, "superseded"), ("a", 2, "uninstalled")], &[])]
#[case::uninstalling(&[("a", 2, "uninstalling")], &[])]
#[case::deployed_under_an_uninstalled_newest(&[("a", 2, "deployed"), ("a", 3, "uninstalled")], &[("a", 2)])]
#[case::releases_apart(&[("a", 2, "deployed"), ("b", 7, "deployed"), ("b", 6, "superseded")], &[("a", 2), ("b", 7)])]
fn current_revisions_are_what_helm_diffs_against_and_what_is_in_flight(
    #[case] revisions: &[(&str, u64, &str)],
    #[case] expected: &[(&str, u64)],
) {
    let stored: Vec<StoredRevision> = revisions.iter().map(|(r, v, s)| stored(r, *v, s)).collect();
    let mut read: Vec<(&str, u64)> = current_revisions(&stored)
        .iter()
        .map(|r| (r.release.as_str(), r.version))
        .collect();
    read.sort();
    assert_eq!(read, expected);
}

/// The same release name in two namespaces is two releases.
#[test]
fn releases_are_told_apart_by_namespace() {
    let mut other = stored("a", 9, "deployed");
    other.namespace = "other".into();
    let stored = vec![stored("a", 2, "deployed"), other];
    let read: Vec<(&str, u64)> = current_revisions(&stored)
        .iter()
        .map(|r| (r.namespace.as_str(), r.version))
        .collect();
    assert_eq!(read, [("edge", 2), ("other", 9)]);
}

// --- Helm: decoding one release Secret

const MANIFEST: &str = "---\n# Source: sites/templates/m3mt.yaml\napiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\nmetadata:\n  name: site-a-md-v2\nspec: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Helm's text of a release (`pkg/storage/driver/util.go`, `encodeRelease`: JSON, gzip, base64).
fn helm_text(release: &Value, compress: bool) -> Vec<u8> {
    let json = serde_json::to_vec(release).unwrap();
    let bytes = if compress { gzip(&json) } else { json };
    base64::engine::general_purpose::STANDARD
        .encode(bytes)
        .into_bytes()
}

fn release(manifest: &str) -> Value {
    json!({
        "name": "sites", "namespace": "edge", "version": 3,
        "info": {"status": "deployed", "description": "Upgrade complete"},
        "chart": {"metadata": {"name": "sites", "version": "1.0.0"}, "templates": [{"name": "t", "data": "eyJ9"}]},
        "config": {"replicas": 3},
        "manifest": manifest,
    })
}

#[rstest]
#[case::gzipped(true)]
#[case::stored_before_compression(false)]
fn release_secrets_decode_to_their_manifest_objects(#[case] compress: bool) {
    let text = helm_text(&release(MANIFEST), compress);
    let revision = release_from_secret("edge", "s", &text, MAX_RELEASE_BYTES).unwrap();
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
        // only documents that can be templates are read (the ConfigMap is not parsed)
        vec![oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2")]
    );
    let stored = stored_release(
        "edge",
        "s",
        Some(SECRET_TYPE),
        Some(&text),
        MAX_RELEASE_BYTES,
    );
    assert_eq!(stored.map_err(|e| e.to_string()), Ok(revision));
}

/// A gzip bomb: a few kilobytes that inflate past the cap are refused once the cap is read,
/// without inflating the rest; a release just under the cap decodes.
#[test]
fn decompression_stops_at_the_cap() {
    let limit = 1 << 20;
    // a manifest padded with a YAML comment to `size` bytes of JSON, compressing to almost nothing
    let padded = |size: usize| {
        let mut r = release(MANIFEST);
        let base = serde_json::to_vec(&r).unwrap().len();
        let pad = "#".repeat(size - base - 1);
        r["manifest"] = json!(format!("{MANIFEST}{pad}"));
        helm_text(&r, true)
    };
    let bomb = padded(limit as usize + 2);
    assert!(bomb.len() < 8 << 10, "{} bytes", bomb.len());
    let e = release_from_secret("edge", "s", &bomb, limit)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "Helm release Secret edge/s: the release is larger than 1 MiB once decompressed, more than any release Helm writes."
    );
    let fits = padded(limit as usize);
    assert_eq!(
        release_from_secret("edge", "s", &fits, limit)
            .unwrap()
            .objects
            .len(),
        1
    );
    // an uncompressed release is held to the same cap
    let plain = helm_text(&release(&"#".repeat(limit as usize)), false);
    assert_eq!(
        release_from_secret("edge", "s", &plain, limit)
            .unwrap_err()
            .to_string(),
        "Helm release Secret edge/s: the release is larger than 1 MiB."
    );
}

#[rstest]
#[case::not_helms_base64(b"!!".to_vec(), "Helm release Secret edge/s: the release is not Helm's base64")]
#[case::truncated_gzip({ let mut t = gzip(b"{\"name\": \"sites\"}"); t.truncate(12); base64::engine::general_purpose::STANDARD.encode(t).into_bytes() }, "Helm release Secret edge/s: the release does not gunzip")]
#[case::not_release_json(helm_text(&json!({"name": 3}), true), "Helm release Secret edge/s: the release is not Helm's release JSON")]
#[case::manifest_not_yaml(helm_text(&release("kind: Metal3MachineTemplate\nmetadata: [\n"), true), "Helm release Secret edge/s: manifest document #1 is not YAML")]
fn releases_that_cannot_be_read(#[case] text: Vec<u8>, #[case] error: &str) {
    let e = release_from_secret("edge", "s", &text, MAX_RELEASE_BYTES)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(error), "{e}");
}

/// A template document of `items` flow-list items (`[a,a,...]`): 15 million of them take 30 MiB
/// of text, 42 KiB gzipped, and would take the YAML parser over a GiB.
fn flow_list(kind: &str, items: usize) -> String {
    let mut text = format!("apiVersion: v1\nkind: {kind}\nmetadata:\n  name: x\nspec: [a");
    text.push_str(&",a".repeat(items - 1));
    text.push_str("]\n");
    text
}

/// A billion laughs of 1.2 KB: nine levels of nine aliases each.
fn laughs() -> String {
    let mut text = String::from(
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\nmetadata: {name: laughs}\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n",
    );
    for (prev, level) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        let aliases = vec![format!("*{prev}"); 9].join(",");
        text.push_str(&format!("{level}: &{level} [{aliases}]\n"));
    }
    text
}

/// Hostile manifests are read within bounds, in time and memory: a flow list of 15 million
/// items in a template document makes the release unreadable before the parser sees it; the same
/// list in a document that cannot be a template is skipped unparsed, and the release's template
/// is declared; a billion laughs is cut by the parser's repetition limit, or read by its head
/// alone, in well under a second.
#[test]
fn hostile_manifests_are_read_within_bounds() {
    let big = 6_000_000;
    let text = helm_text(&release(&flow_list("Metal3MachineTemplate", big)), true);
    assert!(text.len() < 100 << 10, "{} bytes", text.len());
    let started = std::time::Instant::now();
    let e = release_from_secret("edge", "s", &text, MAX_RELEASE_BYTES)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("Helm release Secret edge/s: manifest document #1 may hold 6000011 YAML nodes, more than the 100000 a template document is read with."), "{e}");
    // 15 million items (30 MB) are refused before the manifest is held whole
    let huge = helm_text(
        &release(&flow_list("Metal3MachineTemplate", 15_000_000)),
        true,
    );
    let e = release_from_secret("edge", "s", &huge, MAX_RELEASE_BYTES)
        .unwrap_err()
        .to_string();
    assert!(e.contains("larger than 16 MiB once decompressed"), "{e}");
    let other = format!("{}---\n{MANIFEST}", flow_list("ConfigMap", big));
    let revision = release_from_secret(
        "edge",
        "s",
        &helm_text(&release(&other), true),
        MAX_RELEASE_BYTES,
    )
    .unwrap();
    assert_eq!(
        revision.objects,
        [oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2")]
    );
    let laughs = laughs();
    assert!(laughs.len() < 1300, "{}", laughs.len());
    match release_from_secret(
        "edge",
        "s",
        &helm_text(&release(&laughs), true),
        MAX_RELEASE_BYTES,
    ) {
        Ok(r) => assert_eq!(
            r.objects,
            [oref(INFRA, "Metal3MachineTemplate", "edge", "laughs")]
        ),
        Err(e) => assert!(e.to_string().contains("repetition limit exceeded"), "{e}"),
    }
    let many = format!("{}x: [{}]\n", laughs, vec!["*a"; 300].join(","));
    let e = release_from_secret(
        "edge",
        "s",
        &helm_text(&release(&many), true),
        MAX_RELEASE_BYTES,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("may hold 372 YAML aliases, more than the 256"),
        "{e}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// A fetched Secret that is not Helm's release storage: another type, or no release in it.
#[rstest]
#[case::other_type(Some("Opaque"), Some(b"x".as_slice()), "its Secret s is of type \"Opaque\", not helm.sh/release.v1")]
#[case::no_type(None, Some(b"x".as_slice()), "its Secret s is of type \"\", not helm.sh/release.v1")]
#[case::no_data(Some(SECRET_TYPE), None, "its Secret s has no data.release")]
fn release_secrets_that_are_not_releases(
    #[case] secret_type: Option<&str>,
    #[case] release: Option<&[u8]>,
    #[case] error: &str,
) {
    let got = stored_release("edge", "s", secret_type, release, MAX_RELEASE_BYTES);
    assert_eq!(got.map_err(|e| e.to_string()), Err(error.to_string()));
}

// --- Flux HelmReleases, and what an unreadable release holds

/// Where helm-controller v1.5.0 stores a HelmRelease's release and where it renders
/// (`api/v2/helmrelease_types.go:1480-1496`).
#[rstest]
#[case::defaults_to_its_own_namespace(json!({}), json!({}), Ok((vec!["flux-system"], "flux-system")))]
#[case::target_and_storage(json!({"targetNamespace": "edge", "storageNamespace": "store"}), json!({}), Ok((vec!["store"], "edge")))]
#[case::status_and_spec(json!({"storageNamespace": "new"}), json!({"storageNamespace": "old"}), Ok((vec!["old", "new"], "flux-system")))]
#[case::status_same_as_default(json!({}), json!({"storageNamespace": "flux-system"}), Ok((vec!["flux-system"], "flux-system")))]
#[case::not_a_string(json!({"storageNamespace": 3}), json!({}), Err("Flux HelmRelease flux-system/sites: /spec/storageNamespace holds 3, which is not a string."))]
fn flux_helmreleases_name_their_storage_and_target_namespaces(
    #[case] spec: Value,
    #[case] status: Value,
    #[case] expected: Result<(Vec<&str>, &str), &str>,
) {
    let object = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "sites", "namespace": "flux-system"}, "spec": spec, "status": status});
    let expected = expected
        .map(|(storage, target)| FluxHelmRelease {
            storage: storage.iter().map(|s| s.to_string()).collect(),
            target: target.into(),
        })
        .map_err(str::to_string);
    assert_eq!(
        flux_helm_release(&object).map_err(|e| e.to_string()),
        expected
    );
    assert_eq!(
        flux_helm_release(&json!({"metadata": {"name": "x"}}))
            .unwrap_err()
            .to_string(),
        "Flux HelmRelease /x has no metadata.namespace."
    );
}

/// An unreadable release holds its storage namespace (the Helm CLI's release namespace) and the
/// target namespace of every Flux HelmRelease stored there, and no other.
#[test]
fn an_unreadable_release_holds_the_namespaces_it_may_render_into() {
    let flux = |storage: &[&str], target: &str| FluxHelmRelease {
        storage: storage.iter().map(|s| s.to_string()).collect(),
        target: target.into(),
    };
    let releases = [
        flux(&["flux-system"], "edge"),
        flux(&["flux-system"], "core"),
        flux(&["old", "flux-system"], "moved"),
        flux(&["other"], "elsewhere"),
    ];
    let unreadable = Unreadable {
        namespace: "flux-system".into(),
        release: "edge-sites".into(),
        reason: "r".into(),
    };
    let held: Vec<String> = unreadable_namespaces(&unreadable, &releases)
        .into_iter()
        .collect();
    assert_eq!(held, ["core", "edge", "flux-system", "moved"]);
    // the Helm CLI: only the release's own namespace
    let cli = Unreadable {
        namespace: "edge".into(),
        ..unreadable
    };
    assert_eq!(
        unreadable_namespaces(&cli, &releases)
            .into_iter()
            .collect::<Vec<_>>(),
        ["edge"]
    );
}

/// A namespace entry keeps every object in it; an object entry wins over it, and other namespaces
/// are not held.
#[test]
fn declared_namespaces_hold_every_object_in_them() {
    let mut declared = Declared::default();
    let t = oref(INFRA, "Metal3MachineTemplate", "edge", "t");
    assert_eq!(declared.by(&t), None);
    declared.insert_namespace("edge", "Helm release edge/sites, which cannot be read");
    assert_eq!(
        declared.by(&t),
        Some("Helm release edge/sites, which cannot be read")
    );
    assert_eq!(
        declared.by(&oref(INFRA, "Metal3MachineTemplate", "core", "t")),
        None
    );
    declared.insert(t.clone(), "Kustomization flux-system/sites");
    assert_eq!(declared.by(&t), Some("Kustomization flux-system/sites"));
    assert_eq!(declared.len(), 1);
}
