//! What promtool cannot see in examples/monitoring/prometheus-rule.yaml (tests/alerts/ runs promtool on it):
//! the policy, webhook and CronJob names it selects are those the other examples give, the
//! template-cleanup alert waits longer than the CronJob's deadline, and each alert's runbook is a
//! section of docs/operations.md.

use super::*;
use regex::Regex;

const RULES: &str = "examples/monitoring/prometheus-rule.yaml";
/// Sylva's missing-input alerts, and the one its telemetry component adds (docs/operations.md,
/// "Sylva").
const SYLVA_RULES: [&str; 2] = [
    "examples/sylva/monitoring/prometheus-rule.yaml",
    "examples/sylva/monitoring/telemetry/prometheus-rule.yaml",
];
const RUNBOOKS: &str = "docs/operations.md";

/// The names the other examples give: `clusterwide-<policy>`, its webhook, and the CronJob of
/// template-cleanup.
#[derive(Default)]
struct Names {
    policies: BTreeSet<String>,
    webhooks: BTreeSet<String>,
    cronjobs: BTreeSet<String>,
}

/// The names of everything the examples install, as kustomize builds them with every component
/// (template-cleanup's guard exists only there: a patch renames the main guard); None without
/// kubectl.
fn example_names() -> Option<Names> {
    let mut names = Names::default();
    for doc in super::placement::build_everything()? {
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
    Some(names)
}

/// The alerting rules of one file, without the recording rule of the placement.
fn alert_rules_of(file: &str) -> Vec<Value> {
    let document = yaml_file(file);
    assert_eq!(document["kind"], "PrometheusRule", "{file}");
    seq_at(&document, "/spec/groups", file)
        .iter()
        .flat_map(|group| seq_at(group, "/rules", file).clone())
        .filter(|rule| rule.get("record").is_none())
        .collect()
}

/// The alerting rules of examples/monitoring.
fn alert_rules() -> Vec<Value> {
    alert_rules_of(RULES)
}

/// The values an expression selects for a label, `=~` alternatives split.
fn selected(expr: &str, label: &str) -> Vec<String> {
    let matcher = Regex::new(&format!(r#"[{{,]\s*{label}\s*=~?\s*"([^"]*)""#)).expect("a regex");
    matcher
        .captures_iter(expr)
        .flat_map(|caps| caps[1].split('|').map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// A policy is renamed in its example, or an alert names one no example defines: either way the
/// alert would select nothing and stay silent.
#[test]
fn the_alerts_select_the_names_the_examples_give() {
    let Some(names) = example_names() else {
        return;
    };
    let mut used = BTreeSet::new();
    for rule in alert_rules() {
        let alert = str_at(&rule, "/alert", RULES);
        let expr = str_at(&rule, "/expr", alert);
        for (label, known, what) in [
            ("policy_name", &names.policies, "policy"),
            ("name", &names.webhooks, "webhook"),
            ("cronjob", &names.cronjobs, "CronJob"),
        ] {
            for value in selected(expr, label) {
                assert!(
                    known.contains(&value),
                    "{RULES} alert {alert} selects the {what} `{value}`, which no example under \
                     examples/ defines ({known:?})"
                );
                used.insert(value);
            }
        }
    }
    // every policy is watched, by its evaluations and by its webhook
    for policy in &names.policies {
        assert!(
            used.contains(policy),
            "no alert reads the evaluations of {policy}"
        );
    }
}

#[test]
fn the_name_check_reads_every_matcher() {
    let expr = r#"x{policy_name=~"a|b", name="c"} or y{cronjob="d",policy_name="e"}"#;
    assert_eq!(selected(expr, "policy_name"), ["a", "b", "e"]);
    assert_eq!(selected(expr, "name"), ["c"]);
    assert_eq!(selected(expr, "cronjob"), ["d"]);
}

/// A Job still running is not a failure (the expression leaves out a CronJob with an active Job),
/// and the alert fires while the failed Job and its log are still kept: `for`, with a scrape and
/// an evaluation of slack (two minutes), is shorter than the Job's ttlSecondsAfterFinished.
#[test]
fn the_clean_up_alert_fires_while_the_failed_job_is_kept() {
    let rules = alert_rules();
    let rule = rules
        .iter()
        .find(|r| str_at(r, "/alert", RULES) == "CapiTemplateCleanupFailing")
        .expect("examples/monitoring/prometheus-rule.yaml has CapiTemplateCleanupFailing");
    assert!(
        str_at(rule, "/expr", RULES).contains("kube_cronjob_status_active"),
        "CapiTemplateCleanupFailing must leave out a pass still running"
    );
    let ttl = super::cleanup::object("CronJob")
        .pointer("/spec/jobTemplate/spec/ttlSecondsAfterFinished")
        .and_then(Value::as_u64)
        .expect("the CronJob sets ttlSecondsAfterFinished");
    let wait = str_at(rule, "/for", RULES);
    let minutes: u64 = wait
        .strip_suffix('m')
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("CapiTemplateCleanupFailing: `for: {wait}` is not in minutes"));
    assert!(
        minutes * 60 + 120 < ttl,
        "CapiTemplateCleanupFailing fires after {wait}, when the failed Job (kept {ttl}s) may be gone"
    );
}

/// Each alert's runbook_url is its section of docs/operations.md at the release's tag (the
/// release test checks the tag and that the anchor exists), and the docs name no other alert.
#[test]
fn every_alert_has_its_runbook_section() {
    let source = PolicyMetadata::load()
        .annotation(ANNOTATION_SOURCE)
        .trim_end_matches('/')
        .to_string();
    let version = PolicyMetadata::load().version().to_string();
    let docs = read(RUNBOOKS);
    let mut defined = BTreeSet::new();
    for file in std::iter::once(RULES).chain(SYLVA_RULES) {
        for rule in alert_rules_of(file) {
            let alert = str_at(&rule, "/alert", file).to_string();
            let expected = format!(
                "{source}/blob/v{version}/{RUNBOOKS}#{}",
                alert.to_lowercase()
            );
            assert_eq!(
                rule.pointer("/annotations/runbook_url")
                    .and_then(Value::as_str),
                Some(expected.as_str()),
                "{file} alert {alert}: runbook_url"
            );
            assert!(
                docs.lines().any(|line| line == format!("### {alert}")),
                "{RUNBOOKS} has no section `### {alert}` for the alert's runbook"
            );
            defined.insert(alert);
        }
    }
    let name = Regex::new(r"CapiTemplate[A-Za-z]+").expect("a regex");
    for doc in ["docs/cleanup.md", RUNBOOKS, "README.md"] {
        for found in name.find_iter(&read(doc)) {
            assert!(
                defined.contains(found.as_str()),
                "{doc} names the alert {}, which no rule file defines ({defined:?})",
                found.as_str()
            );
        }
    }
}
