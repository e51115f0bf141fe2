//! Relative and tag-pinned links and anchors of the README, CONTRIBUTING.md, docs/ and
//! examples/ lead to a file, and to a heading, that exist.

use super::*;

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
            // A bare file name in prose ("written by bench.sh") may live anywhere.
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
    let root = root();
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
        let text = read_at(&root, source);
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

#[test]
fn the_pinned_link_check_finds_the_path_and_anchor() {
    assert_eq!(
        pinned_links(
            "[a](https://github.com/o/r/blob/v1.2.3/docs/x.md#y) and https://github.com/o/r/tree/v1/z",
            "https://github.com/o/r"
        ),
        vec![(1, "/docs/x.md#y".to_string())]
    );
    let root = root();
    let files = repository_files(&root);
    assert!(
        broken(
            &root,
            "README.md",
            "/docs/design.md#the-decision-table",
            &files
        )
        .is_none()
    );
    assert!(
        broken(
            &root,
            "README.md",
            "/docs/design.md#no-such-heading",
            &files
        )
        .is_some()
    );
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

/// Paths of this repository named in code, build files and scripts (Rust comments and strings,
/// the Makefile, e2e.bats, shell scripts, metadata.yml) name files that exist. Only a path that
/// starts at one of the repository's top-level folders is read as one of its files: others in
/// such text are upstream citations (`internal/controllers/...`) or relative to a fixture.
#[test]
fn repository_paths_in_code_and_build_files_exist() {
    let root = root();
    let files = repository_files(&root);
    let top_level: BTreeSet<String> = files
        .iter()
        .filter_map(|f| f.split_once('/').map(|(dir, _)| dir.to_string()))
        .collect();
    let sources: Vec<&String> = files
        .iter()
        .filter(|f| {
            !f.starts_with("test_data/")
                && (f.ends_with(".rs")
                    || f.ends_with(".sh")
                    || f.ends_with(".bats")
                    || f.as_str() == "Makefile"
                    || f.as_str() == "metadata.yml")
        })
        .collect();
    assert!(
        sources.iter().any(|s| s.as_str() == "Makefile")
            && sources.iter().any(|s| s.as_str() == "e2e.bats")
            && sources.iter().any(|s| s.starts_with("guard/src/")),
        "the path check must see the Makefile, e2e.bats and the Rust sources"
    );
    let mut problems = Vec::new();
    // This file's own tests name paths that do not exist, on purpose.
    for source in sources
        .into_iter()
        .filter(|s| *s != "tests/release/links.rs")
    {
        let text = read_at(&root, source);
        for (line, word) in path_like_words(&text) {
            let path = word.split('#').next().unwrap_or("");
            let in_repository = path
                .split_once('/')
                .is_some_and(|(first, _)| top_level.contains(first));
            // From the root, or from a folder the source sits in (`tests/client.rs` in
            // template-cleanup/src/tests.rs).
            let exists = Path::new(source)
                .ancestors()
                .any(|dir| root.join(dir).join(path).is_file());
            if in_repository && !exists {
                problems.push(format!("  {source}:{line}: {path} does not exist"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "paths that name no file of the repository:\n{}",
        problems.join("\n")
    );
}
