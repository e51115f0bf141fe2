//! One OpenReports `Report` per namespace, where the CRDs are installed: the pass's verdicts on
//! the namespace's templates, which Policy Reporter and `kubectl get reports` show (docs/cleanup.md,
//! "OpenReports"). The fields are those of openreports/reports-api v0.2.1,
//! `apis/openreports.io/v1alpha1/report_types.go` (the version the kubewarden-crds chart 1.23.0
//! installs): `source`, `summary` (pass, fail, warn, error, skip), `results[]` with `source`,
//! `policy`, `rule`, `result`, `timestamp` (seconds and nanos), `resources` (object references)
//! and `message`, and `configuration.limits.maxResults`.

use std::collections::BTreeMap;

use kube::api::ApiResource;
use serde_json::{Value, json};
use template_cleanup_core::answer::TemplateOutcome;
use template_cleanup_core::preflight::Served;

use crate::api::Cluster;
use crate::events;
use crate::report::{Report, ReportCounts, TemplateLine};

pub const GROUP: &str = "openreports.io";
const VERSION: &str = "v1alpha1";
/// The name of every Report the job writes, one per namespace.
pub const NAME: &str = "template-cleanup";
/// Results kept in one Report, the most telling first (`configuration.limits.maxResults`): a
/// namespace of thousands of templates stays far below etcd's object size limit.
pub const MAX_RESULTS: usize = 500;

pub fn resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "Report".into(),
        plural: "reports".into(),
    }
}

/// Whether discovery found `reports.openreports.io` at v1alpha1.
pub fn installed(served: &[Served]) -> bool {
    served
        .iter()
        .any(|s| s.kind.group == GROUP && s.kind.version == VERSION && s.kind.plural == "reports")
}

/// The `result` of a verdict (report_types.go, `Result`): `pass`, "the policy requirements are
/// met": the retired template is gone or going; `warn`, "not met and the policy is not scored":
/// kept, still in use, which is the guard doing its work and needs no action unless it lasts;
/// `skip`, "not selected based on user inputs or applicability": no DELETE was judged (left,
/// changed since it was listed, not tried); `error`, "could not be evaluated": the DELETE failed
/// otherwise than by the guard's refusal. No verdict is `fail`: the job never finds a template
/// that breaks a rule, only templates it may or may not delete yet.
pub fn result(outcome: &TemplateOutcome) -> &'static str {
    match outcome {
        TemplateOutcome::Deleted | TemplateOutcome::DeletionStarted | TemplateOutcome::Gone => {
            "pass"
        }
        TemplateOutcome::KeptByGuard(_) | TemplateOutcome::KeptByDecision(_) => "warn",
        TemplateOutcome::Left(_) | TemplateOutcome::Changed(_) | TemplateOutcome::NotTried => {
            "skip"
        }
        TemplateOutcome::Failed(_) => "error",
    }
}

/// The Report of each namespace with a decided template, at `now`, and how many results were
/// left out over [`MAX_RESULTS`].
pub fn reports(
    lines: &[TemplateLine],
    policy: &str,
    min_age: i64,
    now: i64,
) -> (Vec<Value>, usize) {
    let mut by_namespace: BTreeMap<&str, Vec<(&TemplateLine, &TemplateOutcome)>> = BTreeMap::new();
    for line in lines {
        if let Some(outcome) = &line.outcome {
            by_namespace
                .entry(&line.namespace)
                .or_default()
                .push((line, outcome));
        }
    }
    let order = |r: &str| {
        ["error", "fail", "warn", "skip", "pass"]
            .iter()
            .position(|x| *x == r)
    };
    let mut left_out = 0;
    let reports = by_namespace
        .into_iter()
        .map(|(namespace, mut decided)| {
            let mut summary: BTreeMap<&str, usize> = ["pass", "fail", "warn", "error", "skip"]
                .map(|r| (r, 0))
                .into();
            for (_, outcome) in &decided {
                *summary.entry(result(outcome)).or_default() += 1;
            }
            decided.sort_by(|(a, x), (b, y)| {
                (order(result(x)), &a.resource, &a.name).cmp(&(
                    order(result(y)),
                    &b.resource,
                    &b.name,
                ))
            });
            left_out += decided.len().saturating_sub(MAX_RESULTS);
            let results: Vec<Value> = decided
                .iter()
                .take(MAX_RESULTS)
                .map(|(line, outcome)| {
                    let event = events::for_template(line, outcome, policy, min_age);
                    json!({
                        "source": NAME, "policy": policy, "rule": event.reason,
                        "result": result(outcome),
                        "timestamp": {"seconds": now, "nanos": 0},
                        "resources": [event.regarding],
                        "message": event.note,
                        "properties": {"verdict": line.verdict, "resource": line.resource},
                    })
                })
                .collect();
            json!({
                "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Report",
                "metadata": {"name": NAME, "namespace": namespace,
                    "labels": {"app.kubernetes.io/managed-by": NAME}},
                "source": NAME,
                "configuration": {"limits": {"maxResults": MAX_RESULTS}},
                "summary": summary,
                "results": results,
            })
        })
        .collect();
    (reports, left_out)
}

/// Writes this pass's Reports by server-side apply (field manager `template-cleanup`, forced):
/// created, or replaced whole, each pass. Where the CRD is not installed, or a write gets 404 (it
/// was removed since discovery), says so once and goes on; any other failure prints its first
/// once and is counted.
pub async fn write(
    cluster: &Cluster,
    installed: bool,
    lines: &[TemplateLine],
    policy: &str,
    min_age: i64,
    now: i64,
    report: &mut Report,
) {
    let mut counts = ReportCounts {
        installed,
        name: NAME,
        max_results: MAX_RESULTS,
        ..ReportCounts::default()
    };
    if installed {
        let (reports, left_out) = reports(lines, policy, min_age, now);
        counts.left_out = left_out;
        for object in &reports {
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
            match cluster.apply(&resource(), namespace, NAME, object).await {
                Ok(()) => counts.written += 1,
                Err(e) if e.code() == Some(404) => {
                    counts.installed = false;
                    break;
                }
                Err(e) => {
                    if counts.failed == 0 {
                        report.say(&format!(
                            "reports: cannot write the Report {namespace}/{NAME}: {e}; the pass goes on"
                        ));
                    }
                    counts.failed += 1;
                }
            }
        }
    }
    report.say(&counts.line());
    report.reports = Some(counts);
}
