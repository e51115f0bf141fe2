//! Every place that names the policy's version agrees with Cargo.toml.

use super::*;

/// One place that names a version of the policy.
#[derive(Debug)]
pub(crate) struct Mention {
    pub(crate) place: String,
    pub(crate) version: String,
}

/// The version of the [package] table of Cargo.toml.
fn cargo_toml_version(text: &str) -> Option<String> {
    let mut table = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
        } else if table == "[package]"
            && let Some(value) = line.strip_prefix("version")
        {
            let value = value.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_string());
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
pub(crate) fn text_files(root: &Path) -> Vec<String> {
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
pub(crate) fn version_mentions(root: &Path) -> Vec<Mention> {
    let mut mentions = Vec::new();
    let mut push = |place: String, version: Option<String>| {
        mentions.push(Mention {
            version: version.unwrap_or_else(|| format!("(no version found in {place})")),
            place,
        });
    };

    push(
        "Cargo.toml [package] version".into(),
        cargo_toml_version(&read_at(root, "Cargo.toml")),
    );
    push(
        format!("Cargo.lock entry of {PACKAGE}"),
        cargo_lock_version(&read_at(root, "Cargo.lock"), PACKAGE),
    );
    // template-cleanup ships with the policy and carries its version (--version, the image tag).
    push(
        "template-cleanup/Cargo.toml [package] version".into(),
        cargo_toml_version(&read_at(root, "template-cleanup/Cargo.toml")),
    );
    push(
        "Cargo.lock entry of template-cleanup".into(),
        cargo_lock_version(&read_at(root, "Cargo.lock"), "template-cleanup"),
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
        for document in yaml_documents(&file, &read_at(root, &file)) {
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
        let text = read_at(root, &file);
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
pub(crate) fn assert_versions_agree(root: &Path, expected: &str) -> Vec<Mention> {
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
    let root = root();
    let version =
        cargo_toml_version(&read_at(&root, "Cargo.toml")).expect("Cargo.toml has no version");
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
        ("examples/guard/cluster-admission-policy-guard.yaml", 2),
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
