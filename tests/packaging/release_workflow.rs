//! The release workflow pushes to the OCI repository named in metadata.yml, publishes the
//! repository's own artifacthub-pkg.yml instead of regenerating it, and the release checklist
//! covers every artifact it publishes.

use super::*;

// ---------------------------------------------------------------------------------------------
// Release workflow

#[test]
fn release_workflow_pushes_to_the_metadata_oci_url() {
    let metadata = PolicyMetadata::load();
    let what = ".github/workflows/release.yml";
    let workflow = yaml_file(what);
    let jobs = workflow["jobs"]
        .as_object()
        .unwrap_or_else(|| panic!("{what} has no jobs"));
    let targets: Vec<&str> = jobs
        .values()
        .filter_map(|job| job.pointer("/with/oci-target").and_then(Value::as_str))
        .collect();
    assert_eq!(
        targets,
        vec![metadata.annotation(ANNOTATION_OCI_URL)],
        "{what} must release to the {ANNOTATION_OCI_URL} of metadata.yml, once"
    );
}

/// `kwctl scaffold artifacthub` writes its own install text, a `kwctl scaffold manifest` without
/// `--allow-context-aware`: the release must publish the repository's file, never regenerate it.
#[test]
fn release_workflow_publishes_the_repositorys_artifacthub_package() {
    let what = ".github/workflows/release.yml";
    let workflow = yaml_file(what);
    let jobs = workflow["jobs"]
        .as_object()
        .unwrap_or_else(|| panic!("{what} has no jobs"));
    for (name, job) in jobs {
        assert_ne!(
            job.pointer("/with/artifacthub"),
            Some(&Value::Bool(true)),
            "{what}: job {name} regenerates artifacthub-pkg.yml"
        );
    }
    let publish = read(what);
    assert!(
        publish.contains("cp artifacthub-pkg.yml README.md artifacthub-repo.yml"),
        "{what} must publish the repository's artifacthub-pkg.yml"
    );
}

/// Every artifact a release publishes (the policy, and the template-cleanup image that the CronJob
/// of examples/cleanup pulls) is on the checklist of CONTRIBUTING.md: made public once, and
/// verified with a copy-paste `cosign verify` of this version after each release.
#[test]
fn the_release_checklist_covers_every_published_artifact() {
    let metadata = PolicyMetadata::load();
    let policy = metadata.annotation(ANNOTATION_OCI_URL).to_string();
    let owner = policy
        .split("/policies/")
        .next()
        .expect("split yields a first part")
        .to_string();
    let image = format!("{owner}/template-cleanup");
    let workflow = read(".github/workflows/release.yml");
    assert!(
        workflow.contains("IMAGE: ghcr.io/${{ github.repository_owner }}/template-cleanup"),
        ".github/workflows/release.yml no longer pushes {image}: update this check and the checklist"
    );
    let contributing = read("CONTRIBUTING.md");
    let releasing = contributing
        .split("\n## Releasing\n")
        .nth(1)
        .expect("CONTRIBUTING.md has a `## Releasing` section");
    for (artifact, package) in [
        (policy.as_str(), "policies/capi-template-guard"),
        (image.as_str(), "template-cleanup"),
    ] {
        let verify = format!("cosign verify {artifact}:v{}", metadata.version());
        assert!(
            releasing.contains(&verify),
            "CONTRIBUTING.md, Releasing: no `{verify}` after the release"
        );
        assert!(
            releasing.contains(&format!("`{package}`")),
            "CONTRIBUTING.md, Releasing: the package `{package}` is never made public"
        );
    }
}
