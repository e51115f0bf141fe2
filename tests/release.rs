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
//!
//! Run with `cargo test --test release`.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = "capi-template-guard";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(root: &Path, relative: &str) -> String {
    let path = root.join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn yaml_documents(relative: &str, text: &str) -> Vec<Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|document| {
            Value::deserialize(document)
                .unwrap_or_else(|e| panic!("{relative} does not parse as YAML: {e}"))
        })
        .filter(|value| !value.is_null())
        .collect()
}

fn yaml_file(root: &Path, relative: &str) -> Value {
    yaml_documents(relative, &read(root, relative))
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

// ---------------------------------------------------------------------------------------------
// Versions

/// One place that names a version of the policy.
#[derive(Debug)]
struct Mention {
    place: String,
    version: String,
}

/// The version of the [package] table of Cargo.toml.
fn cargo_toml_version(text: &str) -> Option<String> {
    let mut table = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
        } else if table == "[package]" {
            if let Some(value) = line.strip_prefix("version") {
                let value = value.trim_start().strip_prefix('=')?.trim();
                return Some(value.trim_matches('"').to_string());
            }
        }
    }
    None
}

/// The version Cargo.lock records for this package.
fn cargo_lock_version(text: &str, package: &str) -> Option<String> {
    let name_line = format!("name = \"{package}\"");
    let mut lines = text.lines().map(str::trim);
    lines.find(|line| *line == name_line)?;
    lines
        .take_while(|line| !line.starts_with("[["))
        .find_map(|line| line.strip_prefix("version = "))
        .map(|value| value.trim_matches('"').to_string())
}

/// The tag that follows each occurrence of `prefix` in `text`, with its line number. A prefix
/// followed by neither `:` nor a tag character names no tag and is skipped.
fn tags_after(text: &str, prefix: &str, separator: Option<char>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find(prefix) {
            rest = &rest[at + prefix.len()..];
            let tail = match separator {
                Some(sep) => match rest.strip_prefix(sep) {
                    Some(tail) => tail,
                    None => continue,
                },
                None => rest,
            };
            let tag: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
                .collect();
            // A sentence may end right after the tag.
            let tag = tag.trim_end_matches('.').to_string();
            out.push((number + 1, tag));
        }
    }
    out
}

/// Files whose text may name a tag of the published module.
fn text_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = [
        "README.md",
        "metadata.yml",
        "artifacthub-pkg.yml",
        "artifacthub-repo.yml",
        "questions-ui.yml",
        ".github/workflows/release.yml",
        ".github/workflows/test.yml",
    ]
    .into_iter()
    .filter(|file| root.join(file).exists())
    .map(str::to_string)
    .collect();
    files.extend(documentation_files(root));
    files.extend(example_files(root));
    files
}

/// Every place under `root` that names the policy's version.
fn version_mentions(root: &Path) -> Vec<Mention> {
    let mut mentions = Vec::new();
    let mut push = |place: String, version: Option<String>| {
        mentions.push(Mention {
            version: version.unwrap_or_else(|| format!("(no version found in {place})")),
            place,
        });
    };

    push(
        "Cargo.toml [package] version".into(),
        cargo_toml_version(&read(root, "Cargo.toml")),
    );
    push(
        format!("Cargo.lock entry of {PACKAGE}"),
        cargo_lock_version(&read(root, "Cargo.lock"), PACKAGE),
    );
    // The collector ships with the policy and carries its version (its --version, its image tag).
    push(
        "collector/Cargo.toml [package] version".into(),
        cargo_toml_version(&read(root, "collector/Cargo.toml")),
    );
    push(
        "Cargo.lock entry of template-cleanup".into(),
        cargo_lock_version(&read(root, "Cargo.lock"), "template-cleanup"),
    );

    let metadata = yaml_file(root, "metadata.yml");
    let annotation = |key: &str| {
        metadata["annotations"][key]
            .as_str()
            .unwrap_or_else(|| panic!("metadata.yml has no string annotation {key}"))
            .to_string()
    };
    push(
        "metadata.yml io.kubewarden.policy.version".into(),
        Some(annotation("io.kubewarden.policy.version")),
    );
    let oci_url = annotation("io.kubewarden.policy.ociUrl");
    let source = annotation("io.kubewarden.policy.source");
    let downloads = format!("{source}/releases/download/");
    // Example files by URL, pinned to the release tag: raw files and kustomize remote targets.
    let raw = format!(
        "{}/",
        source.replacen(
            "https://github.com/",
            "https://raw.githubusercontent.com/",
            1
        )
    );
    let remote = format!("{source}//");
    let blob = format!("{source}/blob/");

    let artifacthub = yaml_file(root, "artifacthub-pkg.yml");
    push(
        "artifacthub-pkg.yml version".into(),
        artifacthub["version"].as_str().map(str::to_string),
    );

    for file in example_files(root) {
        for document in yaml_documents(&file, &read(root, &file)) {
            if let Some(module) = document.pointer("/spec/module").and_then(Value::as_str) {
                let name = document["metadata"]["name"].as_str().unwrap_or("?");
                let tag = module
                    .strip_prefix("registry://")
                    .and_then(|m| m.strip_prefix(oci_url.as_str()))
                    .and_then(|m| m.strip_prefix(":v"))
                    .map(str::to_string);
                push(
                    format!("{file}: spec.module of {name} ({module})"),
                    tag.or_else(|| Some(format!("(not registry://{oci_url}:vX.Y.Z)"))),
                );
            }
        }
    }

    for file in text_files(root) {
        let text = read(root, &file);
        for (line, tag) in tags_after(&text, &oci_url, Some(':')) {
            // What a push to main publishes, and the placeholder of the release steps.
            if tag == "latest" || tag == "vX.Y.Z" {
                continue;
            }
            push(
                format!("{file}:{line}: {oci_url}:{tag}"),
                Some(
                    tag.strip_prefix('v')
                        .unwrap_or("(tag without v)")
                        .to_string(),
                ),
            );
        }
        let mut pinned = tags_after(&text, &downloads, None);
        pinned.extend(tags_after(&text, &raw, None));
        pinned.extend(tags_after(&text, &blob, None));
        for (number, line) in text.lines().enumerate() {
            if line.contains(&remote) {
                pinned.extend(
                    tags_after(line, "?ref=", None)
                        .into_iter()
                        .map(|(_, tag)| (number + 1, tag)),
                );
            }
        }
        for (line, tag) in pinned {
            push(
                format!("{file}:{line}: pinned to {tag}"),
                Some(
                    tag.strip_prefix('v')
                        .unwrap_or("(tag without v)")
                        .to_string(),
                ),
            );
        }
    }
    mentions
}

/// Panics with every place that disagrees with `expected`; returns the mentions.
fn assert_versions_agree(root: &Path, expected: &str) -> Vec<Mention> {
    let mentions = version_mentions(root);
    let wrong: Vec<String> = mentions
        .iter()
        .filter(|m| m.version != expected)
        .map(|m| format!("  {} names {}", m.place, m.version))
        .collect();
    assert!(
        wrong.is_empty(),
        "every version must be {expected} (the Cargo.toml version); run `make bump VERSION={expected}`:\n{}",
        wrong.join("\n")
    );
    mentions
}

#[test]
fn every_version_in_the_repository_agrees() {
    let root = repo();
    let version =
        cargo_toml_version(&read(&root, "Cargo.toml")).expect("Cargo.toml has no version");
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "Cargo.toml changed since this test was built"
    );
    let mentions = assert_versions_agree(&root, &version);

    // The scan must see what it is meant to check, or it would pass on nothing.
    for (file, at_least) in [
        ("README.md", 4),
        ("artifacthub-pkg.yml", 4),
        ("examples/kustomization.yaml", 1),
        ("examples/cluster-admission-policy-guard.yaml", 2),
        ("examples/cluster-admission-policy-mutate.yaml", 2),
    ] {
        let found = mentions
            .iter()
            .filter(|m| m.place.starts_with(&format!("{file}:")))
            .count();
        assert!(
            found >= at_least,
            "expected at least {at_least} tagged references in {file}, found {found}"
        );
    }
}

#[test]
fn the_version_scan_catches_a_stale_tag() {
    let tags = tags_after(
        "kwctl pull registry://ghcr.io/o/p:v0.0.9 and ghcr.io/o/p:v1.2.3-rc.1.\nghcr.io/o/p is it; ghcr.io/o/p:latest",
        "ghcr.io/o/p",
        Some(':'),
    );
    assert_eq!(
        tags,
        vec![
            (1, "v0.0.9".to_string()),
            (1, "v1.2.3-rc.1".to_string()),
            (2, "latest".to_string()),
        ]
    );
    assert_eq!(
        cargo_lock_version(
            "[[package]]\nname = \"other\"\nversion = \"9.9.9\"\n\n[[package]]\nname = \"capi-template-guard\"\nversion = \"1.2.3\"\n",
            PACKAGE
        ),
        Some("1.2.3".to_string())
    );
    assert_eq!(
        cargo_toml_version(
            "[package]\nname = \"x\"\nversion = \"4.5.6\"\n[dependencies]\nversion = \"1\"\n"
        ),
        Some("4.5.6".to_string())
    );
}

// ---------------------------------------------------------------------------------------------
// The bump script

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
        .arg(repo().join("scripts/bump-version.sh"))
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
    let root = repo();
    let scratch = Scratch::new("bump");
    let mut files = text_files(&root);
    files.extend(
        ["Cargo.toml", "Cargo.lock", "collector/Cargo.toml"]
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
    let root = repo();
    let files = ["Cargo.toml", "Cargo.lock", "metadata.yml"];
    let before: Vec<String> = files.iter().map(|f| read(&root, f)).collect();

    let out = bump(&["--dry-run", "9.8.7"]);

    let after: Vec<String> = files.iter().map(|f| read(&root, f)).collect();
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

// ---------------------------------------------------------------------------------------------
// Relative links in README.md and examples/

/// Extensions of repository files that documentation points readers to.
const LINKED_EXTENSIONS: [&str; 10] = [
    "md", "yaml", "yml", "json", "rs", "sh", "bats", "py", "toml", "lock",
];

/// The anchors GitHub gives a Markdown file's headings (code blocks skipped).
fn heading_anchors(markdown: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut seen: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let repeats = seen.iter().filter(|s| **s == slug).count();
        anchors.insert(if repeats == 0 {
            slug.clone()
        } else {
            format!("{slug}-{repeats}")
        });
        seen.push(slug);
    }
    anchors
}

/// Links to this repository's files at a tag (`<source>/blob/vX.Y.Z/path#anchor`), as paths from
/// the root: the README is also the Artifact Hub page, where relative links lead nowhere, so it
/// links the docs by tag-pinned URL. The version scan checks the tag; this checks the path.
fn pinned_links(text: &str, source: &str) -> Vec<(usize, String)> {
    let prefix = format!("{source}/blob/");
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find(&prefix) {
            rest = &rest[at + prefix.len()..];
            let Some((_tag, tail)) = rest.split_once('/') else {
                continue;
            };
            let path: String = tail
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | '\'' | '"'))
                .collect();
            out.push((number + 1, format!("/{path}")));
        }
    }
    out
}

/// Targets of Markdown links `[text](target)` that are not URLs.
fn markdown_link_targets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let target: String = rest.chars().take_while(|c| *c != ')').collect();
            let target = target.split_whitespace().next().unwrap_or("").to_string();
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                out.push((number + 1, target));
            }
        }
    }
    out
}

/// Words that look like paths of repository files: `dir/file.ext`, `../file.ext#anchor` or a bare
/// `file.ext`, with an extension of LINKED_EXTENSIONS, and `dir/Dockerfile`. URLs, absolute paths
/// and host names (`helm.sh/resource-policy`) are not.
fn path_like_words(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let words = line.split(|c: char| {
            !(c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-' | '#' | '~'))
        });
        for word in words {
            // A sentence may end right after the word.
            let word = word.trim_end_matches('.');
            let path = word.split('#').next().unwrap_or("");
            let linked = path.ends_with("/Dockerfile")
                || path
                    .rsplit_once('.')
                    .is_some_and(|(_, extension)| LINKED_EXTENSIONS.contains(&extension));
            // "//host/..." is what is left of a URL after its scheme.
            if !linked || path.starts_with('/') {
                continue;
            }
            if let Some((first, _)) = path.split_once('/') {
                let host_name = first.contains('.') && !first.starts_with('.');
                if host_name {
                    continue;
                }
            }
            out.push((number + 1, word.to_string()));
        }
    }
    out
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

/// Why `link`, found in `file`, leads nowhere; None when it leads to an existing file (and
/// heading).
fn broken(root: &Path, file: &str, link: &str, files: &BTreeSet<String>) -> Option<String> {
    let (path, anchor) = match link.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (link, None),
    };
    let base = Path::new(file).parent().unwrap_or(Path::new(""));
    let target = if path.is_empty() {
        Some(PathBuf::from(file))
    } else {
        // "/path" (from pinned_links) is from the root.
        let path = path.strip_prefix('/').map_or(path, |p| p);
        let candidates = [base.join(path), PathBuf::from(path)];
        let found = candidates.into_iter().find(|c| root.join(c).is_file());
        match found {
            Some(found) => Some(found),
            // A bare file name in prose ("regenerated by make_cases.py") may live anywhere.
            None if !path.contains('/') => files
                .iter()
                .find(|f| Path::new(f).file_name().and_then(|n| n.to_str()) == Some(path))
                .map(PathBuf::from),
            None => None,
        }
    };
    let Some(target) = target else {
        return Some(format!("{path} does not exist"));
    };
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if target.extension().and_then(|e| e.to_str()) != Some("md") {
        return None;
    }
    let text = fs::read_to_string(root.join(&target)).unwrap_or_default();
    if heading_anchors(&text).contains(anchor) {
        None
    } else {
        Some(format!(
            "{} has no heading with the anchor #{anchor}",
            target.display()
        ))
    }
}

#[test]
fn relative_links_in_the_documentation_and_the_examples_lead_somewhere() {
    let root = repo();
    let files = repository_files(&root);
    let mut sources = vec!["README.md".to_string()];
    sources.extend(documentation_files(&root));
    sources.extend(example_files(&root));
    assert!(
        sources.iter().any(|s| s.starts_with("docs/"))
            && sources.contains(&"CONTRIBUTING.md".into()),
        "the link check must see docs/*.md and CONTRIBUTING.md"
    );

    let metadata = yaml_file(&root, "metadata.yml");
    let source_url = metadata["annotations"]["io.kubewarden.policy.source"]
        .as_str()
        .expect("metadata.yml names its source")
        .to_string();
    let mut problems = Vec::new();
    for source in &sources {
        let text = read(&root, source);
        let mut links = markdown_link_targets(&text);
        links.extend(path_like_words(&text));
        links.extend(pinned_links(&text, &source_url));
        for (line, link) in links {
            if let Some(why) = broken(&root, source, &link, &files) {
                problems.push(format!("  {source}:{line}: {link}: {why}"));
            }
        }
    }
    problems.dedup();
    assert!(
        problems.is_empty(),
        "relative links that lead nowhere:\n{}",
        problems.join("\n")
    );
}

/// No text file, documentation or source, grows past what a reader can take in one go.
const FILE_MAX_LINES: usize = 800;

#[test]
fn no_file_is_longer_than_a_reader_takes_in() {
    let root = repo();
    let files = repository_files(&root);
    for expected in [
        "docs/design.md",
        "src/decision/mod.rs",
        "testhost/src/bench.rs",
    ] {
        assert!(files.contains(expected), "{expected} not seen");
    }
    let long: Vec<String> = files
        .iter()
        // Cargo.lock is written by cargo; binaries (policy.wasm) are not read
        .filter(|f| Path::new(f).file_name() != Some("Cargo.lock".as_ref()))
        .filter_map(|f| Some((f, fs::read_to_string(root.join(f)).ok()?.lines().count())))
        .filter(|(_, lines)| *lines > FILE_MAX_LINES)
        .map(|(file, lines)| format!("{file} ({lines} lines)"))
        .collect();
    assert!(
        long.is_empty(),
        "longer than {FILE_MAX_LINES} lines: {}; split them by concept",
        long.join(", ")
    );
}

#[test]
fn the_pinned_link_check_finds_the_path_and_anchor() {
    assert_eq!(
        pinned_links(
            "[a](https://github.com/o/r/blob/v1.2.3/docs/x.md#y) and https://github.com/o/r/tree/v1/z",
            "https://github.com/o/r"
        ),
        vec![(1, "/docs/x.md#y".to_string())]
    );
    let root = repo();
    let files = repository_files(&root);
    assert!(broken(
        &root,
        "README.md",
        "/docs/design.md#the-decision-table",
        &files
    )
    .is_none());
    assert!(broken(
        &root,
        "README.md",
        "/docs/design.md#no-such-heading",
        &files
    )
    .is_some());
    assert!(broken(&root, "README.md", "/docs/no-such-page.md", &files).is_some());
}

#[test]
fn the_link_check_finds_what_it_should() {
    let words: Vec<String> = path_like_words(
        "see docs/operator-guide.md, ../README.md#installing, image/Dockerfile and make_cases.py.\n\
         helm.sh/resource-policy https://github.com/o/r/blob/main/x.yml /bin/sh /etc/x.yaml",
    )
    .into_iter()
    .map(|(_, w)| w)
    .collect();
    assert_eq!(
        words,
        vec![
            "docs/operator-guide.md",
            "../README.md#installing",
            "image/Dockerfile",
            "make_cases.py"
        ]
    );
    assert_eq!(
        markdown_link_targets("[a](#clean-up) [b](https://kubewarden.io) [c](examples/rbac.yaml)"),
        vec![
            (1, "#clean-up".to_string()),
            (1, "examples/rbac.yaml".to_string())
        ]
    );
    let anchors = heading_anchors(
        "# Title\n### 2. Let the policy server read Cluster API objects\n```yaml\n# not a heading\n```\n## Clean-up\n## Clean-up\n",
    );
    for anchor in [
        "title",
        "2-let-the-policy-server-read-cluster-api-objects",
        "clean-up",
        "clean-up-1",
    ] {
        assert!(
            anchors.contains(anchor),
            "{anchor} missing from {anchors:?}"
        );
    }
    assert!(!anchors.contains("not-a-heading"));
}
