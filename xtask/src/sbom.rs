//! The policy's SBOM lock (tests/release/policy-sbom/Cargo.lock, which syft reads in place of the
//! workspace lock, see .syft.yaml): the workspace lock's entries of exactly the packages
//! `cargo tree --target wasm32-wasip1 -e normal -p capi-template-guard` lists. `make sbom-test`
//! also runs syft on the checkout and compares its packages with cargo tree's
//! (tests/release/sbom_scan.rs).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::derived::Derived;
use crate::lockfile;

const PACKAGE: &str = "capi-template-guard";

/// The module's packages, as cargo tree lists them.
fn module_packages(root: &Path) -> Result<BTreeSet<(String, String)>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .current_dir(root)
        .args([
            "tree",
            "--locked",
            "--target",
            "wasm32-wasip1",
            "-e",
            "normal",
        ])
        .args(["-p", PACKAGE, "--prefix", "none"])
        .output()
        .map_err(|e| format!("cargo tree could not start: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let packages = lockfile::cargo_tree_packages(&tree);
    if !packages.iter().any(|(name, _)| name == PACKAGE) {
        return Err(format!("cargo tree did not list {PACKAGE}:\n{tree}"));
    }
    Ok(packages)
}

/// The lock, from Cargo.lock and cargo tree. The writers' signature has no error: cargo tree's
/// failure is the message xtask stops with.
pub fn files() -> Vec<Derived> {
    let root = crate::root();
    let keep = module_packages(&root).unwrap_or_else(|e| panic!("{e}"));
    let workspace = std::fs::read_to_string(root.join("Cargo.lock"))
        .unwrap_or_else(|e| panic!("Cargo.lock cannot be read: {e}"));
    vec![Derived::File {
        path: lockfile::POLICY_LOCK.into(),
        text: lockfile::policy_lock(&workspace, &keep),
    }]
}
