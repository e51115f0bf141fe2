//! The pre-flight on the guard's live webhook, the live probe, the namespaces the guard never
//! judges, retried reads, and a pass that stops at a webhook that cannot be called: a pass against
//! the mocked API server, asserting the requests sent.

use super::*;

/// The DELETEs a pass sent, as `(uri, dry run)` (kube-rs sends `dryRun` in the body's
/// DeleteOptions).
fn deletes(seen: &[Seen]) -> Vec<(String, bool)> {
    seen.iter()
        .filter(|s| s.method == "DELETE")
        .map(|s| {
            let body: Value = serde_json::from_str(&s.body).unwrap_or_default();
            (s.uri.clone(), body["dryRun"] == json!(["All"]))
        })
        .collect()
}

/// The guard's webhook is read before any DELETE: missing, unreadable, failing open, with a
/// matchCondition that could exempt a template DELETE, or with a selector template-cleanup cannot
/// evaluate, the pass deletes nothing and exits 2.
#[rstest]
#[case::webhook_missing(
    status(
        404,
        "NotFound",
        "validatingwebhookconfigurations.admissionregistration.k8s.io \"clusterwide-capi-template-guard-cleanup\" not found"
    ),
    "pre-flight check `the guard's webhook is installed` failed: the ValidatingWebhookConfiguration clusterwide-capi-template-guard-cleanup does not exist"
)]
#[case::webhook_unreadable(
    status(403, "Forbidden", "cannot get"),
    "pre-flight check `the guard's webhook is installed` failed: cannot read the ValidatingWebhookConfiguration clusterwide-capi-template-guard-cleanup: 403 Forbidden: cannot get."
)]
#[case::without_the_guards_webhook(
    Some((200, json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "clusterwide-capi-template-guard-cleanup"}, "webhooks": []}))),
    "pre-flight check `the guard's webhook is installed` failed: the ValidatingWebhookConfiguration clusterwide-capi-template-guard-cleanup has no webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission"
)]
#[case::failing_open(
    webhook_with(|h| h["failurePolicy"] = json!("Ignore")),
    "pre-flight check `failurePolicy is Fail` failed: the webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission has failurePolicy \"Ignore\""
)]
#[case::break_glass_condition(
    webhook_with(|h| h["matchConditions"] = json!([{"name": "not-break-glass", "expression": "!has(oldObject.metadata.annotations)"}])),
    "pre-flight check `no matchCondition exempts a template DELETE` failed: the webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission has the matchCondition {"
)]
#[case::object_selector(
    webhook_with(|h| h["objectSelector"] = json!({"matchLabels": {"protected": "true"}})),
    "pre-flight check `the guard sees every template` failed: the webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission has an objectSelector"
)]
#[case::another_expression(
    webhook(json!({"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kubewarden"]},
        {"key": "team", "operator": "In", "values": ["edge"]}]})),
    "pre-flight check `the guard sees every template` failed: the webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission has a namespaceSelector term {"
)]
#[case::match_labels(
    webhook(json!({"matchLabels": {"team": "edge"}})),
    "pre-flight check `the guard sees every template` failed: the webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission has a namespaceSelector with matchLabels"
)]
#[case::no_rules(
    webhook_with(|h| h["rules"] = json!([])),
    "pre-flight check `rules cover DELETE` failed: the webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission has no rules."
)]
#[tokio::test]
async fn a_guard_whose_webhook_cannot_be_trusted_deletes_nothing(
    #[case] webhook: Answer,
    #[case] error: &str,
) {
    let fake = Fake {
        webhook,
        ..every_answer()
    };
    refused_before_any_delete(fake, error).await;
}

/// A template in a namespace the guard never judges (left out by the webhook's
/// namespaceSelector, or the policy server's own) is left, says why, and gets no DELETE.
#[rstest]
#[case::kubewarden_elsewhere(outside(&["kubewarden"]), "kubewarden", "deleted")]
#[case::no_selector(Value::Null, "kubewarden", "deleted")]
#[case::left_out_by_the_selector(outside(&["edge"]), "kubewarden", "left")]
#[case::two_expressions_one_for_edge(json!({"matchExpressions": [
    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kubewarden"]},
    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["edge"]}]}), "kubewarden", "left")]
#[case::policy_server_in_edge_allowed_inside(Value::Null, "edge", "left")]
#[case::policy_server_in_edge(outside(&["edge"]), "edge", "left")]
#[tokio::test]
async fn a_template_the_guard_never_judges_is_left(
    #[case] selector: Value,
    #[case] service_namespace: &str,
    #[case] verdict: &str,
) {
    let mut fake = only_free();
    fake.deployments = Some(vec![deployment("in-use")]);
    fake.webhook = webhook_with(|h| {
        h["namespaceSelector"] = selector;
        h["clientConfig"]["service"]["namespace"] = json!(service_namespace);
    });
    let (report, seen) = pass(fake, false).await;
    let v = verdicts(&report);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].0.as_str(), v[0].1.as_str()),
        ("free", verdict),
        "{v:?}"
    );
    if verdict == "left" {
        assert_eq!(
            v[0].2,
            "the guard capi-template-guard-cleanup never judges a DELETE in namespace edge (its webhook's namespaceSelector leaves it out, or it is the policy server's own namespace, where the policy server accepts every request unchecked): move the template to another namespace to have it collected"
        );
        assert!(
            !report
                .text()
                .contains("allowInsideAdmissionControllerNamespace")
        );
    }
    // no probe in a namespace the guard never judges, and no DELETE of a template there
    let sent = deletes(&seen);
    let expected: Vec<(String, bool)> = if verdict == "deleted" {
        vec![
            (format!("{M3MT_PATH}/in-use?"), true),
            (format!("{M3MT_PATH}/free?"), false),
        ]
    } else {
        vec![]
    };
    assert_eq!(sent, expected);
    assert_eq!(report.exit_code(), OK);
}

/// The probe: a guard whose pods let the dry-run DELETE of a template in use through (monitor
/// mode, an older configuration), or whose answer is not the guard's refusal, stops the pass
/// before its first real DELETE, saying what came back.
#[rstest]
#[case::monitor_mode_allows(Some((200, template("in-use", "2026-01-01T00:00:00Z"))), "the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses, did not come back as the guard's refusal: 2xx: the DELETE would have gone through")]
#[case::the_main_guard_answers(
    status(
        409,
        "",
        "admission webhook \"clusterwide-capi-template-guard.kubewarden.admission\" denied the request: in use"
    ),
    "the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses, did not come back as the guard's refusal: 409: admission webhook \"clusterwide-capi-template-guard.kubewarden.admission\" denied the request: in use."
)]
#[case::webhook_down(
    status(
        500,
        "InternalError",
        "Internal error occurred: failed calling webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\": context deadline exceeded"
    ),
    "the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses, did not come back as the guard's refusal: 500 InternalError: Internal error occurred: failed calling webhook"
)]
#[case::no_answer(
    None,
    "the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses, got no answer: delete metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use: no answer within 30s"
)]
#[tokio::test(start_paused = true)]
async fn a_probe_the_guard_does_not_refuse_stops_the_pass(
    #[case] answer: Answer,
    #[case] error: &str,
) {
    let mut fake = every_answer();
    fake.deletes.insert("in-use", answer);
    let (report, seen) = pass(fake, false).await;
    let text = report.error.clone().unwrap_or_default();
    assert!(text.starts_with(error), "{text}");
    assert!(text.ends_with(" Nothing was deleted."), "{text}");
    assert_eq!(report.exit_code(), CANNOT_RUN);
    // the probe's dry-run DELETE, and nothing else
    assert_eq!(deletes(&seen), [(format!("{M3MT_PATH}/in-use?"), true)]);
    assert!(report.templates.is_empty(), "{:?}", report.templates);
}

/// A template in use that is deleted or recreated under the probe (its dry-run DELETE answered
/// 404, or 409 for the uid precondition) is read and probed once more; when it never holds
/// still, the pass stops rather than delete on the checks alone.
#[rstest]
#[case::recreated(status(
    409,
    "Conflict",
    "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"in-use\": Precondition failed: UID in precondition: uid-in-use, UID in object meta: other"
))]
#[case::gone(status(
    404,
    "NotFound",
    "metal3machinetemplates.infrastructure.cluster.x-k8s.io \"in-use\" not found"
))]
#[tokio::test]
async fn a_probe_whose_template_never_holds_still_stops_the_pass(#[case] answer: Answer) {
    let mut fake = every_answer();
    fake.deletes.insert("in-use", answer);
    let (report, seen) = pass(fake, false).await;
    assert_eq!(
        report.error.as_deref(),
        Some(
            "the probe could not finish: metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use changed or went away between its read and its dry-run DELETE, 2 times each, and no other template in use could be probed. Run the pass again once the deploy tool that recreates them has settled. Nothing was deleted."
        )
    );
    assert_eq!(report.exit_code(), CANNOT_RUN);
    // read and probed twice, nothing else deleted
    let probe = (format!("{M3MT_PATH}/in-use?"), true);
    assert_eq!(deletes(&seen), [probe.clone(), probe]);
    let gets = seen
        .iter()
        .filter(|s| s.method == "GET" && s.uri.contains("/metal3machinetemplates/in-use"))
        .count();
    assert_eq!(gets, 2);
}

/// Without a template the guard is sure to keep, the report says no probe was possible and the
/// pass relies on the checks.
#[rstest]
#[case::capi_not_served(None, vec![])]
#[case::no_machine_deployment(Some(vec![]), vec![])]
#[case::its_template_is_gone(Some(vec![deployment("gone-away")]), vec![])]
#[case::being_deleted(Some(vec![with_deletion(deployment("in-use"))]), vec![])]
#[case::its_template_is_moving(Some(vec![deployment("in-use")]), vec![("clusterctl.cluster.x-k8s.io/delete-for-move", "")])]
#[tokio::test]
async fn without_a_template_in_use_no_probe_is_possible(
    #[case] deployments: Option<Vec<Value>>,
    #[case] annotations: Vec<(&str, &str)>,
) {
    let mut fake = only_free();
    fake.deployments = deployments;
    for (k, v) in annotations {
        fake.unlisted[0]["metadata"]["annotations"] = json!({k: v});
    }
    let (report, seen) = pass(fake, false).await;
    assert!(
        report
            .probe
            .as_deref()
            .unwrap_or("")
            .starts_with("no probe possible ("),
        "{:?}",
        report.probe
    );
    assert!(
        report
            .text()
            .contains("; the pass relies on the checks of the guard's policy and webhook\n")
    );
    assert_eq!(deletes(&seen), [(format!("{M3MT_PATH}/free?"), false)]);
    assert_eq!(report.exit_code(), OK);
}

fn with_deletion(mut object: Value) -> Value {
    object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    object
}

/// The first DELETE whose webhook cannot be called (kube-apiserver's 500 `failed calling
/// webhook`, or no answer within --request-timeout) stops the pass: exit 1, every later
/// candidate reported as not tried, no DELETE sent for it.
#[rstest]
#[case::failed_calling_webhook(status(
    500,
    "InternalError",
    "Internal error occurred: failed calling webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\": failed to call webhook: context deadline exceeded"
))]
#[case::no_answer(None)]
#[tokio::test(start_paused = true)]
async fn a_webhook_that_cannot_be_called_stops_the_pass(#[case] answer: Answer) {
    let old = "2026-01-01T00:00:00Z";
    let mut fake = every_answer();
    fake.templates = ["a-free", "b-down", "c-free", "d-free"]
        .iter()
        .map(|n| template(n, old))
        .collect();
    fake.deletes = BTreeMap::from([
        ("a-free", Some((200, template("a-free", old)))),
        ("b-down", answer),
        ("c-free", Some((200, template("c-free", old)))),
        ("d-free", Some((200, template("d-free", old)))),
        ("in-use", status(409, "", &format!("{DENIED}in use"))),
    ]);
    let (report, seen) = pass(fake, false).await;
    let v: Vec<(String, String)> = verdicts(&report)
        .into_iter()
        .map(|(n, v, _)| (n, v))
        .collect();
    assert_eq!(
        v,
        [
            ("a-free", "deleted"),
            ("b-down", "failed"),
            ("c-free", "not tried"),
            ("d-free", "not tried")
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    assert_eq!(report.exit_code(), FAILED);
    assert!(
        report.closing_line().ends_with("failed 1, not tried 2"),
        "{}",
        report.closing_line()
    );
    let real: Vec<String> = deletes(&seen)
        .into_iter()
        .filter(|(_, dry)| !dry)
        .map(|(u, _)| u)
        .collect();
    assert_eq!(
        real,
        [
            format!("{M3MT_PATH}/a-free?"),
            format!("{M3MT_PATH}/b-down?")
        ]
    );
}

/// The GETs of the guard's policy a pass sent.
fn policy_gets(seen: &[Seen]) -> usize {
    seen.iter()
        .filter(|s| s.uri.starts_with(GUARD_PATH))
        .count()
}

fn unavailable() -> Answer {
    status(
        503,
        "ServiceUnavailable",
        "the server is currently unable to handle the request",
    )
}

/// Reads are retried with backoff: on 503 (and 429, 504) by kube-rs's policy, on 500, 502 and an
/// attempt with no answer within --request-timeout by ours; a DELETE never is.
#[rstest]
#[case::two_503s(vec![unavailable(), unavailable()])]
#[case::a_500_and_a_502(vec![status(500, "InternalError", "etcd"), status(502, "", "bad gateway")])]
#[case::two_timeouts(vec![None, None])]
#[case::a_timeout_then_a_503(vec![None, unavailable()])]
#[tokio::test(start_paused = true)]
async fn reads_are_retried_and_deletes_are_not(#[case] first: Vec<Answer>) {
    let mut fake = only_free();
    let failures = first.len();
    fake.flaky = Mutex::new(first);
    fake.deletes
        .insert("free", status(503, "ServiceUnavailable", "try later"));
    let (report, seen) = pass(fake, false).await;
    assert_eq!(
        policy_gets(&seen),
        failures + 1,
        "the failures, then the answer"
    );
    assert_eq!(verdicts(&report)[0].1, "failed");
    assert_eq!(
        deletes(&seen).iter().filter(|(_, dry)| !dry).count(),
        1,
        "a DELETE is sent once"
    );
}

/// A read that keeps failing is given up after the retries, and the pass deletes nothing.
#[rstest]
#[case::four_503s(vec![unavailable(); 4], 4, "cannot read the ClusterAdmissionPolicy capi-template-guard-cleanup: 503 ServiceUnavailable: the server is currently unable to handle the request.")]
#[case::four_timeouts(vec![None, None, None, None], 4, "cannot read the ClusterAdmissionPolicy capi-template-guard-cleanup: get clusteradmissionpolicies capi-template-guard-cleanup: no answer within 30s (--request-timeout).")]
#[tokio::test(start_paused = true)]
async fn a_read_that_keeps_failing_stops_the_pass(
    #[case] first: Vec<Answer>,
    #[case] gets: usize,
    #[case] error: &str,
) {
    let mut fake = only_free();
    fake.flaky = Mutex::new(first);
    let (report, seen) = pass(fake, false).await;
    assert_eq!(policy_gets(&seen), gets);
    assert_eq!(report.exit_code(), CANNOT_RUN);
    assert_eq!(
        report.error.as_deref(),
        Some(format!("{error} Nothing was deleted.").as_str())
    );
    assert!(deletes(&seen).is_empty());
}

/// Topology copies are collected without the cleanup label, unless labelled
/// `capi-template-guard.kubewarden.io/cleanup=false`: that one is left, saying so, and gets no
/// DELETE.
#[tokio::test]
async fn a_topology_copy_labelled_false_is_left() {
    let old = "2026-01-01T00:00:00Z";
    let copy = |name: &str, cleanup: Option<&str>| {
        let mut t = template(name, old);
        t["metadata"]["labels"] = json!({"topology.cluster.x-k8s.io/owned": ""});
        if let Some(value) = cleanup {
            t["metadata"]["labels"][CLEANUP_LABEL] = json!(value);
        }
        t
    };
    let mut fake = only_free();
    fake.templates.clear();
    fake.topology = vec![copy("copy-kept-out", Some("false")), copy("copy", None)];
    fake.deletes.insert("copy", Some((200, copy("copy", None))));
    let (report, seen) = pass(fake, false).await;
    let v = verdicts(&report);
    assert_eq!(
        v,
        [
            ("copy-kept-out".to_string(), "left".to_string(), "not marked for clean-up (capi-template-guard.kubewarden.io/cleanup is not \"true\", or a topology copy opted out with \"false\")".to_string()),
            ("copy".to_string(), "deleted".to_string(), String::new()),
        ]
    );
    assert_eq!(deletes(&seen), [(format!("{M3MT_PATH}/copy?"), false)]);
}

/// A probe that cannot read what it needs stops the pass before any DELETE, naming the grant.
#[tokio::test]
async fn a_probe_without_its_rbac_stops_the_pass() {
    let mut fake = every_answer();
    fake.deployments_refused = Some(status(
        403,
        "Forbidden",
        "machinedeployments.cluster.x-k8s.io is forbidden",
    ));
    refused_before_any_delete(
        fake,
        "the probe cannot list machinedeployments.cluster.x-k8s.io: 403 Forbidden: machinedeployments.cluster.x-k8s.io is forbidden. The job needs list on machinedeployments.cluster.x-k8s.io (examples/cleanup/component/cleanup.yaml).",
    )
    .await;
}
