//! Versions agree, artifacthub-pkg.yml is what `kwctl scaffold artifacthub` derives, and the
//! contact Artifact Hub shows is the issue tracker.

use super::*;

// ---------------------------------------------------------------------------------------------
// Versions and artifacthub-pkg.yml

#[test]
fn versions_agree() {
    let metadata = PolicyMetadata::load();
    let artifacthub = yaml_file("artifacthub-pkg.yml");
    let cargo = env!("CARGO_PKG_VERSION");
    assert_eq!(
        metadata.version(),
        cargo,
        "metadata.yml {ANNOTATION_VERSION} must equal the Cargo.toml version"
    );
    assert_eq!(
        str_at(&artifacthub, "/version", "artifacthub-pkg.yml"),
        cargo,
        "artifacthub-pkg.yml version must equal the Cargo.toml version"
    );
}

#[test]
fn artifacthub_pkg_is_what_kwctl_scaffold_derives_from_metadata() {
    let metadata = PolicyMetadata::load();
    let pkg = yaml_file("artifacthub-pkg.yml");
    let what = "artifacthub-pkg.yml";
    let version = metadata.version();
    let oci = metadata.oci_reference();

    let allowed_keys: BTreeSet<&str> = [
        "version",
        "name",
        "displayName",
        "createdAt",
        "description",
        "license",
        "homeURL",
        "containersImages",
        "keywords",
        "links",
        "install",
        "maintainers",
        "provider",
        "recommendations",
        "annotations",
        "readme",
        "containsSecurityUpdates",
        "prerelease",
        "changes",
    ]
    .into_iter()
    .collect();
    let object = pkg
        .as_object()
        .expect("artifacthub-pkg.yml must be a mapping");
    for key in object.keys() {
        assert!(
            allowed_keys.contains(key.as_str()),
            "{what} has an unexpected top-level key `{key}`"
        );
    }

    let same = |pointer: &str, annotation: &str| {
        assert_eq!(
            str_at(&pkg, pointer, what),
            metadata.annotation(annotation),
            "{what} {pointer} must equal metadata.yml {annotation}"
        );
    };
    same("/name", ANNOTATION_TITLE);
    same("/displayName", ANNOTATION_DISPLAY_NAME);
    same("/description", ANNOTATION_DESCRIPTION);
    same("/license", ANNOTATION_LICENSE);
    same("/homeURL", ANNOTATION_URL);

    let created = str_at(&pkg, "/createdAt", what);
    assert!(
        created.len() >= 20 && created.as_bytes()[4] == b'-' && created.as_bytes()[10] == b'T',
        "{what} createdAt must be an RFC 3339 timestamp, not {created:?}"
    );

    assert_eq!(
        pkg["containersImages"],
        serde_json::json!([{ "name": "policy", "image": oci }]),
        "{what} containersImages must be the one image {oci} (ociUrl and version of metadata.yml)"
    );

    let keywords: Vec<String> = metadata
        .annotation(ANNOTATION_KEYWORDS)
        .split(',')
        .map(|k| k.trim().to_string())
        .collect();
    assert_eq!(
        strings(&pkg["keywords"], &format!("{what} keywords")),
        keywords,
        "{what} keywords must be the comma-separated {ANNOTATION_KEYWORDS} of metadata.yml, in order"
    );

    let source = metadata.annotation(ANNOTATION_SOURCE);
    let mut links = Vec::new();
    if source.starts_with("https://github.com/") {
        links.push(serde_json::json!({
            "name": "policy",
            "url": format!("{source}/releases/download/v{version}/policy.wasm"),
        }));
    }
    links.push(serde_json::json!({ "name": "source", "url": source }));
    assert_eq!(
        pkg["links"],
        Value::Array(links),
        "{what} links must point at the release asset of v{version} and at {ANNOTATION_SOURCE}"
    );

    check_install_text(str_at(&pkg, "/install", what), &oci);

    assert_eq!(
        pkg["provider"],
        serde_json::json!({ "name": "kubewarden" }),
        "{what} provider must be kubewarden"
    );
    // Checked by the_recommended_chart_is_the_admission_controller.
    assert!(
        pkg.get("recommendations").is_some(),
        "{what} has no recommendations"
    );

    // No author annotation: kwctl scaffold writes no maintainers.
    match author_entries(
        metadata
            .annotations
            .get(ANNOTATION_AUTHOR)
            .map_or("", String::as_str),
    ) {
        Ok(maintainers) => {
            let expected: Vec<Value> = maintainers
                .into_iter()
                .map(|(name, email)| serde_json::json!({ "name": name, "email": email }))
                .collect();
            assert_eq!(
                pkg["maintainers"],
                Value::Array(expected),
                "{what} maintainers must be the `Name <email>` entries of {ANNOTATION_AUTHOR}"
            );
        }
        Err(_) => assert!(
            pkg.get("maintainers").is_none(),
            "{what} lists maintainers, but {ANNOTATION_AUTHOR} of metadata.yml has no \
             `Name <email>` entries to derive them from"
        ),
    }

    // The annotations are written by `cargo xtask gen artifacthub` and kept fresh by `xtask check`.
}

/// `Name <email>, Other <email>` as kwctl reads io.kubewarden.policy.author; the entries that
/// are not in that form are returned as the error.
fn author_entries(author: &str) -> Result<Vec<(String, String)>, Vec<String>> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for entry in author.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match (entry.find('<'), entry.rfind('>')) {
            (Some(open), Some(close))
                if close == entry.len() - 1 && entry[open + 1..close].contains('@') =>
            {
                good.push((
                    entry[..open].trim().to_string(),
                    entry[open + 1..close].trim().to_string(),
                ));
            }
            _ => bad.push(entry.to_string()),
        }
    }
    if bad.is_empty() && !good.is_empty() {
        Ok(good)
    } else {
        Err(bad)
    }
}

/// The release workflow regenerates artifacthub-pkg.yml with `kwctl scaffold artifacthub`, which
/// stops with "malformed email" unless every author entry is `Name <email>`. The annotation is
/// optional.
#[test]
fn author_annotation_is_accepted_by_kwctl_scaffold() {
    let metadata = PolicyMetadata::load();
    let Some(author) = metadata.annotations.get(ANNOTATION_AUTHOR) else {
        return;
    };
    if let Err(bad) = author_entries(author) {
        panic!(
            "metadata.yml {ANNOTATION_AUTHOR} must be a comma-separated list of `Name <email>`; \
             `kwctl scaffold artifacthub` (run by the release workflow) rejects {bad:?}"
        );
    }
}

/// The Artifact Hub install text leads to a policy that works: the examples, pinned to this
/// release, and never a `kwctl scaffold manifest` without `--allow-context-aware` (kwctl then
/// drops contextAwareResources and every guarded delete gets a 500). It names the minimum
/// Kubewarden version, the one the README's requirements give.
fn check_install_text(install: &str, oci: &str) {
    let what = "artifacthub-pkg.yml install";
    let version = oci.rsplit(':').next().unwrap_or_default();
    let source = PolicyMetadata::load()
        .annotation(ANNOTATION_SOURCE)
        .to_string();
    let examples = format!("kubectl apply -k '{source}//examples?ref={version}'");
    assert!(
        install.contains(&examples),
        "{what} must install the examples pinned to this release: `{examples}`"
    );
    assert!(
        install.contains("--for=condition=PolicyUniquelyReachable"),
        "{what} must wait for the policies to be reachable"
    );
    for (i, line) in install.lines().enumerate() {
        if line.contains("kwctl scaffold manifest") {
            assert!(
                line.contains("--allow-context-aware"),
                "{what} line {}: `kwctl scaffold manifest` without --allow-context-aware drops \
                 contextAwareResources: {line}",
                i + 1
            );
            assert!(
                line.contains(&format!("registry://{oci}")),
                "{what}: {line}"
            );
        }
    }
    if install.contains("kwctl scaffold manifest") {
        // kwctl copies rules, mutating and contextAwareResources from the metadata and sets no
        // failurePolicy or timeouts (crates/kwctl/src/scaffold/manifest.rs and
        // kubewarden_crds.rs, Kubewarden 1.36): one combined policy, failing closed on CREATE too.
        for needle in ["one policy", "failurePolicy: Fail", "split"] {
            assert!(
                install.contains(needle),
                "{what} offers a single-policy install but does not say what it gives and how to \
                 split it (missing `{needle}`)"
            );
        }
    }
    let minimum = minimum_kubewarden(&read("README.md"));
    assert!(
        install.contains(&format!("Kubewarden {minimum} or newer")),
        "{what} must name the minimum Kubewarden version of the README, {minimum}"
    );
}

/// The minimum Kubewarden version of the README's requirements: its first "Kubewarden X.Y or
/// newer".
pub(crate) fn minimum_kubewarden(readme: &str) -> String {
    const KUBEWARDEN: &str = "Kubewarden ";
    readme
        .match_indices(KUBEWARDEN)
        .find_map(|(at, _)| {
            let mut words = readme[at + KUBEWARDEN.len()..].split_whitespace();
            let version = words.next()?;
            let newer = words.next() == Some("or")
                && words
                    .next()?
                    .trim_end_matches(|c: char| !c.is_alphanumeric())
                    == "newer";
            (newer && version.starts_with(|c: char| c.is_ascii_digit()))
                .then(|| version.to_string())
        })
        .unwrap_or_else(|| panic!("README.md names no minimum as `Kubewarden X.Y or newer`"))
}

#[test]
fn the_install_check_refuses_a_scaffold_without_context_aware_resources() {
    let oci = PolicyMetadata::load().oci_reference();
    let version = oci.rsplit(':').next().unwrap_or_default();
    let source = PolicyMetadata::load()
        .annotation(ANNOTATION_SOURCE)
        .to_string();
    let minimum = minimum_kubewarden(&read("README.md"));
    let good = format!(
        "Kubewarden {minimum} or newer\nkubectl apply -k '{source}//examples?ref={version}'\n\
         kubectl wait --for=condition=PolicyUniquelyReachable x\n"
    );
    check_install_text(&good, &oci);
    let silent = format!(
        "{good}kwctl scaffold manifest --allow-context-aware -t ClusterAdmissionPolicy registry://{oci}\n"
    );
    let refused = std::panic::catch_unwind(|| check_install_text(&silent, &oci));
    assert!(
        refused.is_err(),
        "a scaffold that does not say it builds one combined policy must be refused"
    );
    let good = format!("{good}one policy, failurePolicy: Fail; split it\n");
    let bad = format!("{good}kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{oci}\n");
    let refused = std::panic::catch_unwind(|| check_install_text(&bad, &oci));
    assert!(
        refused.is_err(),
        "a scaffold without --allow-context-aware must be refused"
    );
}

// ---------------------------------------------------------------------------------------------
// Contact

/// Where the project answers. Artifact Hub shows an author's address as the maintainer contact.
const ISSUE_TRACKER: &str = "https://github.com/capi-template-guard/capi-template-guard/issues";

/// Parts of addresses that nobody reads.
const PLACEHOLDER_MAILBOXES: [&str; 6] = [
    "noreply",
    "no-reply",
    "example.org",
    "example.com",
    "example.net",
    "localhost",
];

/// Email addresses outside YAML and TOML comments.
fn addresses(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .flat_map(|line| line.split(|c: char| c.is_whitespace() || "<>\"',;()[]".contains(c)))
        .filter(|word| {
            word.split_once('@')
                .is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn the_contact_is_the_issue_tracker_and_no_placeholder_mailbox() {
    for file in [
        "metadata.yml",
        "artifacthub-pkg.yml",
        "artifacthub-repo.yml",
        "Cargo.toml",
    ] {
        for address in addresses(&read(file)) {
            assert!(
                !PLACEHOLDER_MAILBOXES
                    .iter()
                    .any(|p| address.to_lowercase().contains(p)),
                "{file} names {address}, a mailbox nobody reads; the project answers at {ISSUE_TRACKER}"
            );
        }
    }
    for file in ["README.md", "Cargo.toml", "metadata.yml"] {
        assert!(
            read(file).contains(ISSUE_TRACKER),
            "{file} must name the issue tracker {ISSUE_TRACKER} as the contact"
        );
    }
    assert_eq!(
        addresses("author: A <a@users.noreply.github.com>\n# owner: b@example.org\nemail: c@d.io"),
        vec!["a@users.noreply.github.com", "c@d.io"]
    );
}

/// Kubewarden 1.37 installs from one `admission-controller` chart; the kubewarden-controller
/// chart Artifact Hub recommended before is deprecated.
#[test]
fn the_recommended_chart_is_the_admission_controller() {
    let pkg = yaml_file("artifacthub-pkg.yml");
    assert_eq!(
        pkg["recommendations"],
        serde_json::json!([{ "url": "https://artifacthub.io/packages/helm/kubewarden/admission-controller" }]),
        "artifacthub-pkg.yml recommendations must name the admission-controller chart only"
    );
}

/// The license every manifest declares is the one the repository ships in full.
#[test]
fn the_declared_license_is_the_license_file() {
    let metadata = PolicyMetadata::load();
    assert_eq!(metadata.annotation(ANNOTATION_LICENSE), "Apache-2.0");
    assert_eq!(
        read("Cargo.toml")
            .lines()
            .find(|line| line.starts_with("license = "))
            .expect("Cargo.toml declares a license"),
        r#"license = "Apache-2.0""#
    );
    let license = read("LICENSE");
    let words: Vec<&str> = license.split_whitespace().take(5).collect();
    assert_eq!(
        words,
        ["Apache", "License", "Version", "2.0,", "January"],
        "LICENSE must hold the Apache License 2.0 text"
    );
    assert!(
        license.contains("END OF TERMS AND CONDITIONS"),
        "LICENSE must hold the whole text, terms included"
    );
}
