//! The `annotations` of artifacthub-pkg.yml: what `kwctl scaffold artifacthub` derives from
//! metadata.yml and questions-ui.yml (the rules, the contextAwareResources, `mutating`, the
//! resources annotation, the questions), serialised as kwctl serialises them. The rest of the file
//! (the install text above all, which the scaffold would drop) is written by hand. kwctl's rules:
//! crates/kwctl/src/scaffold/artifacthub.rs in kubewarden-controller v1.36.0-beta.1; on
//! 2026-12-07 `kwctl scaffold artifacthub -m metadata.yml -q questions-ui.yml` of that release
//! wrote these annotations exactly.
//!
//! Written after the manifests family, from metadata.yml as that family leaves it, so that one
//! `cargo xtask gen` carries a new provider from the table to Artifact Hub.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::derived::Derived;

/// A rule as kwctl writes it (policy-evaluator's `Rule`: this field order).
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
}

/// A context-aware resource as kwctl writes it.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ContextAwareResource {
    api_version: String,
    kind: String,
}

/// What the annotations are derived from, in metadata.yml.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    rules: Vec<Rule>,
    mutating: bool,
    #[serde(default)]
    context_aware_resources: Vec<ContextAwareResource>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

fn yaml<T: Serialize>(value: &T) -> String {
    yaml_serde::to_string(value).expect("plain data serialises to YAML")
}

pub fn files() -> Vec<Derived> {
    let root = crate::root();
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let metadata: Metadata =
        yaml_serde::from_str(&read("metadata.yml")).unwrap_or_else(|e| panic!("metadata.yml: {e}"));
    let mut annotations = BTreeMap::new();
    annotations.insert("kubewarden/rules", yaml(&metadata.rules));
    annotations.insert("kubewarden/mutation", metadata.mutating.to_string());
    if !metadata.context_aware_resources.is_empty() {
        annotations.insert(
            "kubewarden/contextAwareResources",
            yaml(&metadata.context_aware_resources),
        );
    }
    if root.join("questions-ui.yml").exists() {
        annotations.insert("kubewarden/questions-ui", read("questions-ui.yml"));
    }
    for (from, to) in [
        ("io.artifacthub.resources", "kubewarden/resources"),
        ("io.kubewarden.hidden-ui", "kubewarden/hidden-ui"),
    ] {
        if let Some(value) = metadata.annotations.get(from) {
            annotations.insert(to, value.clone());
        }
    }
    let body = yaml(&BTreeMap::from([("annotations", annotations)]));
    vec![Derived::Part {
        path: "artifacthub-pkg.yml",
        name: "annotations",
        body,
    }]
}
