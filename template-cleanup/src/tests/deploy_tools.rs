//! The deploy tools' readers against a mocked API server: Argo CD's comparison errors, Helm's
//! storage read as metadata then by name (the requests asserted), unreadable releases, the warning
//! when Helm reading is off, and a storage of 5,000 revisions read within a memory bound. Whole
//! passes that a Helm release keeps a template in are in helm_passes.rs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use base64::Engine;
use template_cleanup_core::ServedKind;
use template_cleanup_core::preflight::Served;

use super::*;
use crate::sources;

// --- a mock that records what the sources' readers ask, headers included

/// One request the mock answered.
#[derive(Debug, Clone)]
struct Heard {
    method: String,
    /// Path and decoded query.
    uri: String,
    accept: String,
    /// The size of the answer's body.
    bytes: usize,
}

type Route = dyn Fn(&str, &str) -> (u16, Vec<u8>) + Send + Sync;

/// A cluster whose every GET is answered by `route(path, query)`.
fn mock(route: Arc<Route>) -> (Cluster, Arc<Mutex<Vec<Heard>>>) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let path = request.uri().path().to_string();
            let query = request
                .uri()
                .query()
                .unwrap_or("")
                .replace("%2F", "/")
                .replace("%3D", "=");
            let accept = request
                .headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let (code, body) = route(&path, &query);
            log.lock().unwrap().push(Heard {
                method: request.method().to_string(),
                uri: format!("{path}?{query}"),
                accept,
                bytes: body.len(),
            });
            send.send_response(
                Response::builder()
                    .status(code)
                    .body(Body::from(body))
                    .unwrap(),
            );
        }
    });
    let cluster = Cluster::new(Client::new(service, "edge"), Duration::from_secs(30));
    (cluster, heard)
}

fn body(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

fn not_found(what: &str) -> (u16, Vec<u8>) {
    (
        404,
        body(
            &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound", "message": format!("{what} not found")}),
        ),
    )
}

fn served(kind: &str, group: &str, version: &str) -> Served {
    Served {
        kind: ServedKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        },
        namespaced: true,
        preferred: true,
    }
}

fn options(helm_releases: bool, namespaces: Option<&[&str]>) -> Options {
    Options {
        namespaces: namespaces.map(|list| list.iter().map(|s| s.to_string()).collect()),
        dry_run: false,
        min_age: 600,
        policy: POLICY.into(),
        helm_releases,
        helm_storage_namespaces: Vec::new(),
        events_per_pass: crate::events::PER_PASS,
        time_limit: Duration::from_secs(720),
    }
}

fn m3mt(namespace: &str, name: &str) -> template_cleanup_core::DeclaredObject {
    template_cleanup_core::DeclaredObject {
        group: INFRA.into(),
        kind: "Metal3MachineTemplate".into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// The report's line for the source `name`.
pub(super) fn line<'a>(report: &'a Report, name: &str) -> &'a str {
    report
        .sources
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.read.as_str())
        .unwrap_or_else(|| panic!("no line for {name}: {:?}", report.sources))
}

// --- Argo CD

const APPLICATIONS: &str = "/apis/argoproj.io/v1alpha1/applications";

/// An Application whose `edge/old` left Git: Argo CD lists it with `requiresPruning`.
fn application(conditions: Value) -> Value {
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {"name": "sites", "namespace": "argocd"},
    "status": {"conditions": conditions, "resources": [
        {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "current", "status": "Synced"},
        {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "old", "status": "OutOfSync", "requiresPruning": true},
    ]}})
}

/// argo-cd v3.5.1 `controller/state.go:695-712`: the repository could not be read, every live
/// object reads `requiresPruning`; the template that left Git is retired only without that.
#[rstest]
#[case::target_state_loaded(json!([]), None)]
#[case::comparison_error(
    json!([{"type": "ComparisonError", "message": "Failed to load target state: rpc error: code = Unknown desc = authentication required"}]),
    Some("Application argocd/sites (its target state did not load, ComparisonError \"Failed to load target state: rpc error: code = Unknown desc = authentication required\": every resource it lists counts as declared)")
)]
#[tokio::test]
async fn requires_pruning_retires_only_what_a_loaded_target_state_left_out(
    #[case] conditions: Value,
    #[case] old_declared_by: Option<&str>,
) {
    let list = body(
        &json!({"kind": "ApplicationList", "apiVersion": "argoproj.io/v1alpha1", "metadata": {}, "items": [application(conditions)]}),
    );
    let (cluster, heard) = mock(Arc::new(move |path, _| match path {
        APPLICATIONS => (200, list.clone()),
        other => not_found(other),
    }));
    let mut report = Report::default();
    let declared = sources::read(
        &cluster,
        &options(false, Some(&["edge"])),
        &[served("Application", "argoproj.io", "v1alpha1")],
        &mut report,
    )
    .await
    .unwrap();
    assert_eq!(declared.by(&m3mt("edge", "old")), old_declared_by);
    assert!(declared.by(&m3mt("edge", "current")).is_some());
    assert_eq!(
        line(&report, "Argo CD Applications"),
        format!(
            "1 read, {} objects declared",
            1 + usize::from(old_declared_by.is_some())
        )
    );
    // one list of the Applications, in every namespace, and nothing else
    let heard = heard.lock().unwrap();
    let uris: Vec<&str> = heard.iter().map(|h| h.uri.as_str()).collect();
    assert_eq!(uris, [format!("{APPLICATIONS}?&limit=100")], "{heard:?}");
}

// --- Helm: what is asked

/// The metadata a metadata-only list returns for one release Secret.
fn meta(namespace: &str, release: &str, version: u64, status: &str) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {
        "name": format!("sh.helm.release.v1.{release}.v{version}"), "namespace": namespace,
        "labels": {"owner": "helm", "name": release, "status": status, "version": version.to_string()}}})
}

fn meta_list(items: &[Value], next: Option<usize>) -> Vec<u8> {
    let metadata = next.map_or(json!({}), |n| json!({"continue": n.to_string()}));
    body(
        &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "items": items}),
    )
}

/// A release's JSON with a manifest of `templates` in `namespace`, padded with chart data to
/// about `size` bytes, as Helm stores it: gzip, then Helm's base64; `Secret` JSON as the API
/// serves it (the API's base64 once more).
fn release_secret(
    storage: &str,
    release: &str,
    version: u64,
    namespace: &str,
    templates: &[&str],
    size: usize,
) -> Vec<u8> {
    let manifest: String = templates
        .iter()
        .map(|t| format!("---\napiVersion: {INFRA}/v1beta1\nkind: Metal3MachineTemplate\nmetadata:\n  name: {t}\nspec:\n  template:\n    spec:\n      image: {{url: http://images/{t}.qcow2}}\n"))
        .collect();
    // chart files compress about as well as real ones: varied text, not one repeated byte
    let files: Vec<String> = (0..size / 64)
        .map(|i| format!("{release}-{version}-{i:08x}-{}", i * 7919 % 104_729))
        .collect();
    let json = body(
        &json!({"name": release, "namespace": namespace, "version": version,
        "info": {"status": "deployed"}, "chart": {"files": files}, "manifest": manifest}),
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&json).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let helm = b64.encode(gz.finish().unwrap());
    body(
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": format!("sh.helm.release.v1.{release}.v{version}"), "namespace": storage,
            "labels": {"owner": "helm", "name": release, "version": version.to_string()}},
        "data": {"release": b64.encode(helm)}}),
    )
}

/// The releases of `edge`: `sites` with a superseded, a deployed and a pending upgrade; `core`
/// deployed at its third revision; a Secret labelled `owner=helm` that is not release storage.
fn edge_storage() -> Vec<Value> {
    vec![
        meta("edge", "sites", 1, "superseded"),
        meta("edge", "sites", 2, "deployed"),
        meta("edge", "sites", 3, "pending-upgrade"),
        meta("edge", "core", 1, "superseded"),
        meta("edge", "core", 2, "superseded"),
        meta("edge", "core", 3, "deployed"),
        json!({"metadata": {"name": "sites-tls", "namespace": "edge", "labels": {"owner": "helm"}}}),
    ]
}

/// Secrets by name, and the metadata list of `edge` over pages of `page` items.
fn helm_route(
    metas: Vec<Value>,
    page: usize,
    secrets: BTreeMap<String, (u16, Vec<u8>)>,
) -> Arc<Route> {
    Arc::new(move |path, query| {
        if path == "/api/v1/namespaces/edge/secrets" || path == "/api/v1/secrets" {
            assert!(query.contains("labelSelector=owner=helm"), "{query}");
            let start: usize = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("continue="))
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let end = (start + page).min(metas.len());
            return (
                200,
                meta_list(&metas[start..end], (end < metas.len()).then_some(end)),
            );
        }
        let name = path.rsplit('/').next().unwrap_or("");
        secrets
            .get(name)
            .cloned()
            .unwrap_or_else(|| not_found(&format!("secrets {name:?}")))
    })
}

fn secrets(list: &[(&str, u64, &[&str])]) -> BTreeMap<String, (u16, Vec<u8>)> {
    list.iter()
        .map(|(release, version, templates)| {
            (
                format!("sh.helm.release.v1.{release}.v{version}"),
                (
                    200,
                    release_secret("edge", release, *version, "edge", templates, 2_000),
                ),
            )
        })
        .collect()
}

/// The metadata list asks for `PartialObjectMetadataList` with Helm's selector, page by page;
/// the GETs are exactly each release's current revisions: `sites` v2 (deployed) and v3 (pending
/// upgrade), `core` v3; nothing of superseded revisions or of the Secret that is not storage.
#[tokio::test]
async fn helm_storage_is_listed_as_metadata_and_only_current_revisions_are_fetched() {
    let route = helm_route(
        edge_storage(),
        4,
        secrets(&[
            ("sites", 2, &["sites-v2"]),
            ("sites", 3, &["sites-v3"]),
            ("core", 3, &["core-v3"]),
        ]),
    );
    let (cluster, heard) = mock(route);
    let mut report = Report::default();
    let declared = sources::read(&cluster, &options(true, Some(&["edge"])), &[], &mut report)
        .await
        .unwrap();
    for (name, by) in [
        ("sites-v2", "Helm release edge/sites (revision 2, deployed)"),
        (
            "sites-v3",
            "Helm release edge/sites (revision 3, pending-upgrade)",
        ),
        ("core-v3", "Helm release edge/core (revision 3, deployed)"),
    ] {
        assert_eq!(declared.by(&m3mt("edge", name)), Some(by));
    }
    assert_eq!(
        line(&report, "Helm releases"),
        "7 Secrets listed (metadata only), 3 current revisions read, 3 objects declared (Secrets read in edge)"
    );
    assert_eq!(line(&report, "Flux HelmReleases"), "not installed");
    let heard = heard.lock().unwrap();
    let lists: Vec<&Heard> = heard
        .iter()
        .filter(|h| h.uri.starts_with("/api/v1/namespaces/edge/secrets?"))
        .collect();
    assert_eq!(lists.len(), 2, "two pages of four: {heard:?}");
    for list in &lists {
        assert_eq!(
            list.accept, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            "{list:?}"
        );
        assert!(
            list.uri.contains("labelSelector=owner=helm&limit=500"),
            "{list:?}"
        );
    }
    assert!(lists[1].uri.contains("continue=4"), "{lists:?}");
    let mut gets: Vec<&str> = heard
        .iter()
        .filter_map(|h| h.uri.strip_prefix("/api/v1/namespaces/edge/secrets/"))
        .collect();
    gets.sort();
    assert_eq!(
        gets,
        [
            "sh.helm.release.v1.core.v3?",
            "sh.helm.release.v1.sites.v2?",
            "sh.helm.release.v1.sites.v3?"
        ]
    );
    assert_eq!(heard.len(), 5, "{heard:?}");
    assert!(heard.iter().all(|h| h.method == "GET"), "{heard:?}");
}

/// A Secret `edge/sh.helm.release.v1.sites.v2` that is not a readable release.
fn broken_sites(body_json: Value) -> (u16, Vec<u8>) {
    (200, body(&body_json))
}

/// Each way a current revision cannot be read leaves the templates of the namespaces its release
/// may render into (its storage namespace, `edge`, and the target of the Flux HelmRelease stored
/// there, `edge-sites`) declared, while the pass goes on and the other release is read.
#[rstest]
#[case::deleted_since_listed(
    not_found("secrets \"sh.helm.release.v1.sites.v2\""),
    "its Secret sh.helm.release.v1.sites.v2 was deleted after it was listed, by an upgrade or Helm's history limit; the next pass reads the release again"
)]
#[case::not_helms_encoding(broken_sites(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1", "metadata": {"name": "sh.helm.release.v1.sites.v2", "namespace": "edge"}, "data": {"release": "ISE="}})), "Helm release Secret edge/sh.helm.release.v1.sites.v2: the release is not Helm's base64 (Invalid symbol 33, offset 0.)")]
#[case::another_type(broken_sites(json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": "sh.helm.release.v1.sites.v2", "namespace": "edge"}, "data": {}})), "its Secret sh.helm.release.v1.sites.v2 is of type \"Opaque\", not helm.sh/release.v1")]
#[case::no_data(broken_sites(json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1", "metadata": {"name": "sh.helm.release.v1.sites.v2", "namespace": "edge"}})), "its Secret sh.helm.release.v1.sites.v2 has no data.release")]
#[case::gzip_bomb(
    bomb(),
    "Helm release Secret edge/sh.helm.release.v1.sites.v2: the release is larger than 16 MiB once decompressed, more than any release Helm writes"
)]
#[tokio::test]
async fn a_release_that_cannot_be_read_keeps_its_namespaces_templates(
    #[case] answer: (u16, Vec<u8>),
    #[case] reason: &str,
) {
    let mut stored = secrets(&[("core", 3, &["core-v3"])]);
    stored.insert("sh.helm.release.v1.sites.v2".into(), answer);
    let metas = vec![
        meta("edge", "sites", 1, "superseded"),
        meta("edge", "sites", 2, "deployed"),
        meta("edge", "core", 3, "deployed"),
    ];
    let helm = helm_route(metas, 500, stored);
    let flux = body(
        &json!({"kind": "HelmReleaseList", "apiVersion": "helm.toolkit.fluxcd.io/v2", "metadata": {}, "items": [
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "sites", "namespace": "flux-system"},
         "spec": {"targetNamespace": "edge-sites", "storageNamespace": "edge"}},
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "other", "namespace": "flux-system"},
         "spec": {"targetNamespace": "elsewhere"}}]}),
    );
    let route: Arc<Route> = Arc::new(move |path, query| match path {
        "/apis/helm.toolkit.fluxcd.io/v2/helmreleases" => (200, flux.clone()),
        // the HelmRelease `other` is stored in flux-system, which holds no release
        "/api/v1/namespaces/flux-system/secrets" => (200, meta_list(&[], None)),
        _ => helm(path, query),
    });
    let (cluster, heard) = mock(route);
    let mut report = Report::default();
    let declared = sources::read(
        &cluster,
        &options(true, Some(&["edge"])),
        &[served("HelmRelease", "helm.toolkit.fluxcd.io", "v2")],
        &mut report,
    )
    .await
    .unwrap();
    let held = format!(
        "Helm release edge/sites, which cannot be read ({reason}); every template in namespace edge counts as declared (unreadable release)"
    );
    assert_eq!(declared.by(&m3mt("edge", "any")), Some(held.as_str()));
    assert_eq!(
        declared.by(&m3mt("edge-sites", "any")),
        Some(
            held.replace("namespace edge counts", "namespace edge-sites counts")
                .as_str()
        )
    );
    assert_eq!(declared.by(&m3mt("elsewhere", "any")), None);
    // the readable release is read all the same
    assert_eq!(
        declared.by(&m3mt("edge", "core-v3")),
        Some("Helm release edge/core (revision 3, deployed)")
    );
    assert_eq!(
        line(&report, "Helm releases"),
        "3 Secrets listed (metadata only), 1 current revisions read, 1 objects declared (Secrets read in edge, flux-system); unreadable, their namespaces' templates kept: edge/sites"
    );
    assert_eq!(
        line(&report, "Flux HelmReleases"),
        "2 read, for where their Helm releases are stored and render"
    );
    let gets = heard
        .lock()
        .unwrap()
        .iter()
        .filter(|h| h.uri.contains("/secrets/"))
        .count();
    assert_eq!(gets, 2);
}

/// A few kilobytes of gzip that inflate past the 16 MiB cap: the start of a release JSON whose
/// manifest never ends, so that only the cap stops it.
fn bomb() -> (u16, Vec<u8>) {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(br#"{"name": "sites", "version": 2, "manifest": ""#)
        .unwrap();
    let filler = vec![b'a'; 1 << 20];
    for _ in 0..40 {
        gz.write_all(&filler).unwrap();
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let helm = b64.encode(gz.finish().unwrap());
    assert!(helm.len() < 200 << 10, "{}", helm.len());
    broken_sites(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": "sh.helm.release.v1.sites.v2", "namespace": "edge"}, "data": {"release": b64.encode(helm)}}),
    )
}

/// Labels Helm did not write make the release unreadable without a GET.
#[tokio::test]
async fn a_release_whose_labels_helm_did_not_write_is_unreadable_without_a_get() {
    let metas = vec![
        json!({"metadata": {"name": "sh.helm.release.v1.sites.v2", "namespace": "edge", "labels": {"owner": "helm", "name": "sites", "status": "deployed", "version": "two"}}}),
    ];
    let (cluster, heard) = mock(helm_route(metas, 500, BTreeMap::new()));
    let mut report = Report::default();
    let declared = sources::read(&cluster, &options(true, Some(&["edge"])), &[], &mut report)
        .await
        .unwrap();
    assert_eq!(
        declared.by(&m3mt("edge", "any")),
        Some(
            "Helm release edge/sites, which cannot be read (its Secret sh.helm.release.v1.sites.v2 has version label \"two\", not a revision number); every template in namespace edge counts as declared (unreadable release)"
        )
    );
    assert!(
        !heard
            .lock()
            .unwrap()
            .iter()
            .any(|h| h.uri.contains("/secrets/"))
    );
}

/// A GET the API server refuses is not a release that cannot be read: the pass stops.
#[tokio::test]
async fn a_get_the_api_server_refuses_stops_the_pass() {
    let forbidden = body(
        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403, "reason": "Forbidden", "message": "secrets \"sh.helm.release.v1.sites.v2\" is forbidden"}),
    );
    let stored = BTreeMap::from([("sh.helm.release.v1.sites.v2".to_string(), (403, forbidden))]);
    let (cluster, _) = mock(helm_route(
        vec![meta("edge", "sites", 2, "deployed")],
        500,
        stored,
    ));
    let mut report = Report::default();
    let error = sources::read(&cluster, &options(true, Some(&["edge"])), &[], &mut report)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "cannot read Helm's release Secret edge/sh.helm.release.v1.sites.v2: 403 Forbidden: secrets \"sh.helm.release.v1.sites.v2\" is forbidden."
    );
}

/// Without --helm-releases nothing of Helm is read, and the report warns where Flux
/// HelmReleases are installed, in every pass.
#[rstest]
#[case::flux_helm_installed(
    true,
    "not read (--helm-releases not given), but Flux HelmReleases are installed: a template a Helm release still declares, and nothing references yet, reads as undeclared and is deleted if the guard lets it go. Add the component examples/cleanup/helm (--helm-releases and its RBAC)."
)]
#[case::no_flux_helm(false, "not read (--helm-releases not given)")]
#[tokio::test]
async fn without_helm_reading_the_report_warns_where_flux_helmreleases_are_installed(
    #[case] installed: bool,
    #[case] text: &str,
) {
    let (cluster, heard) = mock(Arc::new(|path, _| not_found(path)));
    let served: Vec<Served> = installed
        .then(|| served("HelmRelease", "helm.toolkit.fluxcd.io", "v2"))
        .into_iter()
        .collect();
    for _ in 0..2 {
        let mut report = Report::default();
        sources::read(&cluster, &options(false, None), &served, &mut report)
            .await
            .unwrap();
        assert_eq!(line(&report, "Helm releases"), text);
        assert!(
            !report.sources.iter().any(|s| s.name == "Flux HelmReleases"),
            "{:?}",
            report.sources
        );
    }
    assert!(
        heard.lock().unwrap().is_empty(),
        "{:?}",
        heard.lock().unwrap()
    );
}

// --- Helm at a cluster's scale

/// Counts the bytes allocated on each thread, and the peak, for the scale test (the pass runs on
/// the test's thread: `#[tokio::test]` is a current-thread runtime, the mock included).
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; only counters change.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// 500 releases of 10 revisions each (Helm's default `--history-max`), 5,000 release Secrets of
/// about 25 KiB each as the API serves them: 120 MiB that a full list would hold at once.
/// The pass reads 10 pages of metadata and the 500 current revisions, one at a time, and its peak
/// allocation on the test's thread stays under 4 MiB (2.2 MiB measured: docs/cleanup.md).
#[tokio::test]
async fn five_thousand_release_revisions_are_read_within_a_memory_bound() {
    const RELEASES: usize = 500;
    const HISTORY: u64 = 10;
    let mut metas = Vec::new();
    for r in 0..RELEASES {
        for v in 1..=HISTORY {
            let status = if v == HISTORY {
                "deployed"
            } else {
                "superseded"
            };
            metas.push(meta("edge", &format!("site-{r:03}"), v, status));
        }
    }
    // one Secret body per release, served for its current revision; the others are never asked for
    let sample = release_secret(
        "edge",
        "site-000",
        HISTORY,
        "edge",
        &["site-000-md"],
        150_000,
    );
    let secret_bytes = sample.len();
    let bodies: BTreeMap<String, (u16, Vec<u8>)> = (0..RELEASES)
        .map(|r| {
            let name = format!("site-{r:03}");
            (
                format!("sh.helm.release.v1.{name}.v{HISTORY}"),
                (
                    200,
                    release_secret(
                        "edge",
                        &name,
                        HISTORY,
                        "edge",
                        &[&format!("{name}-md")],
                        150_000,
                    ),
                ),
            )
        })
        .collect();
    let (cluster, heard) = mock(helm_route(metas, 500, bodies));
    let mut report = Report::default();
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let declared = sources::read(&cluster, &options(true, None), &[], &mut report)
        .await
        .unwrap();
    let peak = PEAK.with(Cell::get) - base;
    assert_eq!(declared.len(), RELEASES);
    assert_eq!(
        declared.by(&m3mt("edge", "site-499-md")),
        Some("Helm release edge/site-499 (revision 10, deployed)")
    );
    let heard = heard.lock().unwrap();
    let lists: Vec<&Heard> = heard
        .iter()
        .filter(|h| h.uri.starts_with("/api/v1/secrets?"))
        .collect();
    let gets: Vec<&Heard> = heard
        .iter()
        .filter(|h| h.uri.contains("/secrets/"))
        .collect();
    let listed: usize = lists.iter().map(|h| h.bytes).sum();
    let fetched: usize = gets.iter().map(|h| h.bytes).sum();
    let stored = secret_bytes * RELEASES * HISTORY as usize;
    eprintln!(
        "5,000 revisions, {} MiB stored as the API serves them: {} metadata pages ({} KiB), {} GETs ({} MiB), peak allocation {:.1} MiB",
        stored >> 20,
        lists.len(),
        listed >> 10,
        gets.len(),
        fetched >> 20,
        peak as f64 / (1 << 20) as f64
    );
    assert_eq!((lists.len(), gets.len()), (10, RELEASES));
    assert!(stored > 100 << 20, "the storage is {stored} bytes");
    assert!(peak < 4 << 20, "peak allocation {peak} bytes");
    assert_eq!(
        line(&report, "Helm releases"),
        "5000 Secrets listed (metadata only), 500 current revisions read, 500 objects declared (Secrets read in every namespace)"
    );
}
