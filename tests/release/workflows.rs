//! The GitHub workflows, checked before the first tag runs them:
//!
//! - every `uses:` is pinned by a full commit (40 hex digits), with the tag it was read at in a
//!   comment on the same line;
//! - the kwctl that Kubewarden's reusable workflows install for the e2e tests (declared in each
//!   workflow that calls them, on its `# e2e-kwctl:` line, with the commit it was read at) is a
//!   version that e2e.bats has passed with, as listed in CONTRIBUTING.md, and the declaration
//!   was read at the commit the workflow pins;
//! - the release jobs run in the order test, the template-cleanup image's builds (by digest), their
//!   attestation (attached to the draft release), release of the policy (which publishes the
//!   draft), the image's tagged index, Artifact Hub: each job needs every job of the stage before it
//!   (transitively), and a job whose `if:` runs it after a failure (`always()`, `!cancelled()`)
//!   still asks that its needs succeeded;
//! - the image's attestation is Kubewarden's (kubewarden/github-actions v7.0.1,
//!   attestation/action.yml): for each architecture the provenance and the SBOM buildx attached
//!   are read, signed with `cosign sign-blob` into a bundle, verified, and attached to the tag's
//!   draft release under that action's names, before the release of the policy publishes it.
//!
//! Each check is a function over the text, so that the unit tests below feed it broken snippets.

use super::*;

const WORKFLOWS: &str = ".github/workflows";
const RELEASE: &str = ".github/workflows/release.yml";
/// Where the list of kwctl versions lives, and the marker of its line.
const KWCTL_LIST_FILE: &str = "CONTRIBUTING.md";
const KWCTL_LIST_MARKER: &str = "<!-- e2e-kwctl-versions -->";
const KWCTL_DECLARATION: &str = "# e2e-kwctl:";
const REUSABLE: &str = "kubewarden/github-actions";

/// The release's stages, in order: every job of a stage needs every job of the stage before it.
const RELEASE_ORDER: &[&[&str]] = &[
    &["test"],
    &["cleanup-image-build"],
    &["cleanup-image-attestation"],
    &["release"],
    &["cleanup-image"],
    &["artifacthub"],
];

fn workflow_files() -> Vec<String> {
    let dir = root().join(WORKFLOWS);
    let mut files: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {WORKFLOWS}/: {e}"))
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
        .filter(|name| name.ends_with(".yml") || name.ends_with(".yaml"))
        .map(|name| format!("{WORKFLOWS}/{name}"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{WORKFLOWS}/ holds no workflow.");
    files
}

fn is_commit(text: &str) -> bool {
    text.len() == 40
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Every `uses:` value of a parsed workflow, wherever it sits (jobs and steps).
fn uses_values(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("uses", Value::String(uses)) => out.push(uses.clone()),
                    _ => uses_values(inner, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| uses_values(item, out)),
        _ => {}
    }
}

/// What is wrong with the pinning of one workflow's actions and reusable workflows.
fn pinning_problems(what: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(workflow) = yaml_documents(what, text).into_iter().next() else {
        return vec![format!("{what} is empty.")];
    };
    let mut uses = Vec::new();
    uses_values(&workflow, &mut uses);
    for value in &uses {
        if value.starts_with("./") {
            continue; // a file of this repository, at the same commit
        }
        let pinned = value
            .rsplit_once('@')
            .is_some_and(|(_, pin)| is_commit(pin))
            || value.starts_with("docker://") && value.contains("@sha256:");
        if !pinned {
            problems.push(format!(
                "{what}: `uses: {value}` is not pinned by a full commit (40 hex digits)."
            ));
        }
    }
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("- ").unwrap_or(line).trim_start();
            line.starts_with("uses:")
        })
        .collect();
    if lines.len() != uses.len() {
        problems.push(format!(
            "{what}: {} `uses:` lines for {} `uses` values; write each as `uses: owner/repo@commit # tag` on one line.",
            lines.len(),
            uses.len()
        ));
    }
    for line in lines {
        let remote = !line.contains("uses: ./");
        let tag = line.split_once(" # ").map(|(_, tag)| tag.trim());
        if remote && !tag.is_some_and(|tag| tag.starts_with('v')) {
            problems.push(format!(
                "{what}: `{}` names no tag in a comment (`# vX.Y.Z`) beside its commit.",
                line.trim()
            ));
        }
    }
    problems
}

/// The versions in CONTRIBUTING.md's marked line, without a leading `v`.
fn listed_kwctl_versions(text: &str) -> Result<Vec<String>, String> {
    let line = text
        .lines()
        .find(|line| line.contains(KWCTL_LIST_MARKER))
        .ok_or_else(|| format!("{KWCTL_LIST_FILE} has no line marked {KWCTL_LIST_MARKER}."))?;
    let (_, list) = line.split_once(KWCTL_LIST_MARKER).unwrap_or_default();
    let versions: Vec<String> = list
        .split(',')
        .map(|v| {
            v.trim()
                .trim_matches('`')
                .trim_start_matches('v')
                .to_string()
        })
        .filter(|v| !v.is_empty())
        .collect();
    if versions.is_empty() {
        return Err(format!(
            "{KWCTL_LIST_FILE}: the line marked {KWCTL_LIST_MARKER} lists no version."
        ));
    }
    Ok(versions)
}

/// What is wrong with one workflow's e2e kwctl: undeclared while it calls Kubewarden's reusable
/// workflows, declared at another commit than the one pinned, or a version not in `listed`.
fn kwctl_problems(what: &str, text: &str, listed: &[String]) -> Vec<String> {
    let pins: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.split_once(&format!("uses: {REUSABLE}/")))
        .filter_map(|(_, rest)| rest.split_once('@'))
        .map(|(_, pin)| pin.split_whitespace().next().unwrap_or_default())
        .collect();
    if pins.is_empty() {
        return Vec::new();
    }
    let declarations: Vec<&str> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix(KWCTL_DECLARATION))
        .map(str::trim)
        .collect();
    let [declaration] = declarations[..] else {
        return vec![format!(
            "{what} calls {REUSABLE} and must declare, once, the kwctl its e2e tests run: `{KWCTL_DECLARATION} vX.Y.Z at {REUSABLE}@<commit>`."
        )];
    };
    let Some((version, commit)) = declaration
        .split_once(" at ")
        .and_then(|(v, at)| Some((v.trim(), at.trim().strip_prefix(&format!("{REUSABLE}@"))?)))
    else {
        return vec![format!(
            "{what}: `{KWCTL_DECLARATION} {declaration}` is not of the form `vX.Y.Z at {REUSABLE}@<commit>`."
        )];
    };
    let mut problems = Vec::new();
    if pins.len() != 1 || !pins.contains(commit) {
        problems.push(format!(
            "{what} pins {REUSABLE} at {pins:?}, but its kwctl was read at {commit}: read the kwctl-installer's default at the new pin and update `{KWCTL_DECLARATION}`."
        ));
    }
    let bare = version.trim_start_matches('v');
    if !listed.iter().any(|v| v == bare) {
        problems.push(format!(
            "{what}: the e2e tests run kwctl {version}, which e2e.bats has not passed with (listed in {KWCTL_LIST_FILE}: {listed:?}). Run e2e.bats with it, then add it to the list."
        ));
    }
    problems
}

fn needs_of(job: &Value) -> Vec<String> {
    match job.get("needs") {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// What is wrong with the order of a release workflow's jobs against `order`.
fn order_problems(what: &str, text: &str, order: &[&[&str]]) -> Vec<String> {
    let Some(workflow) = yaml_documents(what, text).into_iter().next() else {
        return vec![format!("{what} is empty.")];
    };
    let Some(jobs) = workflow.get("jobs").and_then(Value::as_object) else {
        return vec![format!("{what} has no jobs.")];
    };
    let ancestors = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_string()];
        while let Some(name) = todo.pop() {
            for need in jobs.get(&name).map(needs_of).unwrap_or_default() {
                if seen.insert(need.clone()) {
                    todo.push(need);
                }
            }
        }
        seen
    };
    let mut problems = Vec::new();
    for stage in order {
        for job in *stage {
            if !jobs.contains_key(*job) {
                problems.push(format!("{what} has no job `{job}`."));
            }
        }
    }
    for pair in order.windows(2) {
        let (before, stage) = (pair[0], pair[1]);
        for job in stage {
            let Some(definition) = jobs.get(*job) else {
                continue;
            };
            let above = ancestors(job);
            for earlier in before {
                if !above.contains(*earlier) {
                    problems.push(format!(
                        "{what}: job `{job}` can run without `{earlier}`: it must need it (directly or through another job)."
                    ));
                }
            }
            let condition = definition.get("if").and_then(Value::as_str).unwrap_or("");
            if condition.contains("always()") || condition.contains("cancelled()") {
                for need in needs_of(definition) {
                    let success = format!("needs.{need}.result == 'success'");
                    if !condition.contains(&success) {
                        problems.push(format!(
                            "{what}: job `{job}` runs whatever `{need}` did (`if: {condition}`): add `{success}`."
                        ));
                    }
                }
            }
        }
    }
    problems
}

fn assert_none(problems: Vec<String>) {
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_action_and_reusable_workflow_is_pinned_by_commit() {
    let root = root();
    assert_none(
        workflow_files()
            .iter()
            .flat_map(|what| pinning_problems(what, &read_at(&root, what)))
            .collect(),
    );
}

#[test]
fn the_e2e_kwctl_is_one_that_e2e_bats_has_passed_with() {
    let root = root();
    let listed =
        listed_kwctl_versions(&read_at(&root, KWCTL_LIST_FILE)).unwrap_or_else(|e| panic!("{e}"));
    let mut declared = 0;
    let mut problems = Vec::new();
    for what in workflow_files() {
        let text = read_at(&root, &what);
        declared += usize::from(text.contains(KWCTL_DECLARATION));
        problems.extend(kwctl_problems(&what, &text, &listed));
    }
    assert_none(problems);
    assert!(declared > 0, "No workflow declares its e2e kwctl.");
}

#[test]
fn the_release_jobs_run_in_order() {
    assert_none(order_problems(
        RELEASE,
        &read_at(&root(), RELEASE),
        RELEASE_ORDER,
    ));
}

/// The attestation job of the template-cleanup image, as Kubewarden's attestation action does it.
#[test]
fn the_image_attestation_signs_and_attaches_provenance_and_sbom() {
    let text = read_at(&root(), RELEASE);
    let workflow = yaml_documents(RELEASE, &text)
        .into_iter()
        .next()
        .expect("release.yml parses");
    let job = &workflow["jobs"]["cleanup-image-attestation"];
    assert_eq!(
        job["strategy"]["matrix"]["arch"],
        serde_json::json!(["amd64", "arm64"]),
        "one attestation per architecture the image is built for"
    );
    assert_eq!(job["permissions"]["id-token"], "write", "keyless signing");
    assert_eq!(
        job["permissions"]["contents"], "write",
        "attaching to the release"
    );
    let steps = job["steps"].as_array().expect("the job has steps");
    let script = |needle: &str| {
        steps
            .iter()
            .filter_map(|s| s["run"].as_str())
            .find(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("no step of the attestation job runs `{needle}`"))
    };
    let extract = script("cosign sign-blob");
    for needle in [
        "attestation-manifest",
        "https://slsa.dev/provenance/v1",
        "https://spdx.dev/Document",
        "template-cleanup-attestation-$ARCH",
        "-provenance.intoto.jsonl",
        "-sbom.json",
        "--bundle \"$file.bundle.sigstore\"",
        "cosign verify-blob",
        "--certificate-identity \"$GITHUB_SERVER_URL/$GITHUB_WORKFLOW_REF\"",
    ] {
        assert!(
            extract.contains(needle),
            "the attestation step lacks `{needle}`"
        );
    }
    // To the draft of the tag, by its id: a published release may refuse new assets (immutable).
    let upload = steps
        .iter()
        .find(|s| {
            s["run"].as_str().is_some_and(|r| {
                r.contains("https://uploads.github.com/repos/$GH_REPO/releases/$draft/assets")
            })
        })
        .expect("a step attaches the files to the draft release");
    assert_eq!(upload["if"], "startsWith(github.ref, 'refs/tags/v')");
    assert!(
        upload["run"]
            .as_str()
            .is_some_and(|r| r.contains("select(.draft and .tag_name == env.TAG)")),
        "the files go to the draft of this tag"
    );
    assert!(
        !text.contains("gh release upload"),
        "nothing is uploaded to a release by tag, which names a published release"
    );
    assert!(
        steps.iter().any(|s| s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/upload-artifact@"))),
        "the files are kept as an artifact of the run too"
    );
}

/// What the release builds from is pinned and kept current: the image's builder by digest, its
/// build context without target/, and renovate with the configuration Kubewarden's policy
/// repositories extend (kubewarden/github-actions renovate-config/policies.json, as
/// kubewarden/verify-image-signatures' renovate.json does).
#[test]
fn the_images_builder_is_pinned_and_renovate_keeps_the_pins_current() {
    let root = root();
    let dockerfile = read_at(&root, "template-cleanup/Dockerfile");
    for line in dockerfile.lines().filter(|l| l.starts_with("FROM ")) {
        let image = line.split_whitespace().nth(1).unwrap_or_default();
        assert!(
            image == "scratch" || image.contains("@sha256:"),
            "template-cleanup/Dockerfile: `{line}` is not pinned by digest"
        );
    }
    let ignored = read_at(&root, ".dockerignore");
    assert!(
        ignored.lines().any(|l| l.trim() == "target/"),
        ".dockerignore must leave target/ out of the build context"
    );
    let renovate: Value =
        serde_json::from_str(&read_at(&root, "renovate.json")).expect("renovate.json is JSON");
    assert_eq!(
        renovate["extends"],
        serde_json::json!(["github>kubewarden/github-actions//renovate-config/policies"]),
        "renovate.json extends Kubewarden's configuration for policies"
    );
}

// The checks on broken inputs.

#[test]
fn pinning_catches_a_tag_a_short_commit_and_a_missing_comment() {
    let workflow = "jobs:
  a:
    uses: kubewarden/github-actions/.github/workflows/x.yml@v7.0.1 # v7.0.1
  b:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@de0fac2e # v6.0.2
      - uses: docker/login-action@4907a6ddec9925e35a0a9e82d7399ccc52663121
      - uses: docker/metadata-action@030e881283bb7a6894de51c315a6bfe6a94e05cf # v6.0.0
      - uses: ./local-action
";
    let problems = pinning_problems("bad.yml", workflow);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("@v7.0.1"), "{problems:#?}");
    assert!(problems[1].contains("@de0fac2e"), "{problems:#?}");
    assert!(problems[2].contains("login-action"), "{problems:#?}");
}

#[test]
fn kwctl_catches_an_unlisted_version_and_a_stale_declaration() {
    let listed = listed_kwctl_versions(&format!(
        "text\nPassed with: {KWCTL_LIST_MARKER} `1.35.0`, `1.36.0-beta.1`\n"
    ))
    .expect("the list parses");
    assert_eq!(listed, ["1.35.0", "1.36.0-beta.1"]);
    let pin = "143b9e4b11ddc47370482267383586e6f1bc7efe";
    let call =
        format!("jobs:\n  t:\n    uses: {REUSABLE}/.github/workflows/t.yml@{pin} # v7.0.1\n");
    let good = format!("{KWCTL_DECLARATION} v1.35.0 at {REUSABLE}@{pin}\n{call}");
    assert_none(kwctl_problems("good.yml", &good, &listed));
    let unlisted = good.replace("v1.35.0", "v1.34.0");
    assert!(kwctl_problems("x.yml", &unlisted, &listed)[0].contains("has not passed"));
    let stale = call.replace(pin, "1a674c5c7f808bbe48765e5f9a01c6818a3642ac");
    let stale = format!("{KWCTL_DECLARATION} v1.35.0 at {REUSABLE}@{pin}\n{stale}");
    assert!(kwctl_problems("x.yml", &stale, &listed)[0].contains("was read at"));
    assert!(kwctl_problems("x.yml", &call, &listed)[0].contains("must declare"));
    assert!(listed_kwctl_versions("no marker here").is_err());
}

#[test]
fn order_catches_an_image_that_skips_the_release_and_a_condition_that_ignores_failure() {
    let order: &[&[&str]] = &[&["test"], &["release"], &["image"], &["hub"]];
    let good = "jobs:
  test: {}
  release: {needs: [test]}
  image: {needs: [release], if: \"!cancelled() && needs.release.result == 'success'\"}
  hub: {needs: image}
";
    assert_none(order_problems("good.yml", good, order));
    let skips = good.replace("image: {needs: [release]", "image: {needs: [test]");
    let problems = order_problems("bad.yml", &skips, order);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("`image` can run without `release`"));
    assert!(problems[1].contains("runs whatever `test` did"));
    let ignores = good.replace(" && needs.release.result == 'success'", "");
    let problems = order_problems("bad.yml", &ignores, order);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("runs whatever `release` did"));
    let missing = good.replace("  hub: {needs: image}\n", "");
    assert!(order_problems("bad.yml", &missing, order)[0].contains("no job `hub`"));
}
