//! The mocked API server the binary's tests run passes against (kube-rs's tower-test pattern):
//! [`Fake`], a cluster with the guard and Metal3MachineTemplates, its fixtures, and [`pass`]. The
//! tests are in the modules below: whole passes in tests/passes.rs; the pre-flight on the live
//! webhook, the probe, the retries and the stops in tests/preflight.rs; the caller's check in
//! tests/judged.rs; Events in tests/recorded.rs; the deploy tools (Argo CD, Helm) in
//! tests/deploy_tools.rs and tests/helm_passes.rs; the client as a pass builds it, against a local
//! HTTP server, in tests/client.rs.

mod client;
mod deploy_tools;
mod helm_passes;
mod judged;
mod passes;
mod preflight;
mod recorded;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use rstest::rstest;
use serde_json::{Value, json};
use template_cleanup_core::{CLEANUP_LABEL, CLEANUP_VALUE};

use crate::api::{Cluster, per_attempt, retrying_reads};
use crate::cli::Options;
use crate::pass::run;
use crate::report::{CANNOT_RUN, FAILED, OK, Report};

const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const POLICY: &str = "capi-template-guard-cleanup";
const GUARD_PATH: &str =
    "/apis/policies.kubewarden.io/v1/clusteradmissionpolicies/capi-template-guard-cleanup";
const WEBHOOK_PATH: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/clusterwide-capi-template-guard-cleanup";
const MD_PATH: &str = "/apis/cluster.x-k8s.io/v1beta2/machinedeployments";
const M3MT_PATH: &str =
    "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/edge/metal3machinetemplates";
const DENIED: &str = "admission webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\" denied the request: ";
/// 2026-01-02T00:00:00Z
const NOW: i64 = 1_767_312_000;

/// One request the mock answered (or held).
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    body: String,
}

/// An answer: a status and a JSON body, or none at all (the request hangs).
type Answer = Option<(u16, Value)>;

fn status(code: u16, reason: &str, message: &str) -> Answer {
    Some((
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": code, "reason": reason, "message": message}),
    ))
}

/// `answer` with `details.kind` and `details.name`, as kube-apiserver's NotFound carries them.
fn with_details(answer: Answer, kind: &str, name: &str) -> Answer {
    answer.map(|(code, mut body)| {
        body["details"] = json!({"kind": kind, "name": name});
        (code, body)
    })
}

/// The guard of the core crate's tables (template-cleanup/core/tests/guard.json).
fn policy() -> Value {
    serde_json::from_str(include_str!("../core/tests/guard.json")).unwrap()
}

/// The guard's ValidatingWebhookConfiguration as kubewarden-controller v1.36.0-beta.1 writes it
/// (`internal/controller/policy_subreconciler_webhook.go:21-90`) for a policy server in
/// `kubewarden`, with `selector` as the webhook's namespaceSelector (`null`: none).
fn webhook(selector: Value) -> Answer {
    webhook_with(|h| h["namespaceSelector"] = selector)
}

/// The shipped guard's webhook with `edit` applied to its one webhook.
fn webhook_with(edit: impl FnOnce(&mut Value)) -> Answer {
    let p = policy();
    let mut hook = json!({"name": "clusterwide-capi-template-guard-cleanup.kubewarden.admission",
        "clientConfig": {"service": {"namespace": "kubewarden", "name": "policy-server-default", "path": "/validate/clusterwide-capi-template-guard-cleanup", "port": 8443}},
        "rules": p["spec"]["rules"], "failurePolicy": "Fail", "namespaceSelector": outside(&["kubewarden"]),
        "objectSelector": {}, "matchConditions": p["spec"]["matchConditions"], "sideEffects": "None",
        "admissionReviewVersions": ["v1"]});
    edit(&mut hook);
    Some((
        200,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "clusterwide-capi-template-guard-cleanup"}, "webhooks": [hook]}),
    ))
}

/// A MachineDeployment in `edge` (v1beta2) using the Metal3MachineTemplate `template`.
fn deployment(template: &str) -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": {"name": format!("md-{template}"), "namespace": "edge"},
        "spec": {"clusterName": "a", "template": {"spec": {"clusterName": "a",
            "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": template}}}}})
}

/// The namespaceSelector kubewarden-controller gives a ClusterAdmissionPolicy's webhook
/// (`namespaceSelector`, lines 193-219) when the controller runs in `namespaces`.
fn outside(namespaces: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": namespaces}]})
}

fn template(name: &str, created: &str) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate",
        "metadata": {"name": name, "namespace": "edge", "uid": format!("uid-{name}"), "resourceVersion": "7",
            "creationTimestamp": created, "labels": {CLEANUP_LABEL: CLEANUP_VALUE}},
        "spec": {"template": {"spec": {}}},
    })
}

/// A cluster with the guard, Metal3MachineTemplates in `edge` (listed two per page), optionally
/// Flux, and an answer per DELETE by name.
struct Fake {
    policy: Answer,
    /// The guard's ValidatingWebhookConfiguration.
    webhook: Answer,
    templates: Vec<Value>,
    flux: Option<Answer>,
    /// The answer to the list of Helm's release Secrets, by namespace (`--helm-releases`); a
    /// namespace not named here answers 500.
    helm: BTreeMap<&'static str, Answer>,
    /// Flux HelmReleases: `None`, not installed; else the answer to their list.
    flux_helm: Option<Answer>,
    /// `--helm-storage-namespace`.
    helm_storage: Vec<String>,
    /// The namespaces collected in (`-n`); `None`, every namespace (`-A`): the cluster-wide lists
    /// answer as `edge`'s, the only namespace the mock holds.
    namespaces: Option<Vec<String>>,
    deletes: BTreeMap<&'static str, Answer>,
    /// Cluster API's MachineDeployments (`None`: the group is not served).
    deployments: Option<Vec<Value>>,
    /// The answer to their list instead of `deployments`, when set.
    deployments_refused: Option<Answer>,
    /// Templates a GET finds besides `templates` (unlabelled ones a MachineDeployment uses).
    unlisted: Vec<Value>,
    /// The templates the topology selector lists (`topology.cluster.x-k8s.io/owned`).
    topology: Vec<Value>,
    /// What the first GETs of the guard's policy get, in order, before `policy` (`None`: no
    /// answer).
    flaky: Mutex<Vec<Answer>>,
    /// Who the SelfSubjectReview says the job is.
    user: &'static str,
    /// The DELETEs answered so far, and after how many the guard's pods answer in monitor mode
    /// (a dry-run DELETE of a template in use is let through): a mode change during a pass.
    answered: Mutex<usize>,
    monitor_after: Option<usize>,
    /// Events written, by `namespace/name`, and the answer every Event write gets instead, when
    /// set (tests/recorded.rs).
    events: Arc<Mutex<BTreeMap<String, Value>>>,
    event_answer: Option<Answer>,
    /// `--events-per-pass`.
    events_per_pass: usize,
    /// `--time-limit`.
    time_limit: Duration,
    /// MachineSets served and listed (`None`: the kind is not served).
    machine_sets: Option<Vec<Value>>,
    /// OpenReports Reports applied, by namespace; `None`: the CRD is not installed.
    reports: Option<Arc<Mutex<BTreeMap<String, Value>>>>,
}

impl Fake {
    fn answer(&self, method: &str, path: &str, query: &str, body: &str) -> Answer {
        if let Some(answer) = recorded::answer(self, method, path, body) {
            return answer;
        }
        let path = match path {
            "/apis/infrastructure.cluster.x-k8s.io/v1beta1/metal3machinetemplates" => M3MT_PATH,
            "/api/v1/secrets" => "/api/v1/namespaces/edge/secrets",
            p => p,
        };
        match (method, path) {
            ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews") => Some((
                200,
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
                    "status": {"userInfo": {"username": self.user, "groups": ["system:authenticated"]}}}),
            )),
            ("GET", GUARD_PATH) => {
                let mut flaky = self.flaky.lock().unwrap();
                if flaky.is_empty() {
                    self.policy.clone()
                } else {
                    flaky.remove(0)
                }
            }
            ("GET", WEBHOOK_PATH) => self.webhook.clone(),
            ("GET", "/apis") => {
                let mut groups = vec![
                    json!({"name": INFRA, "versions": [{"groupVersion": format!("{INFRA}/v1beta1"), "version": "v1beta1"}], "preferredVersion": {"groupVersion": format!("{INFRA}/v1beta1"), "version": "v1beta1"}}),
                ];
                if self.flux.is_some() {
                    groups.push(json!({"name": "kustomize.toolkit.fluxcd.io", "versions": [{"groupVersion": "kustomize.toolkit.fluxcd.io/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "kustomize.toolkit.fluxcd.io/v1", "version": "v1"}}));
                }
                if self.deployments.is_some() {
                    groups.push(json!({"name": "cluster.x-k8s.io", "versions": [{"groupVersion": "cluster.x-k8s.io/v1beta2", "version": "v1beta2"}], "preferredVersion": {"groupVersion": "cluster.x-k8s.io/v1beta2", "version": "v1beta2"}}));
                }
                if self.reports.is_some() {
                    groups.push(json!({"name": "openreports.io", "versions": [{"groupVersion": "openreports.io/v1alpha1", "version": "v1alpha1"}], "preferredVersion": {"groupVersion": "openreports.io/v1alpha1", "version": "v1alpha1"}}));
                }
                if self.flux_helm.is_some() {
                    groups.push(json!({"name": "helm.toolkit.fluxcd.io", "versions": [{"groupVersion": "helm.toolkit.fluxcd.io/v2", "version": "v2"}], "preferredVersion": {"groupVersion": "helm.toolkit.fluxcd.io/v2", "version": "v2"}}));
                }
                Some((
                    200,
                    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
                ))
            }
            ("GET", "/apis/infrastructure.cluster.x-k8s.io/v1beta1") => Some((
                200,
                json!({"kind": "APIResourceList", "groupVersion": format!("{INFRA}/v1beta1"), "resources": [
                    {"name": "metal3machinetemplates", "singularName": "metal3machinetemplate", "namespaced": true, "kind": "Metal3MachineTemplate", "verbs": ["delete", "get", "list"]},
                    {"name": "metal3machinetemplates/status", "singularName": "", "namespaced": true, "kind": "Metal3MachineTemplate", "verbs": ["get"]},
                ]}),
            )),
            ("GET", "/apis/cluster.x-k8s.io/v1beta2") => {
                let mut resources = vec![
                    json!({"name": "machinedeployments", "singularName": "machinedeployment", "namespaced": true, "kind": "MachineDeployment", "verbs": ["get", "list"]}),
                    json!({"name": "clusters", "singularName": "cluster", "namespaced": true, "kind": "Cluster", "verbs": ["get", "list"]}),
                ];
                if self.machine_sets.is_some() {
                    resources.push(json!({"name": "machinesets", "singularName": "machineset", "namespaced": true, "kind": "MachineSet", "verbs": ["get", "list"]}));
                }
                Some((
                    200,
                    json!({"kind": "APIResourceList", "groupVersion": "cluster.x-k8s.io/v1beta2", "resources": resources}),
                ))
            }
            // the probe lists every referrer kind served; no Cluster is held here
            ("GET", "/apis/cluster.x-k8s.io/v1beta2/clusters" | "/apis/cluster.x-k8s.io/v1beta2/namespaces/edge/clusters") => Some((
                200,
                json!({"kind": "ClusterList", "apiVersion": "cluster.x-k8s.io/v1beta2", "metadata": {}, "items": []}),
            )),
            ("GET", "/apis/cluster.x-k8s.io/v1beta2/machinesets" | "/apis/cluster.x-k8s.io/v1beta2/namespaces/edge/machinesets") => Some((
                200,
                json!({"kind": "MachineSetList", "apiVersion": "cluster.x-k8s.io/v1beta2", "metadata": {}, "items": self.machine_sets.clone().unwrap_or_default()}),
            )),
            (
                "GET",
                MD_PATH | "/apis/cluster.x-k8s.io/v1beta2/namespaces/edge/machinedeployments",
            ) => self.deployments_refused.clone().unwrap_or_else(|| Some((
                200,
                json!({"kind": "MachineDeploymentList", "apiVersion": "cluster.x-k8s.io/v1beta2", "metadata": {}, "items": self.deployments.clone().unwrap_or_default()}),
            ))),
            ("GET", p) if p.starts_with(&format!("{M3MT_PATH}/")) => {
                let name = p.rsplit('/').next().unwrap_or("");
                match self.templates.iter().chain(&self.unlisted).find(|t| t["metadata"]["name"] == name) {
                    Some(t) => Some((200, t.clone())),
                    None => status(404, "NotFound", &format!("metal3machinetemplates.infrastructure.cluster.x-k8s.io \"{name}\" not found")),
                }
            }
            ("GET", "/apis/kustomize.toolkit.fluxcd.io/v1") => {
                tool_resources("kustomize.toolkit.fluxcd.io/v1", "Kustomization")
            }
            ("GET", "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations") => {
                self.flux.clone().flatten()
            }
            ("GET", "/apis/helm.toolkit.fluxcd.io/v2") => {
                tool_resources("helm.toolkit.fluxcd.io/v2", "HelmRelease")
            }
            ("GET", "/apis/helm.toolkit.fluxcd.io/v2/helmreleases") => {
                self.flux_helm.clone().flatten()
            }
            // a release Secret by name, from its namespace's list (tests/helm_passes.rs)
            ("GET", p) if p.starts_with("/api/v1/namespaces/") && p.contains("/secrets/") => {
                helm_passes::secret_by_name(&self.helm, p)
            }
            ("GET", p)
                if p.starts_with("/api/v1/namespaces/")
                    && p.ends_with("/secrets")
                    && query.contains("labelSelector=owner=helm") =>
            {
                let ns = p.split('/').nth(4).unwrap_or("");
                self.helm.get(ns).cloned().unwrap_or_else(|| {
                    status(500, "", "the mock lists no Secrets unless a test says so")
                })
            }
            ("GET", M3MT_PATH) if query.contains("topology.cluster.x-k8s.io") => Some((
                200,
                json!({"kind": "Metal3MachineTemplateList", "apiVersion": format!("{INFRA}/v1beta1"), "metadata": {}, "items": self.topology}),
            )),
            ("GET", M3MT_PATH) => {
                // two per page, continue = index of the next item
                let start: usize = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("continue="))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let end = (start + 2).min(self.templates.len());
                let more = if end < self.templates.len() {
                    json!({"continue": end.to_string()})
                } else {
                    json!({})
                };
                Some((
                    200,
                    json!({"kind": "Metal3MachineTemplateList", "apiVersion": format!("{INFRA}/v1beta1"), "metadata": more, "items": self.templates[start..end]}),
                ))
            }
            ("DELETE", p) => {
                let name = p.rsplit('/').next().unwrap_or("");
                let answered = {
                    let mut answered = self.answered.lock().unwrap();
                    *answered += 1;
                    *answered
                };
                if self.monitor_after.is_some_and(|n| answered > n) {
                    return Some((200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})));
                }
                self.deletes
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| status(500, "", &format!("unexpected DELETE of {name}")))
            }
            _ => status(
                404,
                "NotFound",
                &format!("the mock serves no {method} {path}"),
            ),
        }
    }
}

/// The discovery of a deploy tool's group: its one namespaced `kind`, listed.
fn tool_resources(group_version: &str, kind: &str) -> Answer {
    let singular = kind.to_lowercase();
    Some((
        200,
        json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": [
            {"name": format!("{singular}s"), "singularName": singular, "namespaced": true, "kind": kind, "verbs": ["get", "list"]},
        ]}),
    ))
}

/// Runs one pass against `fake`; returns the report and every request seen.
async fn pass(fake: Fake, dry_run: bool) -> (Report, Vec<Seen>) {
    pass_with(fake, dry_run, false).await
}

async fn pass_with(fake: Fake, dry_run: bool, helm_releases: bool) -> (Report, Vec<Seen>) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let helm_storage = fake.helm_storage.clone();
    let namespaces = fake.namespaces.clone();
    let fake_cap = fake.events_per_pass;
    let time_limit = fake.time_limit;
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some((request, send)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let body = body
                .collect_bytes()
                .await
                .map(|b| String::from_utf8_lossy(&b).to_string())
                .unwrap_or_default();
            let (path, query) = (
                parts.uri.path().to_string(),
                parts.uri.query().unwrap_or("").to_string(),
            );
            let query = query.replace("%2F", "/").replace("%3D", "=");
            log.lock().unwrap().push(Seen {
                method: parts.method.to_string(),
                uri: format!("{path}?{query}"),
                body: body.clone(),
            });
            match fake.answer(parts.method.as_str(), &path, &query, &body) {
                Some((code, json)) => send.send_response(
                    Response::builder()
                        .status(code)
                        .body(Body::from(serde_json::to_vec(&json).unwrap()))
                        .unwrap(),
                ),
                None => held.push(send),
            }
        }
    });
    let service = tower::Layer::layer(&per_attempt(Duration::from_secs(30)), service);
    let service = tower::Layer::layer(&retrying_reads(), service);
    let cluster = Cluster::new(Client::new(service, "edge"), Duration::from_secs(30));
    let options = Options {
        namespaces,
        dry_run,
        min_age: 600,
        policy: POLICY.into(),
        helm_releases,
        helm_storage_namespaces: helm_storage,
        events_per_pass: fake_cap,
        time_limit,
    };
    let report = run(&cluster, &options, NOW, None).await;
    let seen = seen.lock().unwrap().clone();
    (report, seen)
}

fn verdicts(report: &Report) -> Vec<(String, String, String)> {
    report
        .templates
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.verdict.to_string(),
                t.detail.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The verdict and detail of the line of template `name`.
fn verdict_of(report: &Report, name: &str) -> (String, String) {
    let lines = verdicts(report);
    let (_, verdict, detail) = lines
        .into_iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("no line for {name}: {report:?}"));
    (verdict, detail)
}

fn every_answer() -> Fake {
    let old = "2026-01-01T00:00:00Z";
    Fake {
        policy: Some((200, policy())),
        webhook: webhook(outside(&["kubewarden"])),
        templates: [
            "finalized",
            "forbidden",
            "free",
            "gone",
            "in-use",
            "orphaned",
            "recreated",
            "refused",
            "slow",
        ]
        .iter()
        .map(|n| template(n, old))
        .chain([template("young", "2026-01-01T23:55:00Z")])
        .collect(),
        flux: None,
        helm: BTreeMap::new(),
        flux_helm: None,
        helm_storage: Vec::new(),
        namespaces: Some(vec!["edge".into()]),
        deployments: Some(vec![deployment("in-use")]),
        deployments_refused: None,
        unlisted: vec![template("in-use", old)],
        flaky: Mutex::new(Vec::new()),
        topology: Vec::new(),
        user: "system:serviceaccount:capi-system:capi-template-cleanup",
        answered: Mutex::new(0),
        monitor_after: None,
        events: Arc::default(),
        event_answer: None,
        events_per_pass: crate::events::PER_PASS,
        time_limit: Duration::from_secs(720),
        machine_sets: None,
        reports: None,
        deletes: BTreeMap::from([
            ("free", Some((200, template("free", old)))),
            (
                "finalized",
                Some((200, {
                    let mut t = template("finalized", old);
                    t["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
                    t["metadata"]["finalizers"] = json!(["example.com/hold"]);
                    t
                })),
            ),
            // the probe's dry run of in-use; its real DELETE is never sent (the guard's own
            // decision keeps it)
            (
                "in-use",
                status(
                    409,
                    "",
                    &format!("{DENIED}in-use is referenced by MachineSet edge/md-7f9c"),
                ),
            ),
            // what no MachineDeployment names, only the deployed guard keeps
            (
                "refused",
                status(
                    409,
                    "",
                    &format!("{DENIED}refused is referenced by MachineSet edge/md-7f9c"),
                ),
            ),
            // the registry's NotFound names the template itself in its details
            (
                "gone",
                with_details(
                    status(
                        404,
                        "NotFound",
                        "metal3machinetemplates.infrastructure.cluster.x-k8s.io \"gone\" not found",
                    ),
                    "metal3machinetemplates",
                    "gone",
                ),
            ),
            // a webhook's namespaceSelector on a Namespace that was force-finalized: the template
            // is still there
            (
                "orphaned",
                with_details(
                    status(404, "NotFound", "namespaces \"edge\" not found"),
                    "namespaces",
                    "edge",
                ),
            ),
            (
                "forbidden",
                status(
                    403,
                    "Forbidden",
                    "metal3machinetemplates.infrastructure.cluster.x-k8s.io \"forbidden\" is forbidden: User \"system:serviceaccount:capi:cleanup\" cannot delete resource",
                ),
            ),
            // rest.BeforeDelete's answer (k8s.io/apiserver v0.36.3 pkg/registry/rest/delete.go), the
            // usual one when a template was replaced since it was listed
            (
                "recreated",
                status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"recreated\": the UID in the precondition (uid-recreated) does not match the UID in record (other). The object might have been deleted and then recreated",
                ),
            ),
            ("slow", None),
        ]),
    }
}

/// [`every_answer`] with one template, `free`, which the DELETE answers 200, and no Cluster API
/// (so no probe: the only DELETE is `free`'s).
fn only_free() -> Fake {
    let mut fake = every_answer();
    fake.templates.retain(|t| t["metadata"]["name"] == "free");
    fake.deployments = None;
    fake
}

/// A pass over `fake` fails with a message starting with `error`, exits 2 and sends no DELETE.
async fn refused_before_any_delete(fake: Fake, error: &str) {
    let (report, seen) = pass(fake, false).await;
    let text = report.error.clone().unwrap_or_default();
    assert!(text.starts_with(error), "{text}");
    assert!(text.ends_with(". Nothing was deleted."), "{text}");
    assert_eq!(text.matches("Nothing was deleted").count(), 1, "{text}");
    assert_eq!(report.exit_code(), CANNOT_RUN);
    assert!(!seen.iter().any(|s| s.method == "DELETE"), "{seen:?}");
}
