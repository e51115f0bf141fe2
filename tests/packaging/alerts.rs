//! examples/prometheus-rule.yaml selects only metrics and labels that exist, with the names the
//! policies, webhooks and clean-up CronJob of the other examples really get.

use super::*;
use regex::Regex;
use rstest::rstest;

const RULES: &str = "examples/prometheus-rule.yaml";

/// The labels of the policy server's evaluation metrics: crates/policy-server/src/metrics.rs
/// (Kubewarden 1.36; policy-server v1.31.0 src/metrics.rs), PolicyEvaluation's
/// Into<Vec<KeyValue>>, for the counter of metrics/policy_evaluations_total.rs and the histogram
/// of metrics/policy_evaluations_latency.rs alike.
const EVALUATION_LABELS: &[&str] = &[
    "policy_name",
    "policy_mode",
    "resource_kind",
    "resource_namespace",
    "resource_request_operation",
    "accepted",
    "mutated",
    "request_origin",
    "error_code",
];

/// Every metric an alert may read, with the labels its exporter sets, read in the exporter's
/// source. Prometheus adds no label of its own that the alerts use, but `le` on a histogram's
/// `_bucket` series.
const METRICS: &[(&str, &[&str])] = &[
    ("kubewarden_policy_evaluations_total", EVALUATION_LABELS),
    (
        "kubewarden_policy_evaluation_latency_milliseconds_bucket",
        EVALUATION_LABELS,
    ),
    // kube-apiserver: staging/src/k8s.io/apiserver/pkg/admission/metrics/metrics.go.
    (
        "apiserver_admission_webhook_rejection_count",
        &["name", "type", "operation", "error_type", "rejection_code"],
    ),
    (
        "apiserver_admission_webhook_fail_open_count",
        &["name", "type"],
    ),
    // kube-state-metrics v2.20.0: internal/store/deployment.go, job.go and cronjob.go
    // (descCronJobLabelsDefaultLabels).
    (
        "kube_deployment_status_replicas_available",
        &["namespace", "deployment"],
    ),
    ("kube_job_failed", &["namespace", "job_name", "condition"]),
    (
        "kube_job_owner",
        &[
            "namespace",
            "job_name",
            "owner_kind",
            "owner_name",
            "owner_is_controller",
        ],
    ),
    (
        "kube_cronjob_status_last_schedule_time",
        &["namespace", "cronjob"],
    ),
    (
        "kube_cronjob_status_last_successful_time",
        &["namespace", "cronjob"],
    ),
];

/// The labels of a metric, `le` included on a histogram's buckets.
fn labels_of(metric: &str) -> Vec<&'static str> {
    let mut labels: Vec<&'static str> = METRICS
        .iter()
        .find(|(name, _)| *name == metric)
        .map(|(_, labels)| labels.to_vec())
        .unwrap_or_default();
    if metric.ends_with("_bucket") {
        labels.push("le");
    }
    labels
}

/// PromQL words that look like metric names but are not.
const PROMQL_WORDS: &[&str] = &[
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "increase",
    "rate",
    "histogram_quantile",
    "or",
    "and",
    "unless",
];

/// The names the other examples give: `clusterwide-<policy>`, its webhook, the clean-up CronJob.
struct Names {
    policies: BTreeSet<String>,
    webhooks: BTreeSet<String>,
    cronjobs: BTreeSet<String>,
}

fn example_names() -> Names {
    let mut names = Names {
        policies: BTreeSet::new(),
        webhooks: BTreeSet::new(),
        cronjobs: BTreeSet::new(),
    };
    let mut stack = vec![root().join("examples")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("examples/ lists").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(root())
                .expect("under the root")
                .display()
                .to_string();
            if !relative.ends_with(".yaml") || relative == RULES {
                continue;
            }
            for doc in yaml_documents(&relative, &read(&relative)) {
                let name = doc["metadata"]["name"].as_str().unwrap_or("").to_string();
                match doc["kind"].as_str() {
                    Some("ClusterAdmissionPolicy") => {
                        names
                            .webhooks
                            .insert(format!("clusterwide-{name}.kubewarden.admission"));
                        names.policies.insert(format!("clusterwide-{name}"));
                    }
                    Some("CronJob") => {
                        names.cronjobs.insert(name);
                    }
                    _ => {}
                }
            }
        }
    }
    names
}

/// What is wrong with one expression: unknown metrics, labels a metric does not carry, and
/// names that no example gives. Empty when nothing is.
fn problems(expr: &str, names: &Names) -> Vec<String> {
    let known: BTreeMap<&str, &[&str]> = METRICS.iter().copied().collect();
    let mut out = Vec::new();
    // Quoted strings first, so that label values are not read as metric names.
    let strings = Regex::new(r#""[^"]*""#).expect("a regex");
    let bare = strings.replace_all(expr, "\"\"");
    let identifier = Regex::new(r"[A-Za-z_:][A-Za-z0-9_:]*").expect("a regex");
    let grouping = Regex::new(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
        .expect("a regex");
    let selector = Regex::new(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}").expect("a regex");
    let matcher =
        Regex::new(r#"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)""#).expect("a regex");
    let without_groupings = grouping.replace_all(&bare, "");
    let without_ranges = Regex::new(r"\[[^\]]*\]")
        .expect("a regex")
        .replace_all(&without_groupings, "");
    let without_matchers = Regex::new(r"\{[^}]*\}")
        .expect("a regex")
        .replace_all(&without_ranges, "");
    let mut used: Vec<&str> = Vec::new();
    for word in identifier.find_iter(&without_matchers).map(|m| m.as_str()) {
        if PROMQL_WORDS.contains(&word) || word.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        match known.get_key_value(word) {
            Some((name, _)) => used.push(name),
            None => out.push(format!("`{word}` is not a metric any exporter here sets")),
        }
    }
    let labels_of_used: BTreeSet<&str> =
        used.iter().flat_map(|m| known[m].iter().copied()).collect();
    for caps in grouping.captures_iter(&bare) {
        for label in caps[2].split(',').map(str::trim).filter(|l| !l.is_empty()) {
            if !labels_of_used.contains(label) {
                out.push(format!(
                    "`{}` groups by `{label}`, which none of {used:?} carries",
                    &caps[1]
                ));
            }
        }
    }
    for caps in selector.captures_iter(expr) {
        let metric = caps[1].to_string();
        let labels = labels_of(&metric);
        for m in matcher.captures_iter(&caps[2]) {
            let (label, op, value) = (&m[1], &m[2], &m[3]);
            if !labels.contains(&label) {
                out.push(format!("{metric} has no label `{label}`"));
                continue;
            }
            let exact = |set: &BTreeSet<String>, what: &str, out: &mut Vec<String>| {
                let values: Vec<&str> = if op == "=~" {
                    value.split('|').collect()
                } else {
                    vec![value]
                };
                for v in values {
                    if !set.contains(v) {
                        out.push(format!("{metric}{{{label}}} names {what} `{v}`, which no example defines ({set:?})"));
                    }
                }
            };
            match (metric.as_str(), label) {
                (_, "policy_name") => exact(&names.policies, "the policy", &mut out),
                (m, "name") if m.starts_with("apiserver_admission_webhook") => {
                    exact(&names.webhooks, "the webhook", &mut out)
                }
                (_, "owner_name") => exact(&names.cronjobs, "the CronJob", &mut out),
                (m, "cronjob") if m.starts_with("kube_cronjob_") => {
                    exact(&names.cronjobs, "the CronJob", &mut out)
                }
                (_, "resource_request_operation") if !["DELETE", "CREATE"].contains(&value) => out
                    .push(format!(
                        "the policies see DELETE and CREATE only, not `{value}`"
                    )),
                (_, "accepted" | "mutated" | "condition")
                    if !["true", "false"].contains(&value) =>
                {
                    out.push(format!("`{label}` is \"true\" or \"false\", not `{value}`"))
                }
                _ => {}
            }
        }
    }
    out
}

fn alert_rules() -> Vec<Value> {
    let document = yaml_file(RULES);
    assert_eq!(document["kind"], "PrometheusRule");
    seq_at(&document, "/spec/groups", RULES)
        .iter()
        .flat_map(|group| seq_at(group, "/rules", RULES).clone())
        .collect()
}

#[test]
fn every_alert_reads_metrics_labels_and_names_that_exist() {
    let names = example_names();
    assert!(
        names.policies.contains("clusterwide-capi-template-guard"),
        "{:?}",
        names.policies
    );
    for rule in alert_rules() {
        let alert = str_at(&rule, "/alert", RULES);
        let found = problems(str_at(&rule, "/expr", alert), &names);
        assert!(
            found.is_empty(),
            "{RULES} alert {alert}: {}",
            found.join("; ")
        );
    }
}

/// The four signals of docs/operations.md, each with its alert.
#[test]
fn the_alerts_cover_refusals_failures_the_policy_server_and_the_clean_up() {
    let exprs: Vec<String> = alert_rules()
        .iter()
        .map(|r| str_at(r, "/expr", RULES).to_string())
        .collect();
    for (signal, needle) in [
        ("refusing for long", "error_code=\"409\""),
        ("evaluations failing", "error_code=\"500\""),
        ("webhook timing out", "calling_webhook_error"),
        (
            "policy server down",
            "kube_deployment_status_replicas_available",
        ),
        (
            "clean-up's latest pass failed",
            "kube_cronjob_status_last_successful_time",
        ),
    ] {
        assert!(
            exprs.iter().any(|e| e.contains(needle)),
            "no alert for {signal} ({needle})"
        );
    }
    let operations = read("docs/operations.md");
    for rule in alert_rules() {
        let alert = str_at(&rule, "/alert", RULES);
        assert!(
            operations.contains(alert),
            "docs/operations.md does not explain {alert}"
        );
    }
}

/// The check catches what a copied alert would get wrong.
#[rstest]
#[case::old_label_name(
    r#"kubewarden_policy_evaluations_total{request_operation="DELETE"}"#,
    "no label `request_operation`"
)]
#[case::policy_name_without_prefix(
    r#"kubewarden_policy_evaluations_total{policy_name="capi-template-guard"}"#,
    "no example defines"
)]
#[case::made_up_metric(r#"kubewarden_policy_rejections_total"#, "not a metric")]
#[case::grouping_by_missing_label(
    r#"sum by (template) (kubewarden_policy_evaluations_total)"#,
    "`by` groups by `template`"
)]
#[case::le_only_on_buckets(
    r#"sum by (le) (kubewarden_policy_evaluations_total)"#,
    "`by` groups by `le`"
)]
#[case::webhook_name(
    r#"apiserver_admission_webhook_rejection_count{name="capi-template-guard"}"#,
    "the webhook"
)]
#[case::cronjob_name(r#"kube_job_owner{owner_name="template-gc"}"#, "the CronJob")]
#[case::cronjob_label(
    r#"kube_cronjob_status_last_successful_time{cronjob="template-gc"}"#,
    "the CronJob"
)]
#[case::operation_value(
    r#"kubewarden_policy_evaluations_total{resource_request_operation="delete"}"#,
    "DELETE and CREATE"
)]
fn the_check_refuses_wrong_selectors(#[case] expr: &str, #[case] expected: &str) {
    let found = problems(expr, &example_names());
    assert!(
        found.iter().any(|p| p.contains(expected)),
        "{expr}: expected `{expected}` among {found:?}"
    );
}

/// The clean-up's alert fires while its latest pass failed and stops once a later pass succeeds.
/// A failed Job object outlives later successful passes (failedJobsHistoryLimit,
/// ttlSecondsAfterFinished), so an expression on Job failures (kube-state-metrics `kube_job_failed`,
/// `kube_job_status_failed`) keeps firing after the clean-up has recovered; the CronJob's last
/// successful time, compared with its last schedule, does not.
#[test]
fn the_clean_up_alert_follows_the_latest_pass() {
    let rules = alert_rules();
    let rule = rules
        .iter()
        .find(|r| str_at(r, "/alert", RULES) == "CapiTemplateCleanupFailing")
        .expect("examples/prometheus-rule.yaml has CapiTemplateCleanupFailing");
    let expr = str_at(rule, "/expr", RULES);
    for per_job in ["kube_job_failed", "kube_job_status_failed"] {
        assert!(
            !expr.contains(per_job),
            "CapiTemplateCleanupFailing reads {per_job}, which lasts as long as the failed Job object"
        );
    }
    for needed in [
        "kube_cronjob_status_last_schedule_time",
        "kube_cronjob_status_last_successful_time",
    ] {
        assert!(
            expr.contains(needed),
            "CapiTemplateCleanupFailing must read {needed}"
        );
    }
    // a Job still running is not a failure: `for` outlasts the Job's activeDeadlineSeconds
    let deadline = super::cleanup::object("CronJob")
        .pointer("/spec/jobTemplate/spec/activeDeadlineSeconds")
        .and_then(Value::as_u64)
        .expect("the CronJob sets activeDeadlineSeconds");
    let wait = str_at(rule, "/for", RULES);
    let minutes: u64 = wait
        .strip_suffix('m')
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("CapiTemplateCleanupFailing: `for: {wait}` is not in minutes"));
    assert!(
        minutes * 60 > deadline,
        "CapiTemplateCleanupFailing fires after {wait}, before a running Job's deadline of {deadline}s"
    );
}

/// Every alert the docs name is one examples/prometheus-rule.yaml defines.
#[test]
fn the_docs_name_the_alerts_the_rule_defines() {
    let defined: BTreeSet<String> = alert_rules()
        .iter()
        .map(|r| str_at(r, "/alert", RULES).to_string())
        .collect();
    let name = Regex::new(r"CapiTemplate[A-Za-z]+").expect("a regex");
    for doc in ["docs/cleanup.md", "docs/operations.md"] {
        for found in name.find_iter(&read(doc)) {
            assert!(
                defined.contains(found.as_str()),
                "{doc} names the alert {}, which {RULES} does not define ({defined:?})",
                found.as_str()
            );
        }
    }
}
