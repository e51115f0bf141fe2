//! Packaging drift checks: the files that ship with the policy must agree with each other.
//!
//! - Cargo.toml, metadata.yml and artifacthub-pkg.yml carry the same version.
//! - artifacthub-pkg.yml holds what `kwctl scaffold artifacthub` derives from metadata.yml and
//!   questions-ui.yml.
//! - questions-ui.yml asks for exactly the settings of the README settings table.
//! - Every manifest under examples/ parses, and its ClusterAdmissionPolicies stay within the
//!   rules and contextAwareResources that metadata.yml declares.
//! - examples/rbac.yaml grants get, list and watch in every rule, on exactly the
//!   contextAwareResources.
//! - examples/kustomization.yaml installs RBAC and both policies; the optional PolicyServer
//!   component runs them on a server of their own.
//! - Every combination of the examples' components, built by kubectl kustomize, puts every
//!   policy on one PolicyServer whose account holds the read binding (placement.rs).
//! - template-cleanup (examples/cleanup/) may delete exactly the kinds the guard guards, runs the
//!   image the release builds for amd64 and arm64 and signs, locked down.
//! - The release workflow pushes to the OCI repository named in metadata.yml, and the release
//!   checklist makes public and verifies every artifact it publishes.
//! - The deploy-tool snippets keep and label the templates and nothing else (deploy_tools.rs),
//!   and the alerts select the names the other examples give and link their runbooks
//!   (alerts.rs; promtool proves what they fire on, in tests/alerts/).
//! - The contact is the issue tracker; no placeholder mailbox is named.
//! - The README stays short.
//!
//! Run with `cargo test --test packaging`. This file holds what the checks share (reading
//! files, metadata.yml, rules and resources); each concern is a module beside it.

#[path = "../common/mod.rs"]
mod common;

mod alerts;
mod artifacthub;
mod cleanup;
mod deploy_tools;
mod examples;
mod install_paths;
mod monitoring;
mod placement;
mod rbac;
mod readme;
mod release_workflow;
mod renovate;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use common::{read, root, yaml_documents};

const ANNOTATION_VERSION: &str = "io.kubewarden.policy.version";
const ANNOTATION_TITLE: &str = "io.kubewarden.policy.title";
const ANNOTATION_DESCRIPTION: &str = "io.kubewarden.policy.description";
const ANNOTATION_OCI_URL: &str = "io.kubewarden.policy.ociUrl";
const ANNOTATION_URL: &str = "io.kubewarden.policy.url";
const ANNOTATION_SOURCE: &str = "io.kubewarden.policy.source";
const ANNOTATION_LICENSE: &str = "io.kubewarden.policy.license";
const ANNOTATION_AUTHOR: &str = "io.kubewarden.policy.author";
const ANNOTATION_DISPLAY_NAME: &str = "io.artifacthub.displayName";
const ANNOTATION_KEYWORDS: &str = "io.artifacthub.keywords";

const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

// ---------------------------------------------------------------------------------------------
// Reading files

/// Whether kubectl (which brings kustomize) is on PATH. Every machine of this project has it
/// (Debian's image); in CI (`CI` set) its absence fails the test instead of skipping what needs
/// it, elsewhere the test says what it did not check.
fn kubectl_on_path(what_is_skipped: &str) -> bool {
    let found = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "kubectl is not on PATH in CI: {what_is_skipped} would not be checked"
        );
        eprintln!("kubectl is not on PATH: {what_is_skipped} not checked");
    }
    found
}

fn yaml_file(relative: &str) -> Value {
    let text = read(relative);
    let mut documents = yaml_documents(relative, &text);
    assert_eq!(
        documents.len(),
        1,
        "{relative} must hold exactly one YAML document"
    );
    documents.remove(0)
}

fn yaml_str(relative: &str, text: &str) -> Value {
    yaml_serde::from_str(text).unwrap_or_else(|e| panic!("{relative} does not parse as YAML: {e}"))
}

fn str_at<'a>(value: &'a Value, pointer: &str, what: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}: {pointer} is missing or not a string"))
}

fn seq_at<'a>(value: &'a Value, pointer: &str, what: &str) -> &'a Vec<Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{what}: {pointer} is missing or not a list"))
}

fn strings(value: &Value, what: &str) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what} must be a list of strings"))
        .iter()
        .map(|item| {
            item.as_str()
                .unwrap_or_else(|| panic!("{what} must hold only strings, found {item}"))
                .to_string()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// metadata.yml

struct PolicyMetadata {
    raw: Value,
    annotations: BTreeMap<String, String>,
}

impl PolicyMetadata {
    fn load() -> Self {
        let raw = yaml_file("metadata.yml");
        let annotations = raw
            .get("annotations")
            .and_then(Value::as_object)
            .expect("metadata.yml has no annotations mapping")
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), text)
            })
            .collect();
        PolicyMetadata { raw, annotations }
    }

    fn annotation(&self, key: &str) -> &str {
        self.annotations
            .get(key)
            .unwrap_or_else(|| panic!("metadata.yml has no annotation {key}"))
    }

    fn version(&self) -> &str {
        self.annotation(ANNOTATION_VERSION)
    }

    fn oci_reference(&self) -> String {
        format!(
            "{}:v{}",
            self.annotation(ANNOTATION_OCI_URL),
            self.version()
        )
    }

    fn mutating(&self) -> bool {
        self.raw
            .get("mutating")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn rules(&self) -> Vec<Rule> {
        seq_at(&self.raw, "/rules", "metadata.yml")
            .iter()
            .enumerate()
            .map(|(i, rule)| Rule::parse(rule, &format!("metadata.yml rules[{i}]")))
            .collect()
    }
}

/// One admission rule, with every list as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
}

impl Rule {
    fn parse(value: &Value, what: &str) -> Self {
        let field = |key: &str| {
            strings(
                value
                    .get(key)
                    .unwrap_or_else(|| panic!("{what} has no {key}")),
                &format!("{what}.{key}"),
            )
        };
        Rule {
            api_groups: field("apiGroups"),
            api_versions: field("apiVersions"),
            resources: field("resources"),
            operations: field("operations"),
        }
    }

    /// Every (group, version, resource, operation) the rule matches, as written.
    fn tuples(&self) -> Vec<(String, String, String, String)> {
        let mut out = Vec::new();
        for group in &self.api_groups {
            for version in &self.api_versions {
                for resource in &self.resources {
                    for operation in &self.operations {
                        out.push((
                            group.clone(),
                            version.clone(),
                            resource.clone(),
                            operation.clone(),
                        ));
                    }
                }
            }
        }
        out
    }

    fn covers(&self, group: &str, version: &str, resource: &str, operation: &str) -> bool {
        let has = |list: &[String], item: &str| list.iter().any(|x| x == "*" || x == item);
        has(&self.api_groups, group)
            && has(&self.api_versions, version)
            && has(&self.resources, resource)
            && has(&self.operations, operation)
    }
}
