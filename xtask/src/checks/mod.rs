//! The repository's consistency checks that read its docs and examples: what the library crates
//! hold (the guard's refusal, template-cleanup's pre-flight checks and sources table) against what
//! the repository says of it. They live here so that no library crate reads a file outside
//! itself. Each check asserts as a test does; `cargo xtask check` runs them all and names each that
//! fails.

mod cleanup;
mod refusal;

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// A check: what it proves, and the check.
type Check = (&'static str, fn(&Path));

/// Every check.
const CHECKS: &[Check] = &[
    (
        "the docs quote the refusal as the guard writes it",
        refusal::the_docs_quote_the_refusal_as_written,
    ),
    (
        "docs/cleanup.md lists every pre-flight check",
        cleanup::the_docs_list_every_check,
    ),
    (
        "the shipped policies carry the clean-up's condition",
        cleanup::the_shipped_policies_carry_the_cleanups_condition,
    ),
    (
        "the clean-up's ClusterRole grants the sources read in every pass and no other",
        cleanup::the_jobs_cluster_role_grants_the_sources_read_in_every_pass_and_no_other,
    ),
    (
        "the Helm component adds rules and passes the flag",
        cleanup::the_helm_component_adds_rules_and_passes_the_flag,
    ),
    (
        "the standalone kustomization offers the Helm component in one line",
        cleanup::the_standalone_kustomization_offers_the_helm_component_in_one_line,
    ),
    (
        "docs/cleanup.md's RBAC table has a row per source",
        cleanup::the_docs_rbac_table_has_a_row_per_source,
    ),
];

/// The failed checks, each with why (the panic hook has printed where).
pub fn run(root: &Path) -> Vec<String> {
    CHECKS
        .iter()
        .filter_map(|(what, check)| {
            let payload = std::panic::catch_unwind(|| check(root)).err()?;
            let why = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Some(format!("check failed: {what}: {why}"))
        })
        .collect()
}

/// The repository's file at `path`.
fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every YAML document of `text` (from `path`), as JSON.
fn documents(path: &str, text: &str) -> Vec<Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}
