//! The release workflow pushes to the OCI repository named in metadata.yml.

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
