//! Cargo.lock read as text (no TOML parser among the dev-dependencies), and the policy's SBOM lock
//! written from it: the workspace lock's entries of the packages `cargo tree --target wasm32-wasip1
//! -e normal -p capi-template-guard` lists, with their dependency lists cut to those packages
//! (.syft.yaml says why syft reads that file instead of the workspace lock).
//!
//! Shared by the `release` tests (each entry is the workspace lock's own) and the `sbom` test
//! binary (`make sbom-test`, `make sbom-lock`), which include this file by its path.
#![allow(dead_code)] // each test binary uses part of it

use std::collections::BTreeSet;

/// Where the policy's SBOM lock lives, relative to the repository root.
pub const POLICY_LOCK: &str = "tests/release/policy-sbom/Cargo.lock";

const HEADER: &str = "\
# The packages policy.wasm is built from, for its SBOM: the entries of the workspace's Cargo.lock of
# exactly what `cargo tree --target wasm32-wasip1 -e normal -p capi-template-guard` lists. syft
# reads this file in place of the workspace lock (.syft.yaml says why). Cargo never reads it.
# Written by `make sbom-lock`; `make sbom-test` and `cargo test --test release` check it.
version = 4
";

/// One `[[package]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// Every line of the entry but the dependency list, in order.
    pub fields: Vec<String>,
    /// The dependency list's items, unquoted: `name`, `name version` or `name version (source)`.
    pub dependencies: Vec<String>,
}

impl Package {
    pub fn key(&self) -> (String, String) {
        (self.name.clone(), self.version.clone())
    }
}

fn quoted(line: &str, key: &str) -> Option<String> {
    let value = line
        .strip_prefix(key)?
        .trim_start()
        .strip_prefix('=')?
        .trim();
    Some(value.strip_prefix('"')?.strip_suffix('"')?.to_string())
}

/// The `[[package]]` entries of a Cargo.lock, in order.
pub fn packages(lock: &str) -> Vec<Package> {
    lock.split("[[package]]\n")
        .skip(1)
        .map(|entry| {
            let mut package = Package {
                name: String::new(),
                version: String::new(),
                fields: Vec::new(),
                dependencies: Vec::new(),
            };
            let mut in_dependencies = false;
            for line in entry.lines().filter(|line| !line.trim().is_empty()) {
                if in_dependencies {
                    match line.trim() {
                        "]" => in_dependencies = false,
                        item => package
                            .dependencies
                            .push(item.trim_end_matches(',').trim_matches('"').to_string()),
                    }
                } else if line == "dependencies = [" {
                    in_dependencies = true;
                } else {
                    if let Some(name) = quoted(line, "name") {
                        package.name = name;
                    } else if let Some(version) = quoted(line, "version") {
                        package.version = version;
                    }
                    package.fields.push(line.to_string());
                }
            }
            package
        })
        .collect()
}

/// The (name, version) pairs of `cargo tree --prefix none` output: `name vX.Y.Z [(...)]...`.
pub fn cargo_tree_packages(output: &str) -> BTreeSet<(String, String)> {
    output
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let version = words.next()?.strip_prefix('v')?;
            Some((name.to_string(), version.to_string()))
        })
        .collect()
}

/// Whether a dependency item (`name`, `name version`, `name version (source)`) names a kept package.
fn dependency_kept(item: &str, keep: &BTreeSet<(String, String)>) -> bool {
    let mut words = item.split_whitespace();
    let name = words.next().unwrap_or_default();
    match words.next() {
        Some(version) => keep.contains(&(name.to_string(), version.to_string())),
        None => keep.iter().any(|(kept, _)| kept == name),
    }
}

/// The policy's SBOM lock: the entries of `workspace` whose (name, version) is in `keep`.
pub fn policy_lock(workspace: &str, keep: &BTreeSet<(String, String)>) -> String {
    let mut out = String::from(HEADER);
    for package in packages(workspace) {
        if !keep.contains(&package.key()) {
            continue;
        }
        out.push_str("\n[[package]]\n");
        for field in &package.fields {
            out.push_str(field);
            out.push('\n');
        }
        let dependencies: Vec<&String> = package
            .dependencies
            .iter()
            .filter(|item| dependency_kept(item, keep))
            .collect();
        if !dependencies.is_empty() {
            out.push_str("dependencies = [\n");
            for item in dependencies {
                out.push_str(&format!(" \"{item}\",\n"));
            }
            out.push_str("]\n");
        }
    }
    out
}
