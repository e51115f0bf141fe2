//! The policy's SBOM lock (tests/release/policy-sbom/Cargo.lock, which syft reads in place of the
//! workspace lock, see .syft.yaml) holds the workspace lock's own entries and nothing else, and
//! .syft.yaml keeps the workspace lock out of the scan. That the entries are exactly the module's
//! packages needs cargo tree, and that syft reads them so needs syft: `make sbom-test` checks both.

use super::*;

#[path = "../../xtask/src/lockfile.rs"]
mod lockfile;

#[test]
fn each_entry_of_the_policy_lock_is_the_workspace_locks_own() {
    let root = root();
    let workspace = lockfile::packages(&read_at(&root, "Cargo.lock"));
    let policy = lockfile::packages(&read_at(&root, lockfile::POLICY_LOCK));
    assert!(
        policy.iter().any(|p| p.name == PACKAGE),
        "{} does not hold {PACKAGE} itself: run `make sbom-lock`.",
        lockfile::POLICY_LOCK
    );
    for package in &policy {
        let own = workspace.iter().find(|w| w.key() == package.key());
        let Some(own) = own else {
            panic!(
                "{} holds {} {}, which Cargo.lock does not: run `make sbom-lock`.",
                lockfile::POLICY_LOCK,
                package.name,
                package.version
            );
        };
        assert_eq!(
            own.fields, package.fields,
            "{} {} differs from its entry in Cargo.lock: run `make sbom-lock`.",
            package.name, package.version
        );
        for item in &package.dependencies {
            assert!(
                own.dependencies.contains(item),
                "{} {} depends on {item} in {} only: run `make sbom-lock`.",
                package.name,
                package.version,
                lockfile::POLICY_LOCK
            );
        }
    }
}

#[test]
fn the_scan_leaves_out_the_workspace_lock_and_reads_the_policys() {
    let config = yaml_file(&root(), ".syft.yaml");
    let exclude: Vec<&str> = config["exclude"]
        .as_array()
        .expect(".syft.yaml has an `exclude` list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        exclude.contains(&"./Cargo.lock"),
        ".syft.yaml must exclude ./Cargo.lock, the workspace's lock."
    );
    for pattern in exclude {
        let excluded = match pattern.strip_prefix("./") {
            Some(dir) if dir.ends_with("/**") => {
                lockfile::POLICY_LOCK.starts_with(&format!("{}/", &dir[..dir.len() - 3]))
            }
            Some(file) => file == lockfile::POLICY_LOCK,
            // `**/x` and `*/x` reach into every directory
            None => lockfile::POLICY_LOCK.ends_with(pattern.trim_start_matches(['*', '/'])),
        };
        assert!(
            !excluded,
            ".syft.yaml's `{pattern}` excludes {}, which the SBOM is made from.",
            lockfile::POLICY_LOCK
        );
    }
}

#[test]
fn the_policy_lock_keeps_only_the_packages_given() {
    let workspace = "version = 4

[[package]]
name = \"a\"
version = \"1.0.0\"
dependencies = [
 \"b 1.0.0\",
 \"b 2.0.0\",
 \"c\",
]

[[package]]
name = \"b\"
version = \"1.0.0\"

[[package]]
name = \"b\"
version = \"2.0.0\"

[[package]]
name = \"c\"
version = \"0.1.0\"
";
    let keep = lockfile::cargo_tree_packages("a v1.0.0 (/src)\nb v2.0.0\nb v2.0.0 (*)\n");
    let lock = lockfile::policy_lock(workspace, &keep);
    let kept = lockfile::packages(&lock);
    assert_eq!(kept.len(), 2, "{lock}");
    assert_eq!(kept[0].dependencies, ["b 2.0.0"], "{lock}");
    assert_eq!(kept[1].key(), ("b".to_string(), "2.0.0".to_string()));
}
