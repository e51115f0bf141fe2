//! `validate()` end to end through an in-memory host, on requests from `test_data/requests/`
//! shaped as the API server sends them.

use super::*;
use crate::testing::{FakeHost, list_of};
use guard::testing::fixture;
use serde_json::{Value, json};

const V1_MD: &str = "cluster.x-k8s.io/v1beta1";
const V2_MD: &str = "cluster.x-k8s.io/v1beta2";
const V1_CP: &str = "controlplane.cluster.x-k8s.io/v1beta1";
const V2_CP: &str = "controlplane.cluster.x-k8s.io/v1beta2";
const V1_M3: &str = "infrastructure.cluster.x-k8s.io/v1beta1";
const V2_M3: &str = "infrastructure.cluster.x-k8s.io/v1beta2";

fn request(case: &str) -> Value {
    let file = format!(
        "{}/test_data/requests/{case}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
}

fn run(case: &str, settings: Value, host: &FakeHost) -> ValidationResponse {
    let payload = json!({"request": request(case), "settings": settings});
    let bytes = answer(payload.to_string().as_bytes(), host).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Asserts that `response` refuses with `code` and returns its message.
fn refusal(response: ValidationResponse, code: u16) -> String {
    assert!(!response.accepted, "accepted: {response:?}");
    assert_eq!(response.code, Some(code), "{response:?}");
    response.message.expect("a refusal has a message")
}

fn v2() -> Value {
    json!({"capiApiVersion": "v1beta2", "controlPlaneApiVersion": "v1beta2", "metal3ApiVersion": "v1beta2"})
}

fn list(api_version: &str, kind: &str, files: &[&str]) -> String {
    let items: Vec<Value> = files.iter().map(|f| fixture(f)).collect();
    list_of(api_version, kind, &items)
}

/// The v1beta1 lists of a namespace with one MachineDeployment, its old MachineSet, a KCP and one
/// Metal3Machine; no other control-plane provider is installed.
fn v1_namespace() -> FakeHost {
    FakeHost::v1beta1_only()
        .answer_list(
            V1_MD,
            "MachineDeployment",
            &list(
                V1_MD,
                "MachineDeployment",
                &["v1beta1/04-machinedeployment.json"],
            ),
        )
        .answer_list(
            V1_MD,
            "MachineSet",
            &list(
                V1_MD,
                "MachineSet",
                &["v1beta1/05-machineset-old-revision.json"],
            ),
        )
        .answer_list(
            V1_CP,
            "KubeadmControlPlane",
            &list(
                V1_CP,
                "KubeadmControlPlane",
                &["v1beta1/07-kubeadmcontrolplane.json"],
            ),
        )
        .answer_list(V1_MD, "ClusterClass", &list(V1_MD, "ClusterClass", &[]))
        .answer_list(
            V1_M3,
            "Metal3Machine",
            &list(
                V1_M3,
                "Metal3Machine",
                &["v1beta1/06-metal3machine-worker.json"],
            ),
        )
}

/// With the default `auto` versions on a v1beta1-only release: the CRDs, then one list per
/// installed kind that can keep a node-reuse machine template, each at the version it is served.
const V1_LISTS: [&str; 6] = [
    "list-all apiextensions.k8s.io/v1 CustomResourceDefinition",
    "list-all cluster.x-k8s.io/v1beta1 MachineDeployment",
    "list-all cluster.x-k8s.io/v1beta1 MachineSet",
    "list controlplane.cluster.x-k8s.io/v1beta1 KubeadmControlPlane edge-sites",
    "list cluster.x-k8s.io/v1beta1 ClusterClass edge-sites",
    "list infrastructure.cluster.x-k8s.io/v1beta1 Metal3Machine edge-sites",
];

#[test]
fn template_in_use_is_rejected_with_every_list_read_once() {
    let host = v1_namespace();
    let response = run("guard-row1-machinedeployment-v1beta1", json!({}), &host);
    assert_eq!(
        refusal(response, 409),
        "Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e is still in use and was not deleted. It is referenced by MachineDeployment edge-a-md-storage (spec.template.spec.infrastructureRef). Point them at another template and let the rollout finish, or delete them first. Then delete the template again."
    );
    assert_eq!(host.calls(), V1_LISTS);
}

#[test]
fn dry_run_gets_the_same_answer() {
    let real = run(
        "guard-row1-machinedeployment-v1beta1",
        json!({}),
        &v1_namespace(),
    );
    let dry = run(
        "guard-row1-machinedeployment-dryrun",
        json!({}),
        &v1_namespace(),
    );
    assert_eq!(
        (real.accepted, real.code, real.message),
        (dry.accepted, dry.code, dry.message)
    );
}

#[test]
fn unused_template_is_accepted() {
    let host = v1_namespace();
    let response = run("guard-unused-template", json!({}), &host);
    assert!(response.accepted);
    assert_eq!(response.warnings, None);
    assert_eq!(host.calls(), V1_LISTS);
}

/// The v1beta2 lists a bootstrap template's deletion reads: a MachineDeployment naming it, no
/// MachineSets, no ClusterClasses.
fn bootstrap_namespace(host: FakeHost) -> FakeHost {
    host.answer_list(
        V2_MD,
        "MachineDeployment",
        &list(
            V2_MD,
            "MachineDeployment",
            &["v1beta2/04-machinedeployment.json"],
        ),
    )
    .answer_list(V2_MD, "MachineSet", &list(V2_MD, "MachineSet", &[]))
    .answer_list(V2_MD, "ClusterClass", &list(V2_MD, "ClusterClass", &[]))
}

#[test]
fn bootstrap_template_reads_only_what_can_name_it() {
    let host = bootstrap_namespace(FakeHost::new());
    let response = run("guard-row1-bootstrap-template", v2(), &host);
    assert!(
        refusal(response, 409).contains(
            "MachineDeployment edge-a-md-storage (spec.template.spec.bootstrap.configRef)"
        )
    );
    let kinds: Vec<String> = host
        .calls()
        .iter()
        .map(|c| c.split(' ').nth(2).unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "CustomResourceDefinition",
            "MachineDeployment",
            "MachineSet",
            "ClusterClass"
        ]
    );
}

#[test]
fn clusterctl_move_is_accepted_without_lookups() {
    let host = FakeHost::new();
    let response = run("guard-row5-clusterctl-move", v2(), &host);
    assert!(response.accepted);
    assert!(host.calls().is_empty());
}

fn v2_namespace_with_cluster(cluster_answer: Result<Value, &str>) -> FakeHost {
    let fake = FakeHost::new()
        .answer_list(
            V2_MD,
            "MachineDeployment",
            &list(
                V2_MD,
                "MachineDeployment",
                &["v1beta2/04-machinedeployment.json"],
            ),
        )
        .answer_list(V2_MD, "MachineSet", &list(V2_MD, "MachineSet", &[]))
        .answer_list(
            V2_CP,
            "KubeadmControlPlane",
            &list(V2_CP, "KubeadmControlPlane", &[]),
        )
        .answer_list(V2_MD, "ClusterClass", &list(V2_MD, "ClusterClass", &[]))
        .answer_list(V2_M3, "Metal3Machine", &list(V2_M3, "Metal3Machine", &[]));
    match cluster_answer {
        Ok(found) => fake.answer_get(V2_MD, "Cluster", "edge-a", &found.to_string()),
        Err(error) => fake.fail_get(V2_MD, "Cluster", "edge-a", error),
    }
}

#[test]
fn owning_cluster_being_deleted_releases_the_template() {
    let host = v2_namespace_with_cluster(Ok(
        json!({"metadata": {"name": "edge-a", "deletionTimestamp": "2026-11-29T10:00:00Z"}}),
    ));
    let response = run("guard-row6-cluster-deleting", v2(), &host);
    assert!(response.accepted);
    assert_eq!(
        host.calls().last().map(String::as_str),
        Some("get cluster.x-k8s.io/v1beta2 Cluster edge-sites/edge-a cache=true")
    );
}

#[test]
fn owning_cluster_gone_releases_the_template() {
    let host = v2_namespace_with_cluster(Err(
        "Callback evaluation failure: Cannot find cluster.x-k8s.io/v1beta2/Cluster named 'edge-a' inside of namespace 'Some(\"edge-sites\")'",
    ));
    assert!(run("guard-row6-cluster-gone", v2(), &host).accepted);
}

#[test]
fn live_owning_cluster_keeps_the_rejection() {
    let host = v2_namespace_with_cluster(Ok(json!({"metadata": {"name": "edge-a"}})));
    let response = run("guard-row6-cluster-live", v2(), &host);
    refusal(response, 409);
}

#[test]
fn failed_cluster_lookup_fails_closed() {
    let host = v2_namespace_with_cluster(Err("Callback evaluation failure: timed out"));
    let response = run("guard-row6-cluster-live", v2(), &host);
    assert!(refusal(response, 500).contains("getting Cluster edge-sites/edge-a (cluster.x-k8s.io/v1beta2) failed: Callback evaluation failure: timed out."));
}

/// MachineDeployments list fine; MachineSets are missing from contextAwareResources. (A list
/// the API server refuses never reaches the policy on the real host: its reflector retries.)
fn machine_sets_forbidden() -> FakeHost {
    FakeHost::v1beta1_only()
        .answer_list(
            V1_MD,
            "MachineDeployment",
            &list(V1_MD, "MachineDeployment", &[]),
        )
        .fail_list(
            V1_MD,
            "MachineSet",
            "Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineSet resources. The violation has been reported.",
        )
}

#[test]
fn failed_list_fails_closed_and_stops_looking() {
    let host = machine_sets_forbidden();
    let response = run("guard-lookup-failure", json!({}), &host);
    assert_eq!(
        refusal(response, 500),
        "capi-template-guard could not check whether Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e is still in use, so the deletion was refused: listing MachineSet objects (cluster.x-k8s.io/v1beta1) in every namespace failed: Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineSet resources. The violation has been reported. Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineSet to the policy's contextAwareResources. To accept deletions when a lookup fails, set failOpenOnLookupError to true."
    );
    // The CRDs, MachineDeployments, then MachineSets: nothing after the failure.
    assert_eq!(host.calls().len(), 3);
}

#[test]
fn failed_list_can_fail_open_with_a_warning() {
    let host = machine_sets_forbidden();
    let response = run(
        "guard-lookup-failure",
        json!({"failOpenOnLookupError": true}),
        &host,
    );
    assert!(response.accepted);
    let warnings = response.warnings.unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with("Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineSet to the policy's contextAwareResources. Deleted Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e unchecked (failOpenOnLookupError): listing MachineSet objects"), "{}", warnings[0]);
    assert_eq!(warnings[0].chars().count(), 256);
}

#[test]
fn capi_kind_not_served_points_at_the_version_setting() {
    let host = FakeHost::v1beta1_only();
    let response = run("guard-lookup-failure", v2(), &host);
    assert_eq!(
        refusal(response, 500),
        "capi-template-guard could not check whether Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e is still in use, so the deletion was refused: listing MachineDeployment objects (cluster.x-k8s.io/v1beta2) in namespace edge-sites failed: capiApiVersion pins MachineDeployment to v1beta2, and its CRD serves v1beta1. Set capiApiVersion to auto. To accept deletions when a lookup fails, set failOpenOnLookupError to true."
    );
    // Only the CRDs were read: the version is known to be wrong before any list.
    assert_eq!(host.calls().len(), 1);
}

/// Empty lists at v1beta1 for the usual kinds: a namespace with nothing in it.
fn empty_v1_namespace(host: FakeHost) -> FakeHost {
    [
        (V1_MD, "MachineDeployment"),
        (V1_MD, "MachineSet"),
        (V1_CP, "KubeadmControlPlane"),
        (V1_MD, "ClusterClass"),
        (V1_M3, "Metal3Machine"),
    ]
    .into_iter()
    .fold(host, |c, (v, k)| c.answer_list(v, k, &list_of(v, k, &[])))
}

/// A provider newer than the policy (a Talos release serving only a future v1alpha4) is scanned
/// at that version: a reference found keeps the template and names the object and the field;
/// a scan the policy may not make fails closed naming the grant it needs.
#[test]
fn a_kind_served_only_at_an_unknown_version_is_scanned() {
    let tcp = "controlplane.cluster.x-k8s.io/v1alpha4";
    let naming = json!({"kind": "TalosControlPlane", "metadata": {"name": "edge-a-cp"},
        "spec": {"controlPlane": {"machines": [{"infrastructureRef": {"kind": "Metal3MachineTemplate",
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "name": "edge-a-workers-7f3c9d2e"}}]}}});
    let host =
        empty_v1_namespace(FakeHost::v1beta1_only().install("TalosControlPlane", &["v1alpha4"]))
            .answer_list(
                tcp,
                "TalosControlPlane",
                &list_of(tcp, "TalosControlPlane", &[naming]),
            );
    let message = refusal(run("guard-lookup-failure", json!({}), &host), 409);
    assert!(
        message.contains("It is referenced by TalosControlPlane edge-a-cp (spec.controlPlane.machines[0].infrastructureRef)."),
        "{message}"
    );
    let denied = empty_v1_namespace(
        FakeHost::v1beta1_only().install("TalosControlPlane", &["v1alpha4"]),
    )
    .fail_list(tcp, "TalosControlPlane", "Policy has not been granted access to Kubernetes controlplane.cluster.x-k8s.io/v1alpha4/TalosControlPlane resources. The violation has been reported.");
    let message = refusal(run("guard-lookup-failure", json!({}), &denied), 500);
    assert!(
        message.contains("add apiVersion controlplane.cluster.x-k8s.io/v1alpha4, kind TalosControlPlane to its contextAwareResources"),
        "{message}"
    );
}

#[test]
fn without_access_to_the_crds_the_message_names_both_grants() {
    let host = FakeHost::new().answer_crds(Err("Policy has not been granted access to Kubernetes apiextensions.k8s.io/v1/CustomResourceDefinition resources. The violation has been reported."));
    let response = run("guard-lookup-failure", json!({}), &host);
    let message = refusal(response, 500);
    assert!(
        message.contains("listing CustomResourceDefinition objects (apiextensions.k8s.io/v1) failed")
            && message.contains("add apiVersion apiextensions.k8s.io/v1, kind CustomResourceDefinition to its contextAwareResources, and let the policy server's service account get, list and watch customresourcedefinitions.apiextensions.k8s.io."),
        "{message}"
    );
}

#[test]
fn an_unreadable_crd_list_fails_closed() {
    let host = FakeHost::new().answer_crds(Ok(r#"{"kind":"CustomResourceDefinitionList","items":[{"kind":"CustomResourceDefinition","metadata":{"name":"x"},"spec":{}}]}"#));
    let message = refusal(run("guard-lookup-failure", json!({}), &host), 500);
    assert!(
        message.contains("the CustomResourceDefinition x has no spec.group"),
        "{message}"
    );
}

#[test]
fn a_kind_without_a_crd_costs_no_call_and_an_installed_one_is_read_at_its_version() {
    let talos = fixture::<Value>("v1beta2/08-kubeadmcontrolplane.json");
    let mut talos = talos.clone();
    talos["apiVersion"] = json!("controlplane.cluster.x-k8s.io/v1alpha3");
    talos["kind"] = json!("TalosControlPlane");
    talos["spec"] = json!({"infrastructureTemplate": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate", "name": "edge-a-workers-00000000"}});
    let talos_api = "controlplane.cluster.x-k8s.io/v1alpha3";
    let host = v1_namespace()
        .uninstall("KubeadmControlPlane")
        .install("TalosControlPlane", &["v1alpha3"])
        .answer_list(
            talos_api,
            "TalosControlPlane",
            &list_of(talos_api, "TalosControlPlane", &[talos]),
        );
    let message = refusal(run("guard-unused-template", json!({}), &host), 409);
    assert!(
        message.contains("TalosControlPlane edge-a-cp (spec.infrastructureTemplate)"),
        "{message}"
    );
    // Talos reads its template at the namespace the reference gives: listed across namespaces.
    let calls = host.calls();
    assert!(calls.contains(
        &"list-all controlplane.cluster.x-k8s.io/v1alpha3 TalosControlPlane".to_string()
    ));
    assert!(
        !calls.iter().any(|c| c.contains("KubeadmControlPlane")),
        "{calls:?}"
    );
}

#[test]
fn access_not_granted_points_at_context_aware_resources() {
    let host = FakeHost::v1beta1_only().fail_list(
        V1_MD,
        "MachineDeployment",
        "Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineDeployment resources. The violation has been reported.",
    );
    let response = run("guard-lookup-failure", json!({}), &host);
    assert!(response.message.unwrap().contains("Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineDeployment to the policy's contextAwareResources."));
}

#[test]
fn delete_without_old_object_is_rejected_as_bad_request() {
    let host = FakeHost::new();
    let response = run("guard-delete-without-oldobject", v2(), &host);
    assert_eq!(
        refusal(response, 400),
        "capi-template-guard cannot check the deletion of Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e and refused it: the API server sent no oldObject with the DELETE, so the template cannot be read; the API server must send oldObject on DELETE (every supported Kubernetes release does), so check what stands between it and the policy server."
    );
    assert!(host.calls().is_empty());
}

#[test]
fn other_kinds_and_operations_need_no_lookup() {
    for case in [
        "guard-delete-metal3machine",
        "guard-update-template",
        "mutate-update-ignored",
    ] {
        let host = FakeHost::new();
        let response = run(case, v2(), &host);
        assert!(response.accepted, "{case}");
        assert!(response.mutated_object.is_none(), "{case}");
        assert!(host.calls().is_empty(), "{case}: {:?}", host.calls());
    }
}

#[test]
fn unreadable_payload_is_rejected_with_a_sentence() {
    let bytes = answer(b"{not json", &FakeHost::new()).unwrap();
    let response: ValidationResponse = serde_json::from_slice(&bytes).unwrap();
    assert!(refusal(response, 400).starts_with(
        "capi-template-guard cannot evaluate this request: the admission request cannot be read (key must be a string"
    ));
}

#[test]
fn invalid_settings_in_a_request_are_rejected() {
    let response = run(
        "guard-row5-clusterctl-move",
        json!({"capiApiVersion": "v2"}),
        &FakeHost::new(),
    );
    assert_eq!(
        refusal(response, 400),
        "capi-template-guard cannot evaluate this request because its settings are invalid: The setting capiApiVersion must be \"auto\", \"v1beta1\" or \"v1beta2\", not \"v2\"."
    );
}

#[test]
fn settings_with_an_invalid_annotation_key_in_a_request_are_rejected() {
    let response = run(
        "mutate-create-from-annotations",
        json!({"nodeReuseAnnotation": "Not A Key"}),
        &FakeHost::new(),
    );
    assert!(
        refusal(response, 400)
            .contains("The setting nodeReuseAnnotation is not a valid annotation key")
    );
}

#[test]
fn validate_settings_answers_in_sentences() {
    let answer = |payload: &str| -> SettingsValidationResponse {
        serde_json::from_slice(&validate_settings(payload.as_bytes()).unwrap()).unwrap()
    };
    assert!(answer("{}").valid);
    let bad = answer(r#"{"nodeReuse": true}"#);
    assert!(!bad.valid);
    assert!(
        bad.message
            .unwrap()
            .starts_with("Unknown setting(s): nodeReuse.")
    );
    let not_json = answer("nope");
    assert!(!not_json.valid);
    assert!(
        not_json
            .message
            .unwrap()
            .starts_with("The settings are not valid JSON")
    );
}

fn template_answer(host: FakeHost) -> FakeHost {
    host.answer_get(
        V2_M3,
        "Metal3MachineTemplate",
        "edge-a-workers-7f3c9d2e",
        &fixture::<Value>("v1beta2/01-metal3machinetemplate-workers.json").to_string(),
    )
}

#[test]
fn new_machine_gets_the_template_intent() {
    let host = template_answer(FakeHost::new());
    let response = run("mutate-create-from-annotations", v2(), &host);
    assert!(response.accepted);
    let mut expected: Value = request("mutate-create-from-annotations")["object"].clone();
    expected["metadata"]["annotations"]["capi-template-guard.kubewarden.io/node-reuse"] =
        json!("true");
    expected["metadata"]["annotations"]["capi-template-guard.kubewarden.io/source-template"] =
        json!("edge-a-workers-7f3c9d2e");
    expected["spec"]["automatedCleaningMode"] = json!("disabled");
    assert_eq!(response.mutated_object, Some(expected));
    assert_eq!(
        host.calls(),
        [
            "list-all apiextensions.k8s.io/v1 CustomResourceDefinition",
            "get infrastructure.cluster.x-k8s.io/v1beta2 Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e cache=false"
        ]
    );
}

#[test]
fn machine_without_annotations_finds_the_template_through_its_machine_set() {
    let ms: Value = json!({"spec": {"template": {"spec": {"infrastructureRef": {
        "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "edge-a-workers-7f3c9d2e"}}}}});
    let host = template_answer(FakeHost::new().answer_get(
        V2_MD,
        "MachineSet",
        "edge-a-md-storage-7c4b9d5f8",
        &ms.to_string(),
    ));
    let response = run("mutate-create-owner-fallback", v2(), &host);
    let mutated = response.mutated_object.unwrap();
    assert_eq!(
        mutated["metadata"]["annotations"]["capi-template-guard.kubewarden.io/source-template"],
        json!("edge-a-workers-7f3c9d2e")
    );
    assert_eq!(host.calls().len(), 3);
}

#[test]
fn already_mutated_machine_is_accepted_without_patch() {
    let response = run(
        "mutate-already-mutated",
        v2(),
        &template_answer(FakeHost::new()),
    );
    assert!(response.accepted);
    assert_eq!(response.mutated_object, None);
    assert_eq!(response.warnings, None);
}

#[test]
fn missing_template_never_blocks_creation() {
    let host = FakeHost::new().fail_get(
        V2_M3,
        "Metal3MachineTemplate",
        "edge-a-workers-7f3c9d2e",
        "Callback evaluation failure: Cannot find infrastructure.cluster.x-k8s.io/v1beta2/Metal3MachineTemplate named 'edge-a-workers-7f3c9d2e' inside of namespace 'Some(\"edge-sites\")'",
    );
    let response = run("mutate-template-missing", v2(), &host);
    assert!(response.accepted);
    assert_eq!(response.mutated_object, None);
    assert_eq!(
        response.warnings,
        Some(vec!["Metal3Machine edge-sites/edge-a-md-storage-7c4b9d5f8-q2m9z created without its template's nodeReuse and automatedCleaningMode: its template Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e does not exist.".to_string()])
    );
}

#[test]
fn failed_template_lookup_never_blocks_creation() {
    let host = FakeHost::new(); // no answer: the lookup fails
    let response = run("mutate-template-missing", v2(), &host);
    assert!(response.accepted);
    assert_eq!(response.mutated_object, None);
    let warning = &response.warnings.unwrap()[0];
    assert!(warning.starts_with("Check that the policy server's service account may get, list and watch metal3machinetemplates.infrastructure.cluster.x-k8s.io. Metal3Machine edge-sites/edge-a-md-storage-7c4b9d5f8-q2m9z created without"), "{warning}");
    assert!(warning.chars().count() <= 256);
}

#[test]
fn mutation_can_be_switched_off() {
    let host = FakeHost::new();
    let response = run(
        "mutate-create-from-annotations",
        json!({"mutateMetal3Machines": false}),
        &host,
    );
    assert!(response.accepted);
    assert_eq!(response.mutated_object, None);
    assert!(host.calls().is_empty());
}

/// The machine of `mutate-create-owner-fallback` with a control-plane owner instead.
fn run_with_owner(owner: Value, host: &FakeHost) -> ValidationResponse {
    let mut req = request("mutate-create-owner-fallback");
    req["object"]["metadata"]["ownerReferences"] = json!([owner]);
    let payload = json!({"request": req, "settings": v2()});
    serde_json::from_slice(&answer(payload.to_string().as_bytes(), host).unwrap()).unwrap()
}

#[test]
fn control_plane_owner_names_the_template() {
    let kcp: Value = fixture("v1beta2/08-kubeadmcontrolplane.json");
    let template: Value = fixture("v1beta2/02-metal3machinetemplate-controlplane.json");
    let host = FakeHost::new()
        .answer_get(V2_CP, "KubeadmControlPlane", "edge-a-cp", &kcp.to_string())
        .answer_get(
            V2_M3,
            "Metal3MachineTemplate",
            "edge-a-cp-5d21c0aa",
            &template.to_string(),
        );
    let response = run_with_owner(
        json!({"apiVersion": V2_CP, "kind": "KubeadmControlPlane", "name": "edge-a-cp", "uid": "u"}),
        &host,
    );
    let mutated = response.mutated_object.unwrap();
    assert_eq!(
        mutated["metadata"]["annotations"]["capi-template-guard.kubewarden.io/source-template"],
        json!("edge-a-cp-5d21c0aa")
    );
    assert_eq!(
        host.calls()[1],
        "get controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane edge-sites/edge-a-cp cache=true"
    );
}

#[test]
fn missing_owner_never_blocks_creation() {
    let host = FakeHost::new().fail_get(
        V2_MD,
        "MachineSet",
        "gone",
        "Callback evaluation failure: Cannot find cluster.x-k8s.io/v1beta2/MachineSet named 'gone' inside of namespace 'Some(\"edge-sites\")'",
    );
    let response = run_with_owner(
        json!({"apiVersion": V2_MD, "kind": "MachineSet", "name": "gone", "uid": "u"}),
        &host,
    );
    assert!(response.accepted);
    assert_eq!(response.mutated_object, None);
    assert_eq!(
        response.warnings,
        Some(vec!["Metal3Machine edge-sites/edge-a-md-storage-7c4b9d5f8-q2m9z created without its template's nodeReuse and automatedCleaningMode: its owner MachineSet gone does not exist or names no Metal3MachineTemplate.".to_string()])
    );
}

#[test]
fn machine_without_any_source_never_blocks_creation() {
    let host = FakeHost::new();
    let response = run_with_owner(
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "m", "uid": "u"}),
        &host,
    );
    assert!(response.accepted);
    assert!(response.warnings.unwrap()[0].contains(
        "it has no valid cluster.x-k8s.io/cloned-from-name annotation naming a Metal3MachineTemplate"
    ));
    assert!(host.calls().is_empty());
}

/// A release that no longer serves v1beta1: the lists for a bootstrap template.
fn v2_only_bootstrap_namespace() -> FakeHost {
    bootstrap_namespace(FakeHost::serving(&["v1beta2"]))
}

#[test]
fn a_v1beta2_only_release_needs_no_settings_and_no_fallback() {
    let host = v2_only_bootstrap_namespace();
    let response = run("guard-row1-bootstrap-template", json!({}), &host);
    refusal(response, 409);
    assert_eq!(host.calls().len(), 4, "{:?}", host.calls());
}

#[test]
fn explicit_v1beta1_after_v1beta1_is_dropped_names_the_setting() {
    let host = v2_only_bootstrap_namespace();
    let response = run(
        "guard-row1-bootstrap-template",
        json!({"capiApiVersion": "v1beta1"}),
        &host,
    );
    let message = refusal(response, 500);
    assert!(
        message.contains(
            "capiApiVersion pins MachineDeployment to v1beta1, and its CRD serves v1beta2"
        ) && message.contains("Set capiApiVersion to auto."),
        "{message}"
    );
}

/// The scan of kinds the catalogue does not know: declared kinds, and can_i before a list.
mod scan;
