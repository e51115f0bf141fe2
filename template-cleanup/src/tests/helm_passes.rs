//! Whole passes over the shared mock of tests.rs that a Helm release keeps a template in: read in
//! the namespaces collected in, in a Flux HelmRelease's storage namespace or cluster-wide, and the
//! reads that stop a pass.

use base64::Engine;

use super::deploy_tools::line;
use super::*;

/// The answer of [`Fake`] to a GET of a Secret by name: the item of that name in its namespace's
/// list (`helm`), else 404.
pub(super) fn secret_by_name(helm: &BTreeMap<&'static str, Answer>, path: &str) -> Answer {
    let mut parts = path.split('/');
    let (namespace, name) = (
        parts.nth(4).unwrap_or(""),
        path.rsplit('/').next().unwrap_or(""),
    );
    let found = helm
        .get(namespace)
        .cloned()
        .flatten()
        .and_then(|(_, list)| {
            list["items"]
                .as_array()?
                .iter()
                .find(|s| s["metadata"]["name"] == name)
                .cloned()
        });
    match found {
        Some(secret) => Some((200, secret)),
        None => status(404, "NotFound", &format!("secrets \"{name}\" not found")),
    }
}

/// A Helm release Secret as the API shows it, for a release stored before Helm compressed
/// releases (`decodeRelease` still reads those): base64 (the API's) of Helm's base64 of the JSON,
/// with the labels Helm writes. The release's namespace is `edge`; the Secret is stored in
/// `storage`.
fn helm_secret(manifest: &str, storage: &str) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let release = json!({"name": "sites", "namespace": "edge", "version": 3, "info": {"status": "deployed"}, "manifest": manifest});
    json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": "sh.helm.release.v1.sites.v3", "namespace": storage,
            "labels": {"owner": "helm", "name": "sites", "status": "deployed", "version": "3"}},
        "data": {"release": b64.encode(b64.encode(release.to_string()))}})
}

fn secret_list(items: Vec<Value>) -> Answer {
    Some((
        200,
        json!({"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": items}),
    ))
}

const FREE_MANIFEST: &str = "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\nmetadata:\n  name: free\n";

/// A pass with --helm-releases over `fake` leaves `free`, which the release `edge/sites`
/// declares, sends no DELETE, and says it read Helm's Secrets in `read_in`; returns the requests
/// seen.
async fn kept_by_the_release(fake: Fake, read_in: &str) -> Vec<Seen> {
    let (report, seen) = pass_with(fake, false, true).await;
    assert_eq!(
        verdicts(&report),
        [(
            "free".into(),
            "left".into(),
            "still declared by Helm release edge/sites (revision 3, deployed)".into()
        )]
    );
    assert_eq!(
        line(&report, "Helm releases"),
        format!(
            "1 Secrets listed (metadata only), 1 current revisions read, 1 objects declared (Secrets read in {read_in})"
        )
    );
    assert!(!seen.iter().any(|s| s.method == "DELETE"));
    seen
}

/// Collecting in every namespace, Helm's release Secrets are listed with one cluster-wide list and
/// the current one fetched by name; a refusal of the list stops the pass.
#[tokio::test]
async fn helm_releases_are_read_cluster_wide_when_collecting_in_every_namespace() {
    let fake = || {
        let mut fake = only_free();
        fake.namespaces = None;
        fake.helm = BTreeMap::from([(
            "edge",
            secret_list(vec![helm_secret(FREE_MANIFEST, "edge")]),
        )]);
        fake
    };
    let seen = kept_by_the_release(fake(), "every namespace").await;
    let secrets: Vec<&str> = seen
        .iter()
        .filter(|s| s.uri.contains("secrets"))
        .map(|s| s.uri.as_str())
        .collect();
    assert_eq!(secrets.len(), 2, "{secrets:?}");
    assert!(secrets[0].starts_with("/api/v1/secrets?"), "{secrets:?}");
    assert!(
        secrets[1].starts_with("/api/v1/namespaces/edge/secrets/sh.helm.release.v1.sites.v3?"),
        "{secrets:?}"
    );
    let mut unreadable = fake();
    unreadable
        .helm
        .insert("edge", status(403, "Forbidden", "secrets is forbidden"));
    let (report, seen) = pass_with(unreadable, false, true).await;
    assert_eq!(report.exit_code(), CANNOT_RUN);
    assert_eq!(
        report.error.unwrap_or_default(),
        "cannot read Helm's release Secrets in every namespace: 403 Forbidden: secrets is forbidden. Nothing was deleted."
    );
    assert!(!seen.iter().any(|s| s.method == "DELETE"));
}

#[tokio::test]
async fn helm_releases_are_read_only_when_asked_and_keep_what_they_declare() {
    let fake = || {
        let mut fake = only_free();
        fake.helm = BTreeMap::from([(
            "edge",
            secret_list(vec![helm_secret(FREE_MANIFEST, "edge")]),
        )]);
        fake
    };
    kept_by_the_release(fake(), "edge").await;
    // without --helm-releases no Secret is read, and the template is deleted
    let (report, seen) = pass_with(fake(), false, false).await;
    assert_eq!(verdicts(&report)[0].1, "deleted");
    assert!(!seen.iter().any(|s| s.uri.contains("secrets")), "{seen:?}");
    // a release that cannot be read leaves its namespace's templates, and the pass goes on
    let mut broken = fake();
    broken.helm = BTreeMap::from([(
        "edge",
        secret_list(vec![
            json!({"type": "helm.sh/release.v1", "metadata": {"name": "sh.helm.release.v1.x.v1", "namespace": "edge", "labels": {"owner": "helm", "name": "x", "status": "deployed", "version": "1"}}, "data": {"release": "ISE="}}),
        ]),
    )]);
    let (report, seen) = pass_with(broken, false, true).await;
    assert_eq!(report.exit_code(), OK, "{:?}", report.error);
    let v = verdicts(&report);
    assert_eq!(
        (v[0].0.as_str(), v[0].1.as_str()),
        ("free", "left"),
        "{v:?}"
    );
    assert!(
        v[0].2
            .starts_with("still declared by Helm release edge/x, which cannot be read ("),
        "{v:?}"
    );
    assert!(
        v[0].2
            .ends_with("every template in namespace edge counts as declared (unreadable release)"),
        "{v:?}"
    );
    assert!(!seen.iter().any(|s| s.method == "DELETE"));
}

/// A Flux HelmRelease in `flux-system` whose release renders templates into `edge`.
fn flux_helm_release(spec_storage: Option<&str>, status_storage: Option<&str>) -> Value {
    let mut release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "sites", "namespace": "flux-system"},
        "spec": {"targetNamespace": "edge"}, "status": {}});
    if let Some(ns) = spec_storage {
        release["spec"]["storageNamespace"] = json!(ns);
    }
    if let Some(ns) = status_storage {
        release["status"]["storageNamespace"] = json!(ns);
    }
    json!({"kind": "HelmReleaseList", "apiVersion": "helm.toolkit.fluxcd.io/v2", "metadata": {}, "items": [release]})
}

/// Flux helm-controller stores a release in the HelmRelease's storage namespace (by default its
/// own, flux-system), not where its templates are: collecting in `edge`, the pass also reads the
/// Secrets there, and a namespace it must read but cannot stops it.
#[rstest]
#[case::default_storage_is_the_helmreleases_namespace(None, None, vec![], "flux-system", "edge, flux-system")]
#[case::spec_storage_namespace(Some("helm-store"), None, vec![], "helm-store", "edge, helm-store")]
#[case::status_storage_namespace(Some("new-store"), Some("old-store"), vec![], "old-store", "edge, new-store, old-store")]
#[case::flag_without_flux(None, None, vec!["helm-cli"], "helm-cli", "edge, helm-cli")]
#[tokio::test]
async fn helm_releases_stored_in_another_namespace_are_read(
    #[case] spec_storage: Option<&str>,
    #[case] status_storage: Option<&str>,
    #[case] flag: Vec<&str>,
    #[case] stored_in: &'static str,
    #[case] read_in: &'static str,
) {
    let with_flux = flag.is_empty();
    let fake = || {
        let mut fake = only_free();
        if with_flux {
            fake.flux_helm = Some(Some((200, flux_helm_release(spec_storage, status_storage))));
        }
        fake.helm_storage = flag.iter().map(|s| s.to_string()).collect();
        fake.helm = BTreeMap::from([("edge", secret_list(vec![]))]);
        for ns in read_in.split(", ") {
            fake.helm.entry(ns).or_insert_with(|| secret_list(vec![]));
        }
        fake.helm.insert(
            stored_in,
            secret_list(vec![helm_secret(FREE_MANIFEST, stored_in)]),
        );
        fake
    };
    let seen = kept_by_the_release(fake(), read_in).await;
    assert!(
        seen.iter().any(|s| s.uri.starts_with(&format!(
            "/api/v1/namespaces/{stored_in}/secrets/sh.helm.release.v1.sites.v3?"
        ))),
        "{seen:?}"
    );
    // the storage namespace unreadable: exit 2, nothing deleted
    let mut unreadable = fake();
    unreadable
        .helm
        .insert(stored_in, status(403, "Forbidden", "secrets is forbidden"));
    let (report, seen) = pass_with(unreadable, false, true).await;
    assert_eq!(report.exit_code(), CANNOT_RUN);
    assert_eq!(
        report.error.unwrap_or_default(),
        format!(
            "cannot read Helm's release Secrets in namespace {stored_in}: 403 Forbidden: secrets is forbidden. Nothing was deleted."
        )
    );
    assert!(!seen.iter().any(|s| s.method == "DELETE"));
}

#[tokio::test]
async fn flux_helmreleases_that_cannot_be_read_stop_a_helm_pass() {
    let mut fake = only_free();
    fake.flux_helm = Some(status(403, "Forbidden", "helmreleases is forbidden"));
    fake.helm = BTreeMap::from([("edge", secret_list(vec![]))]);
    let (report, seen) = pass_with(fake, false, true).await;
    assert_eq!(report.exit_code(), CANNOT_RUN);
    assert_eq!(
        report.error.unwrap_or_default(),
        "cannot read Flux HelmReleases (installed, helm.toolkit.fluxcd.io/v2): 403 Forbidden: helmreleases is forbidden. Nothing was deleted."
    );
    assert!(!seen.iter().any(|s| s.method == "DELETE"));
}

/// The CronJob of examples/cleanup with the Helm component's argument parses, and reads Helm's
/// releases: the component adds a flag this command line defines.
#[test]
fn the_helm_components_argument_turns_helm_reading_on() {
    use clap::Parser;
    let read = |path: &str| {
        let path = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        yaml_serde::Deserializer::from_str(&text)
            .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
            .collect::<Vec<Value>>()
    };
    let cronjob = read("examples/cleanup/component/cleanup.yaml")
        .into_iter()
        .find(|d| d["kind"] == "CronJob")
        .unwrap();
    let mut args: Vec<String> = serde_json::from_value(
        cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"].clone(),
    )
    .unwrap();
    let component = &read("examples/cleanup/helm/kustomization.yaml")[0];
    let patch = component["patches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["target"]["kind"] == "CronJob")
        .unwrap();
    let ops: Vec<Value> = yaml_serde::from_str(patch["patch"].as_str().unwrap()).unwrap();
    args.extend(
        ops.iter()
            .map(|op| op["value"].as_str().unwrap().to_string()),
    );
    let parsed = crate::cli::Args::try_parse_from(
        std::iter::once("template-cleanup".to_string()).chain(args),
    )
    .unwrap_or_else(|e| panic!("the CronJob with examples/cleanup/helm: {e}"));
    assert!(parsed.helm_releases && parsed.all_namespaces);
}
