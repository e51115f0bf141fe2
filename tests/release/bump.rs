//! `scripts/bump-version.sh` moves every version at once, and its dry run writes nothing.

use super::versions::{assert_versions_agree, text_files, version_mentions};
use super::*;
use std::process::Command;

/// A scratch directory under the system's temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{PACKAGE}-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("cannot create a scratch directory");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn bump(args: &[&str]) -> String {
    let output = Command::new("bash")
        .arg(root().join("scripts/bump-version.sh"))
        .args(args)
        .output()
        .expect("cannot run bash scripts/bump-version.sh");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "scripts/bump-version.sh {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_bump_script_moves_every_version_at_once() {
    let root = root();
    let scratch = Scratch::new("bump");
    let mut files = text_files(&root);
    files.extend(
        ["Cargo.toml", "Cargo.lock", "template-cleanup/Cargo.toml"]
            .into_iter()
            .map(str::to_string),
    );
    for file in &files {
        let target = scratch.0.join(file);
        fs::create_dir_all(target.parent().expect("a file has a parent"))
            .expect("cannot create a scratch directory");
        fs::copy(root.join(file), &target).unwrap_or_else(|e| panic!("cannot copy {file}: {e}"));
    }
    let before = version_mentions(&scratch.0).len();

    let scratch_root = scratch.0.to_str().expect("a UTF-8 temporary path");
    bump(&["--root", scratch_root, "9.8.7-rc.1"]);
    let after = assert_versions_agree(&scratch.0, "9.8.7-rc.1");
    assert_eq!(
        after.len(),
        before,
        "the bump changed how many places name a version"
    );

    // The release workflow regenerates artifacthub-pkg.yml with a fresh createdAt; so does the bump.
    let created = yaml_file(&scratch.0, "artifacthub-pkg.yml")["createdAt"]
        .as_str()
        .map(str::to_string);
    let original = yaml_file(&root, "artifacthub-pkg.yml")["createdAt"]
        .as_str()
        .map(str::to_string);
    assert!(
        created.is_some() && created != original,
        "the bump must set createdAt"
    );

    // A leading "v" is accepted; anything that is not a version is refused.
    bump(&["--root", scratch_root, "v9.8.8"]);
    assert_versions_agree(&scratch.0, "9.8.8");
    let refused = Command::new("bash")
        .arg(root.join("scripts/bump-version.sh"))
        .args(["--root", scratch_root, "9.8"])
        .output()
        .expect("cannot run bash");
    assert!(!refused.status.success(), "9.8 must be refused");
    assert_versions_agree(&scratch.0, "9.8.8");
}

#[test]
fn the_bump_dry_run_shows_the_change_and_writes_nothing() {
    let root = root();
    let files = ["Cargo.toml", "Cargo.lock", "metadata.yml"];
    let before: Vec<String> = files.iter().map(|f| read_at(&root, f)).collect();

    let out = bump(&["--dry-run", "9.8.7"]);

    let after: Vec<String> = files.iter().map(|f| read_at(&root, f)).collect();
    assert!(before == after, "the dry run wrote to the working tree");
    for needle in [
        "+version = \"9.8.7\"",
        "+  io.kubewarden.policy.version: 9.8.7",
        "+version: 9.8.7",
        "capi-template-guard:v9.8.7",
    ] {
        assert!(
            out.contains(needle),
            "the dry run's diff lacks `{needle}`:\n{out}"
        );
    }
}
