//! The alerts of examples/monitoring/prometheus-rule.yaml, checked and unit-tested by promtool.
//!
//! promtool reads plain rule files, not PrometheusRule objects, so the test writes the object's
//! `spec.groups` to `rules.yaml`, copies the unit tests of this folder (`*.yaml`, promtool's
//! `test rules` format) beside it, and runs `promtool check rules` and `promtool test rules`.
//! The missing-input alerts for Sylva (`SYLVA_RULES`) are written beside it the same way.
//! The unit tests feed each alert the traffic it is for (template-cleanup's one short burst per
//! hour, a deploy tool stuck for a day, a failed pass) and the normal traffic that must not fire it
//! (template-cleanup's hourly refusals of templates in use).
//!
//! `fixtures/` holds rules of kube-prometheus-stack (InfoInhibitor, KubeJobFailed), copied beside
//! the tests so that a test can load them next to ours (its `rule_files`) and show how the stack's
//! own alerts meet ours; their sources are cited in the fixture.
//!
//! Run by `make test` only (`make alert-tests`, which installs promtool first and passes it in
//! `PROMTOOL`): Cargo.toml declares this test binary with `test = false`, so that `cargo test
//! --workspace`, as Kubewarden's reusable workflow runs it on a machine without promtool, does
//! not run it. Without promtool it fails, saying how to install it.

#[path = "../common/mod.rs"]
mod common;
use common::{read_at, root, yaml_documents};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const RULES: &str = "examples/monitoring/prometheus-rule.yaml";

/// The missing-input alerts for Sylva (examples/sylva/monitoring and its telemetry component),
/// each written beside rules.yaml under the name tests/alerts/sylva.yaml loads it by.
const SYLVA_RULES: [(&str, &str); 2] = [
    (
        "examples/sylva/monitoring/prometheus-rule.yaml",
        "sylva-rules.yaml",
    ),
    (
        "examples/sylva/monitoring/telemetry/prometheus-rule.yaml",
        "sylva-telemetry-rules.yaml",
    ),
];

/// The one YAML document of the file at `path`.
fn yaml(path: &Path) -> Value {
    let name = path.display().to_string();
    let mut documents = yaml_documents(&name, &read_at(Path::new("/"), &name));
    assert_eq!(documents.len(), 1, "{name} holds one YAML document");
    documents.remove(0)
}

/// The YAML files of `dir` (under the repository), sorted.
fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let dir = root().join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The unit-test files of this folder, sorted.
fn unit_tests() -> Vec<PathBuf> {
    let files = yaml_files("tests/alerts");
    assert!(!files.is_empty(), "tests/alerts holds no unit tests");
    files
}

/// The PrometheusRule's groups as a plain rules file.
fn rule_groups() -> Value {
    groups_of(RULES)
}

/// The groups of the PrometheusRule at `path` (under the repository) as a plain rules file.
fn groups_of(path: &str) -> Value {
    let rule = yaml(&root().join(path));
    assert_eq!(rule["kind"], "PrometheusRule", "{path}");
    let groups = rule
        .pointer("/spec/groups")
        .unwrap_or_else(|| panic!("{path} has no spec.groups"));
    serde_json::json!({ "groups": groups })
}

/// The rule files of `fixtures/`, sorted.
fn fixtures() -> Vec<PathBuf> {
    yaml_files("tests/alerts/fixtures")
}

fn alert_names() -> BTreeSet<String> {
    let mut names = names_in(&rule_groups());
    for (path, _) in SYLVA_RULES {
        names.extend(names_in(&groups_of(path)));
    }
    names
}

fn names_in(groups: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for group in groups["groups"].as_array().into_iter().flatten() {
        for rule in group["rules"].as_array().into_iter().flatten() {
            if let Some(alert) = rule["alert"].as_str() {
                names.insert(alert.to_string());
            }
        }
    }
    names
}

fn promtool(dir: &Path, args: &[&str]) -> String {
    let program = std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".to_string());
    let output = Command::new(&program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "promtool cannot be run ({program}: {e}). Run `make alert-tests`, which installs it \
                 under target/tools/bin from Debian's prometheus package, or put promtool on PATH."
            )
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "promtool {} failed:\n{text}",
        args.join(" ")
    );
    text
}

#[test]
fn promtool_checks_the_rules_and_passes_every_unit_test() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("alerts");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let rules = yaml_serde::to_string(&rule_groups()).expect("JSON values serialize as YAML");
    fs::write(dir.join("rules.yaml"), rules).expect("rules.yaml is written");
    let mut names = Vec::new();
    for file in unit_tests() {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 file name")
            .to_string();
        fs::copy(&file, dir.join(&name)).expect("the unit test is copied");
        names.push(name);
    }
    for fixture in fixtures() {
        let name = fixture.file_name().expect("a file name");
        fs::copy(&fixture, dir.join(name)).expect("the fixture is copied");
        let name = name.to_str().expect("a UTF-8 file name").to_string();
        print!("{}", promtool(&dir, &["check", "rules", &name]));
    }
    print!("{}", promtool(&dir, &["check", "rules", "rules.yaml"]));
    for (path, name) in SYLVA_RULES {
        let rules = yaml_serde::to_string(&groups_of(path)).expect("JSON values serialize as YAML");
        fs::write(dir.join(name), rules).expect("the Sylva rules are written");
        print!("{}", promtool(&dir, &["check", "rules", name]));
    }
    let mut args = vec!["test", "rules"];
    args.extend(names.iter().map(String::as_str));
    print!("{}", promtool(&dir, &args));
}

/// Each alert has a case in which it fires, so none is proven only by never firing.
#[test]
fn every_alert_fires_in_some_unit_test() {
    let mut fired = BTreeSet::new();
    for file in unit_tests() {
        let tests = yaml(&file);
        for case in tests["tests"].as_array().into_iter().flatten() {
            for check in case["alert_rule_test"].as_array().into_iter().flatten() {
                let fires = check["exp_alerts"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty());
                if let (true, Some(name)) = (fires, check["alertname"].as_str()) {
                    fired.insert(name.to_string());
                }
            }
        }
    }
    let missing: Vec<_> = alert_names().difference(&fired).cloned().collect();
    assert!(
        missing.is_empty(),
        "no unit test in tests/alerts/ expects these alerts to fire: {missing:?}"
    );
    let mut known = alert_names();
    for fixture in fixtures() {
        known.extend(names_in(&yaml(&fixture)));
    }
    let unknown: Vec<_> = fired.difference(&known).cloned().collect();
    assert!(
        unknown.is_empty(),
        "tests/alerts/ expects alerts that neither {RULES} nor fixtures/ define: {unknown:?}"
    );
}
