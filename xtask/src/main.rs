//! The repository's own tool, as Kubewarden's policy-metadata-helper and kube-rs controller-rs's
//! crdgen are theirs: every derived file has one writer here, and the repository's consistency
//! checks that read its files (docs, examples) live here rather than in the library crates.
//!
//! ```console
//! cargo xtask gen [FAMILY...]     # rewrites the stale derived files (make manifests, make cases)
//! cargo xtask check [FAMILY...]   # names each stale file and each failed check; exits 1 if any
//! ```
//!
//! The families: `manifests` (the generated parts of metadata.yml and examples/), `artifacthub`
//! (the annotations of artifacthub-pkg.yml, from metadata.yml and questions-ui.yml), `catalogue`
//! (test_data/catalogue.json), `cases` (the requests, settings and sessions of test_data/ that
//! e2e.bats replays, xtask/src/cases/), `sbom-lock` (the policy's SBOM lock, from Cargo.lock and
//! cargo tree); with no family every one, and `check` then runs the consistency checks too
//! (xtask/src/checks/: the docs' quotes of the refusal, the docs' list of pre-flight checks, the
//! clean-up's RBAC against its sources table). `cargo test -p xtask` runs `check` too,
//! so that `cargo test --workspace` fails while a file is stale.

mod artifacthub;
mod cases;
mod catalogue;
mod checks;
mod derived;
mod lockfile;
mod manifests;
mod rules;
mod sbom;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use derived::Derived;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the repository")
        .to_path_buf()
}

/// A family of derived files: its name, and its writer.
type Family = (&'static str, fn() -> Vec<Derived>);

/// Every family of derived files.
const FAMILIES: &[Family] = &[
    ("manifests", manifests::parts),
    // After the manifests: written from metadata.yml as they leave it.
    ("artifacthub", artifacthub::files),
    ("catalogue", || vec![catalogue::file()]),
    ("cases", cases::files),
    ("sbom-lock", sbom::files),
];

/// The families `names` picks (none: all), or the unknown name.
fn families(names: &[String]) -> Result<Vec<Family>, String> {
    if names.is_empty() {
        return Ok(FAMILIES.to_vec());
    }
    names
        .iter()
        .map(|name| {
            FAMILIES
                .iter()
                .find(|(n, _)| n == name)
                .copied()
                .ok_or_else(|| {
                    let known: Vec<&str> = FAMILIES.iter().map(|(n, _)| *n).collect();
                    format!("no family {name:?}; the families: {}", known.join(", "))
                })
        })
        .collect()
}

/// The stale files of `names`' families; with `write`, rewritten.
fn freshen(root: &Path, names: &[String], write: bool) -> Result<Vec<String>, String> {
    let mut stale = Vec::new();
    for (_, writer) in families(names)? {
        let (found, texts) = derived::freshen(root, writer())?;
        if write {
            for (path, text) in &texts {
                let file = root.join(path);
                if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                    if let Some(dir) = file.parent() {
                        std::fs::create_dir_all(dir).map_err(|e| format!("{path}: {e}"))?;
                    }
                    std::fs::write(&file, text).map_err(|e| format!("{path}: {e}"))?;
                }
            }
        }
        stale.extend(found);
    }
    Ok(stale)
}

/// Every problem `check` finds: stale files, then, when no family is named, failed consistency
/// checks (xtask/src/checks/).
fn problems(root: &Path, names: &[String]) -> Result<Vec<String>, String> {
    let stale = freshen(root, names, false)?;
    let mut found: Vec<String> = stale
        .into_iter()
        .map(|file| format!("{file} is stale: run `cargo xtask gen` and commit the result"))
        .collect();
    if names.is_empty() {
        found.extend(checks::run(root));
    }
    Ok(found)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = root();
    let usage = "usage: cargo xtask gen|check [FAMILY...]";
    match args.split_first() {
        Some((command, names)) if command == "gen" => match freshen(&root, names, true) {
            Ok(written) => {
                for file in &written {
                    println!("wrote {file}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("xtask gen: {e}");
                ExitCode::FAILURE
            }
        },
        Some((command, names)) if command == "check" => match problems(&root, names) {
            Ok(found) if found.is_empty() => {
                println!("xtask check: every derived file is fresh and every check passes.");
                ExitCode::SUCCESS
            }
            Ok(found) => {
                for problem in &found {
                    eprintln!("{problem}");
                }
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("xtask check: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("{usage}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    /// `cargo test --workspace` fails while a derived file is stale or a check fails, as
    /// `cargo xtask check` does.
    #[test]
    fn the_repository_passes_the_check() {
        let found = super::problems(&super::root(), &[]).expect("the check runs");
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}
