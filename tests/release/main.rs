//! Release checks: what a tag publishes must match what the repository says.
//!
//! - Every place that names the policy's version agrees with Cargo.toml: Cargo.lock (CI builds
//!   with `--locked`), metadata.yml (the release compares it with the tag), artifacthub-pkg.yml,
//!   every tagged reference to the published module and every release download link in the
//!   README, CONTRIBUTING.md, docs/, the examples and the other packaging files (tag-pinned raw
//!   file URLs and kustomize remote targets too), and the examples' `spec.module`.
//! - `scripts/bump-version.sh` (`make bump VERSION=x.y.z`) moves all of those places at once, and
//!   its dry run writes nothing.
//! - Every relative link and #anchor in README.md, CONTRIBUTING.md, docs/*.md and examples/ leads
//!   to a file that exists, and to a heading that exists when it names one.
//! - No text file of the repository is longer than 800 lines.
//! - The GitHub workflows pin every action by commit, run the e2e tests with a kwctl that e2e.bats
//!   has passed with, and run the release's jobs in order (`workflows.rs`).
//! - The SBOM's scan reads the policy's lock, made of the workspace lock's own entries (`sbom.rs`;
//!   `make sbom-test` compares it with cargo tree and runs syft).
//!
//! Run with `cargo test --test release`. This file holds what the checks share (reading files,
//! the lists of files); each concern is a module beside it.

#[path = "../common/mod.rs"]
mod common;

mod bump;
mod lengths;
mod links;
mod sbom;
mod versions;
mod workflows;

use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use common::{read_at, root, yaml_documents};

const PACKAGE: &str = "capi-template-guard";

fn yaml_file(root: &Path, relative: &str) -> Value {
    yaml_documents(relative, &read_at(root, relative))
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{relative} is empty"))
}

/// The YAML manifests under examples/ (subdirectories too), as paths relative to the root, sorted.
fn example_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, relative: &str, out: &mut Vec<String>) {
        let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {relative}/: {e}"));
        for entry in entries {
            let entry = entry.expect("unreadable directory entry");
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let path = format!("{relative}/{name}");
            if entry.path().is_dir() {
                walk(&entry.path(), &path, out);
            } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root.join("examples"), "examples", &mut files);
    files.sort();
    files
}

/// CONTRIBUTING.md and docs/*.md: the documentation beside the README.
fn documentation_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(root.join("docs"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|name| name.ends_with(".md"))
                .map(|name| format!("docs/{name}"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    if root.join("CONTRIBUTING.md").exists() {
        files.insert(0, "CONTRIBUTING.md".to_string());
    }
    files
}

/// Every file of the repository (target/ and .git/ left out), relative to the root.
fn repository_files(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    walk(root, &path, out);
                }
            } else if let Ok(relative) = path.strip_prefix(root) {
                out.insert(relative.display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}
