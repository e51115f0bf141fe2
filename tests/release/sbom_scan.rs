//! The policy's SBOM against what the module links: syft scans the checkout as Kubewarden's
//! reusable release workflow scans it (kubewarden/github-actions v7.0.1,
//! policy-build-rust/action.yml: `syft scan --output spdx-json=... --source-name ...
//! --source-version ... -vv dir:.`, from the root, which reads .syft.yaml), and the Rust packages
//! of the SBOM must be exactly those of `cargo tree --target wasm32-wasip1 -e normal -p
//! capi-template-guard`, with no package of any other kind beside them.
//!
//! Run by `make sbom-test` only, with the syft that `make setup` installs (`SYFT=path`): Cargo.toml
//! declares this binary `test = false`. The lock syft reads, tests/release/policy-sbom/Cargo.lock,
//! is written from cargo tree by `make sbom-lock` (`cargo xtask gen sbom-lock`, xtask/src/sbom.rs)
//! and checked by `cargo xtask check`.

#[path = "../../xtask/src/lockfile.rs"]
mod lockfile;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = "capi-template-guard";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(command: &mut Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what} could not start: {e}."));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap_or_else(|e| panic!("{what} printed no UTF-8: {e}."))
}

/// The module's packages, as cargo tree lists them.
fn module_packages(root: &Path) -> BTreeSet<(String, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let tree = run(
        Command::new(cargo).current_dir(root).args([
            "tree",
            "--locked",
            "--target",
            "wasm32-wasip1",
            "-e",
            "normal",
            "-p",
            PACKAGE,
            "--prefix",
            "none",
        ]),
        "cargo tree",
    );
    let packages = lockfile::cargo_tree_packages(&tree);
    assert!(
        packages.iter().any(|(name, _)| name == PACKAGE),
        "cargo tree did not list {PACKAGE}:\n{tree}"
    );
    packages
}

/// The SPDX packages as (purl type, name, version), the document's own root left out.
fn spdx_packages(sbom: &Value) -> Vec<(String, String, String)> {
    sbom["packages"]
        .as_array()
        .expect("the SBOM has a packages list")
        .iter()
        .filter(|p| {
            !p["SPDXID"]
                .as_str()
                .unwrap_or_default()
                .starts_with("SPDXRef-DocumentRoot")
        })
        .map(|p| {
            let purl = p["externalRefs"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["referenceType"] == "purl")
                .and_then(|r| r["referenceLocator"].as_str())
                .unwrap_or_default();
            let kind = purl
                .strip_prefix("pkg:")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or("(no purl)");
            let field = |key: &str| p[key].as_str().unwrap_or_default().to_string();
            (kind.to_string(), field("name"), field("versionInfo"))
        })
        .collect()
}

#[test]
fn syft_lists_the_modules_packages_and_nothing_else() {
    let syft = std::env::var("SYFT").unwrap_or_else(|_| {
        panic!("SYFT is not set: run `make sbom-test`, which installs syft and sets it.")
    });
    let root = repo();
    let out = root.join("target/sbom-test.spdx.json");
    let output = format!("spdx-json={}", out.display());
    // The workflow's command; the source name is what its yq expression makes of metadata.yml.
    run(
        Command::new(&syft).current_dir(&root).args([
            "scan",
            "--output",
            &output,
            "--source-name",
            "capi-template-guard-sbom-test",
            "--source-version",
            "sbom-test",
            "-vv",
            "dir:.",
        ]),
        "syft scan",
    );
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("syft wrote no {}: {e}.", out.display()));
    let sbom: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("the SBOM is not JSON: {e}."));
    let packages = spdx_packages(&sbom);
    let rust: BTreeSet<(String, String)> = packages
        .iter()
        .filter(|(kind, _, _)| kind == "cargo")
        .map(|(_, name, version)| (name.clone(), version.clone()))
        .collect();
    let others: Vec<_> = packages
        .iter()
        .filter(|(kind, _, _)| kind != "cargo")
        .collect();
    let module = module_packages(&root);
    println!(
        "syft lists {} packages, {} of them Rust crates; cargo tree lists {} in the module.",
        packages.len(),
        rust.len(),
        module.len()
    );
    let missing: Vec<_> = module.difference(&rust).collect();
    let extra: Vec<_> = rust.difference(&module).collect();
    assert!(
        missing.is_empty() && extra.is_empty() && others.is_empty(),
        "The SBOM is not the module's packages.\nIn the module, not in the SBOM: {missing:?}\n\
         In the SBOM, not in the module: {extra:?}\nOther packages in the SBOM: {others:?}"
    );
}
