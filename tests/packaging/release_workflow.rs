//! The release workflow pushes to the OCI repository named in metadata.yml, and publishes the
//! repository's own artifacthub-pkg.yml instead of regenerating it.

use super::*;

// ---------------------------------------------------------------------------------------------
// Release workflow

#[test]
fn release_workflow_pushes_to_the_metadata_oci_url() {
    let metadata = Metadata::load();
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
