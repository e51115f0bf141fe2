//! The deploy-tool snippets of examples/deploy-tools/ keep and label exactly the templates.
//!
//! Each snippet carries one kustomize patch with a target. kustomize selects a target's group,
//! version, kind, name and namespace as regular expressions anchored at both ends
//! (`anchorRegex`, api/types/selector.go, kustomize v5.8.1), and a strategic-merge patch with a
//! target keeps each object's own kind, name and namespace (`ApplySmPatch`,
//! api/resource/resource.go). Flux helm-controller (internal/postrender/kustomize.go, v1.6.3) and
//! Argo CD hand the same patch to kustomize. `render` below follows those rules for the patches
//! the snippets use (labels and annotations only); where kubectl is on PATH, the Helm
//! post-renderer script renders the same sample through the real kustomize, and the two agree.

use super::*;
use regex::Regex;
use rstest::rstest;
use serde_json::json;

const COMPONENT: &str = "examples/deploy-tools/kustomization.yaml";
const FLUX: &str = "examples/deploy-tools/flux-helmrelease.yaml";
const ARGOCD: &str = "examples/deploy-tools/argocd-application.yaml";
const POST_RENDERER: &str = "examples/deploy-tools/helm-post-renderer.sh";

const CLEANUP_LABEL: &str = "capi-template-guard.kubewarden.io/cleanup";
const KEEP_ANNOTATIONS: [(&str, &str); 4] = [
    ("helm.sh/resource-policy", "keep"),
    ("kustomize.toolkit.fluxcd.io/prune", "disabled"),
    ("argocd.argoproj.io/sync-options", "Prune=false"),
    // With Prune=false a kept template dropped from Git leaves the Application OutOfSync; this
    // leaves it out of the Application's sync status (argo-cd/docs/user-guide/compare-options.md).
    ("argocd.argoproj.io/compare-options", "IgnoreExtraneous"),
];

/// What a chart for a Metal3 cluster renders, and what must stay untouched beside it.
const SAMPLE: &str = r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3MachineTemplate
metadata: {name: edge-a-workers-1b8e4a60, namespace: edge-sites}
spec: {nodeReuse: true, template: {spec: {dataTemplate: {name: edge-a-data-5c2e}}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KubeadmConfigTemplate
metadata: {name: edge-a-workers-7f3c9d2e, namespace: edge-sites, labels: {app: edge-a}}
spec: {template: {spec: {}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3DataTemplate
metadata: {name: edge-a-data-5c2e, namespace: edge-sites}
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: edge-a-md, namespace: edge-sites}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Machine
metadata: {name: edge-a-workers-x7k2p, namespace: edge-sites}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: KubeadmControlPlane
metadata: {name: edge-a-cp, namespace: edge-sites}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: edge-a-pod, namespace: edge-sites}
---
apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: edge-a-openshift, namespace: edge-sites}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3MachineTemplateBinding
metadata: {name: edge-a-invented, namespace: edge-sites}
"#;

/// One `patches` entry: its target and its patch, parsed.
#[derive(Debug, Clone, PartialEq)]
struct Patch {
    target: Value,
    patch: Value,
}

fn patches_at(relative: &str, pointer: &str) -> Vec<Patch> {
    let documents = yaml_documents(relative, &read(relative));
    assert_eq!(documents.len(), 1, "{relative} holds one object");
    seq_at(&documents[0], pointer, relative)
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let what = format!("{relative} {pointer}[{i}]");
            let text = str_at(entry, "/patch", &what);
            Patch {
                target: entry
                    .get("target")
                    .cloned()
                    .unwrap_or_else(|| panic!("{what} has no target")),
                patch: yaml_str(&what, text),
            }
        })
        .collect()
}

fn component_patches() -> Vec<Patch> {
    let component = yaml_file(COMPONENT);
    assert_eq!(
        component["kind"], "Component",
        "{COMPONENT} is a kustomize Component"
    );
    patches_at(COMPONENT, "/patches")
}

/// kustomize's anchoring of a selector pattern (`anchorRegex`).
fn anchored(pattern: &str) -> Regex {
    Regex::new(&format!("^(?:{pattern})$"))
        .unwrap_or_else(|e| panic!("target pattern {pattern:?} is not a valid regex: {e}"))
}

/// Whether a target selects the object, by kustomize's `SelectorRegex`: every non-empty field
/// of group, version, kind, name and namespace must match, anchored.
fn selects(target: &Value, object: &Value) -> bool {
    let fields = target.as_object().expect("a target is a mapping");
    for key in fields.keys() {
        assert!(
            ["group", "version", "kind", "name", "namespace"].contains(&key.as_str()),
            "target field `{key}` is not one this check implements; add it here first"
        );
    }
    let api_version = object["apiVersion"].as_str().unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let actual = |key: &str| match key {
        "group" => group,
        "version" => version,
        "kind" => object["kind"].as_str().unwrap_or(""),
        "name" => object["metadata"]["name"].as_str().unwrap_or(""),
        _ => object["metadata"]["namespace"].as_str().unwrap_or(""),
    };
    fields.iter().all(|(key, pattern)| {
        let pattern = pattern.as_str().expect("target fields are strings");
        pattern.is_empty() || anchored(pattern).is_match(actual(key))
    })
}

/// The patches applied to the objects: a selected object gets the patch's labels and
/// annotations, key by key, and keeps its own kind, name and namespace.
fn render(objects: &[Value], patches: &[Patch]) -> Vec<Value> {
    let mut out = objects.to_vec();
    for Patch { target, patch } in patches {
        let top: BTreeSet<&str> = patch
            .as_object()
            .expect("a patch")
            .keys()
            .map(String::as_str)
            .collect();
        let meta: BTreeSet<&str> = patch["metadata"]
            .as_object()
            .expect("patch metadata")
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            top.is_subset(&["apiVersion", "kind", "metadata"].into())
                && meta.is_subset(&["name", "labels", "annotations"].into()),
            "a snippet's patch may set only metadata.labels and metadata.annotations, found {patch}"
        );
        for object in out.iter_mut().filter(|o| selects(target, o)) {
            for map in ["labels", "annotations"] {
                if let Some(entries) = patch["metadata"][map].as_object() {
                    let slot = &mut object["metadata"][map];
                    if slot.is_null() {
                        *slot = json!({});
                    }
                    for (key, value) in entries {
                        slot[key] = value.clone();
                    }
                }
            }
        }
    }
    out
}

fn sample() -> Vec<Value> {
    yaml_documents("the sample", SAMPLE)
}

fn kept_and_labelled(object: &Value) -> bool {
    object["metadata"]["labels"][CLEANUP_LABEL] == "true"
        && KEEP_ANNOTATIONS
            .iter()
            .all(|(key, value)| object["metadata"]["annotations"][*key] == *value)
}

#[rstest]
#[case::component(COMPONENT, "/patches")]
#[case::flux_post_renderer(FLUX, "/spec/postRenderers/0/kustomize/patches")]
#[case::argocd_kustomize_patches(ARGOCD, "/spec/source/kustomize/patches")]
#[case::sylva_cluster_unit(
    "examples/sylva/values.yaml",
    "/units/cluster/helmrelease_spec/postRenderers/0/kustomize/patches"
)]
// Each workload cluster's `cluster` unit gets it from the management cluster's
// mgmt_cluster_state_values (examples/sylva/workload-cluster.values.yaml says why).
#[case::sylva_workload_cluster_unit(
    "examples/sylva/values.yaml",
    "/mgmt_cluster_state_values/units/cluster/helmrelease_spec/postRenderers/0/kustomize/patches"
)]
fn each_snippet_carries_the_components_patch(#[case] file: &str, #[case] pointer: &str) {
    assert_eq!(
        patches_at(file, pointer),
        component_patches(),
        "{file} {pointer} must be the patch of {COMPONENT}, target included"
    );
}

#[rstest]
#[case::metal3_machine_template("Metal3MachineTemplate", true)]
#[case::kubeadm_config_template("KubeadmConfigTemplate", true)]
#[case::metal3_data_template("Metal3DataTemplate", true)]
#[case::machine_deployment("MachineDeployment", false)]
#[case::metal3_machine("Metal3Machine", false)]
#[case::control_plane("KubeadmControlPlane", false)]
#[case::core_pod_template_by_group("PodTemplate", false)]
#[case::other_projects_template_by_group("Template", false)]
#[case::kind_anchored_at_the_end("Metal3MachineTemplateBinding", false)]
fn the_component_keeps_and_labels_templates_and_nothing_else(
    #[case] kind: &str,
    #[case] templated: bool,
) {
    let before = sample();
    let after = render(&before, &component_patches());
    let index = before
        .iter()
        .position(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("the sample has no {kind}"));
    if templated {
        assert!(
            kept_and_labelled(&after[index]),
            "{kind} must get the label and the keep annotations: {}",
            after[index]
        );
        let mut stripped = after[index].clone();
        for map in ["labels", "annotations"] {
            let entries = stripped["metadata"][map].as_object_mut().expect("a map");
            entries.retain(|key, _| {
                key != CLEANUP_LABEL && !KEEP_ANNOTATIONS.iter().any(|(k, _)| k == key)
            });
            if entries.is_empty() && before[index]["metadata"].get(map).is_none() {
                stripped["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .remove(map);
            }
        }
        assert_eq!(
            stripped, before[index],
            "{kind}: only the label and the annotations may change"
        );
    } else {
        assert_eq!(
            after[index], before[index],
            "{kind} must come out untouched"
        );
    }
}

/// The check itself: an unanchored pattern or a target without a group would select more.
#[rstest]
#[case::unanchored_kind(json!({"kind": "Template"}), "Metal3MachineTemplate", false)]
#[case::anchored_suffix(json!({"kind": ".*Template"}), "Metal3MachineTemplateBinding", false)]
#[case::no_group(json!({"kind": ".*Template"}), "PodTemplate", true)]
#[case::alternation_is_grouped(json!({"kind": "Metal3Machine|Metal3DataTemplate"}), "Metal3MachineTemplate", false)]
fn kustomize_target_semantics(#[case] target: Value, #[case] kind: &str, #[case] selected: bool) {
    let object = sample()
        .into_iter()
        .find(|o| o["kind"] == kind)
        .expect("a sample object");
    assert_eq!(selects(&target, &object), selected, "{target} on {kind}");
}

/// Helm 3 runs the script as its post-renderer; for Helm 4 the script writes a postrenderer/v1
/// plugin that runs it, with the Component beside it.
#[test]
fn the_helm_post_renderer_is_executable_and_writes_its_helm4_plugin() {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(root().join(POST_RENDERER))
        .expect("the script")
        .permissions()
        .mode();
    assert!(
        mode & 0o111 != 0,
        "{POST_RENDERER} must be executable (git mode 100755)"
    );
    let dir = std::env::temp_dir().join(format!("capi-template-keep-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let output = std::process::Command::new(root().join(POST_RENDERER))
        .arg("--helm4-plugin")
        .arg(&dir)
        .output()
        .expect("the script runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let descriptor = fs::read_to_string(dir.join("plugin.yaml")).expect("the plugin descriptor");
    let copied = |name: &str| {
        fs::read(dir.join(name)).ok()
            == fs::read(root().join("examples/deploy-tools").join(name)).ok()
    };
    let complete = copied("helm-post-renderer.sh") && copied("kustomization.yaml");
    let _ = fs::remove_dir_all(&dir);
    assert!(
        complete,
        "the plugin directory must hold the script and the Component"
    );
    let plugin = yaml_str("the Helm 4 plugin descriptor", &descriptor);
    assert_eq!(plugin["apiVersion"], "v1");
    assert_eq!(
        plugin["type"], "postrenderer/v1",
        "Helm 4 finds post-renderers by this type (pkg/postrenderer/postrenderer.go)"
    );
    assert_eq!(plugin["runtime"], "subprocess");
    assert_eq!(
        plugin["runtimeConfig"]["platformCommand"][0]["command"],
        "${HELM_PLUGIN_DIR}/helm-post-renderer.sh"
    );
}

/// The real kustomize, where kubectl is on PATH (this project's machines have it): the
/// post-renderer script's output equals `render`'s.
#[test]
fn the_post_renderer_script_renders_what_the_check_predicts() {
    if !crate::kubectl_on_path("the post-renderer's real output") {
        return;
    }
    use std::io::Write;
    let mut child = std::process::Command::new(root().join(POST_RENDERER))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the post-renderer starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(SAMPLE.as_bytes())
        .expect("the sample is written");
    let output = child.wait_with_output().expect("the post-renderer ends");
    assert!(
        output.status.success(),
        "{POST_RENDERER}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let key = |o: &Value| format!("{}/{}", o["kind"], o["metadata"]["name"]);
    let by_key = |objects: Vec<Value>| -> BTreeMap<String, Value> {
        objects.into_iter().map(|o| (key(&o), o)).collect()
    };
    let rendered = by_key(yaml_documents(
        "post-renderer output",
        &String::from_utf8_lossy(&output.stdout),
    ));
    let predicted = by_key(render(&sample(), &component_patches()));
    assert_eq!(rendered, predicted);
    assert_eq!(
        rendered.values().filter(|o| kept_and_labelled(o)).count(),
        3
    );
}
