//! template-cleanup's manifests (examples/cleanup/), its image and its release agree with the
//! guard and with each other: it may read the guard and delete exactly the template kinds the
//! guard's rules guard, runs the image the release builds and signs, and runs locked down. (That
//! the CronJob's arguments parse as template-cleanup's flags is checked by the template-cleanup
//! crate itself, with its own parser: template-cleanup/src/cli.rs.)

use super::*;

const COMPONENT: &str = "examples/cleanup/component/cleanup.yaml";
const KUSTOMIZATION: &str = "examples/cleanup/component/kustomization.yaml";

fn manifests() -> Vec<Value> {
    yaml_documents(COMPONENT, &read(COMPONENT))
}

/// The first object of `kind` in the template-cleanup component.
pub(super) fn object(kind: &str) -> Value {
    manifests()
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("{COMPONENT} has no {kind}"))
}

fn container() -> Value {
    object("CronJob")
        .pointer("/spec/jobTemplate/spec/template/spec/containers/0")
        .cloned()
        .expect("the CronJob has a container")
}

fn args() -> Vec<String> {
    strings(&container()["args"], "the CronJob's args")
}

/// (group, resource) -> verbs of the ClusterRole's rules without resourceNames.
fn granted() -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (i, rule) in seq_at(&object("ClusterRole"), "/rules", COMPONENT)
        .iter()
        .enumerate()
    {
        if rule.get("resourceNames").is_some() {
            continue;
        }
        let what = format!("{COMPONENT} ClusterRole rules[{i}]");
        let verbs = strings(&rule["verbs"], &what);
        for group in strings(&rule["apiGroups"], &what) {
            for resource in strings(&rule["resources"], &what) {
                out.entry((group.clone(), resource))
                    .or_default()
                    .extend(verbs.iter().cloned());
            }
        }
    }
    out
}

#[test]
fn the_job_reads_the_guard_and_the_deploy_tools_and_changes_nothing_else() {
    let role = object("ClusterRole");
    let guard_name = args()
        .iter()
        .find_map(|a| a.strip_prefix("--policy=").map(str::to_string))
        .unwrap_or_else(|| "capi-template-guard".to_string());
    let gets = |group: &str, resource: &str, name: &str| {
        seq_at(&role, "/rules", COMPONENT).iter().any(|r| {
            r["apiGroups"] == serde_json::json!([group])
                && r["resources"] == serde_json::json!([resource])
                && r["resourceNames"] == serde_json::json!([name])
                && r["verbs"] == serde_json::json!(["get"])
        })
    };
    assert!(
        gets(
            "policies.kubewarden.io",
            "clusteradmissionpolicies",
            &guard_name
        ),
        "the ClusterRole must let the job get the guard {guard_name}"
    );
    // the pre-flight reads the guard's ValidatingWebhookConfiguration, which kubewarden-controller
    // v1.36.0-beta.1 names clusterwide-<policy> (api/policies/v1/clusteradmissionpolicy_types.go,
    // GetUniqueName)
    let webhook = format!("clusterwide-{guard_name}");
    assert!(
        gets(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            &webhook
        ),
        "the ClusterRole must let the job get the guard's webhook configuration {webhook}"
    );
    // The deploy tools' rules (Flux, Argo CD, and Helm's with examples/cleanup/helm) are the rows
    // of the core's sources table: `cargo xtask check` (xtask/src/checks/cleanup.rs) checks this
    // ClusterRole, the Helm component and docs/cleanup.md against it, so no list of tools is
    // repeated here.
    let granted = granted();
    assert!(
        !granted.contains_key(&(String::new(), "secrets".to_string())),
        "Secrets are granted only by the Helm component, with --helm-releases"
    );
    // it writes only what it records of a pass: Events, and OpenReports Reports by server-side
    // apply (docs/cleanup.md#events-and-reports)
    let writes = BTreeSet::from(["create".to_string(), "patch".to_string()]);
    for group_resource in [("events.k8s.io", "events"), ("openreports.io", "reports")] {
        let key = (group_resource.0.to_string(), group_resource.1.to_string());
        assert_eq!(
            granted.get(&key),
            Some(&writes),
            "{key:?}: exactly create and patch"
        );
    }
    for (gr, verbs) in &granted {
        if matches!(gr.0.as_str(), "events.k8s.io" | "openreports.io") {
            continue;
        }
        for verb in ["update", "patch", "create", "deletecollection", "*"] {
            assert!(
                !verbs.contains(verb),
                "the job never needs {verb} on {gr:?}"
            );
        }
    }
}

#[test]
fn the_namespace_is_written_once_and_the_binding_names_the_account() {
    let account = object("ServiceAccount");
    let binding = object("ClusterRoleBinding");
    assert_eq!(
        binding["roleRef"]["name"],
        object("ClusterRole")["metadata"]["name"]
    );
    assert_eq!(binding["subjects"][0]["name"], account["metadata"]["name"]);
    let cronjob = object("CronJob");
    assert_eq!(
        cronjob.pointer("/spec/jobTemplate/spec/template/spec/serviceAccountName"),
        account.pointer("/metadata/name")
    );
    // the component copies the ServiceAccount's namespace to the CronJob, the binding and the main
    // guard's condition for template-cleanup's account
    let kustomization = yaml_file(KUSTOMIZATION);
    assert_eq!(kustomization["kind"], "Component");
    let replacement = &seq_at(&kustomization, "/replacements", KUSTOMIZATION)[0];
    assert_eq!(replacement["source"]["kind"], "ServiceAccount");
    assert_eq!(replacement["source"]["fieldPath"], "metadata.namespace");
    let targets: Vec<(String, String)> = seq_at(replacement, "/targets", KUSTOMIZATION)
        .iter()
        .map(|t| {
            (
                str_at(t, "/select/kind", KUSTOMIZATION).to_string(),
                strings(&t["fieldPaths"], KUSTOMIZATION).join(","),
            )
        })
        .collect();
    assert_eq!(
        targets,
        [
            ("CronJob".to_string(), "metadata.namespace".to_string()),
            (
                "ClusterRoleBinding".to_string(),
                "subjects.[name=capi-template-cleanup].namespace".to_string()
            ),
            (
                "ClusterAdmissionPolicy".to_string(),
                "spec.matchConditions.[name=not-capi-template-cleanup].expression".to_string()
            ),
        ]
    );
    // in one command, it brings the placement its guard follows and the main guard it adds its
    // condition to (placement.rs and install_paths.rs build it)
    let standalone = yaml_file("examples/cleanup/kustomization.yaml");
    assert_eq!(
        standalone["resources"],
        serde_json::json!(["../placement", "../guard"])
    );
    assert_eq!(standalone["components"], serde_json::json!(["component"]));
}

#[test]
fn the_job_runs_the_released_image_locked_down() {
    let metadata = PolicyMetadata::load();
    let oci = metadata.annotation(ANNOTATION_OCI_URL);
    let owner = oci
        .split("/policies/")
        .next()
        .expect("ociUrl has /policies/");
    let c = container();
    assert_eq!(
        str_at(&c, "/image", COMPONENT),
        format!("{owner}/template-cleanup:v{}", metadata.version())
    );
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    let pod = object("CronJob")
        .pointer("/spec/jobTemplate/spec/template/spec/securityContext")
        .cloned();
    assert_eq!(
        pod.as_ref().map(|p| &p["runAsNonRoot"]),
        Some(&Value::Bool(true))
    );
    let dockerfile = read("template-cleanup/Dockerfile");
    let last_stage = dockerfile.rsplit("\nFROM ").next().unwrap_or("");
    assert!(
        last_stage.starts_with("scratch"),
        "the image holds the static binary alone"
    );
    assert!(
        last_stage.contains("\nUSER 65532:65532"),
        "the image runs as non-root"
    );
}

/// Each architecture is built natively on a runner of its own (no emulation), with an SBOM and
/// provenance, and signed by its digest; the index of both is signed by its digest too.
#[test]
fn the_release_builds_the_image_for_both_architectures_and_signs_it() {
    let workflow = yaml_file(".github/workflows/release.yml");
    let build_job = &workflow["jobs"]["cleanup-image-build"];
    let matrix = seq_at(build_job, "/strategy/matrix/include", "cleanup-image-build");
    let targets: Vec<(&str, &str)> = matrix
        .iter()
        .map(|m| {
            (
                str_at(m, "/platform", "matrix"),
                str_at(m, "/runner", "matrix"),
            )
        })
        .collect();
    assert_eq!(
        targets,
        [
            ("linux/amd64", "ubuntu-latest"),
            ("linux/arm64", "ubuntu-24.04-arm")
        ]
    );
    assert_eq!(build_job["runs-on"], "${{ matrix.runner }}");
    let steps = seq_at(build_job, "/steps", "release.yml cleanup-image-build");
    let build = steps
        .iter()
        .find(|s| s["id"] == "build")
        .expect("the cleanup-image-build job has a build step");
    assert_eq!(build["with"]["file"], "template-cleanup/Dockerfile");
    assert_eq!(build["with"]["platforms"], "${{ matrix.platform }}");
    assert_eq!(build["with"]["sbom"], true);
    assert_eq!(build["with"]["provenance"], "mode=max");
    for name in ["cleanup-image-build", "cleanup-image"] {
        let job = &workflow["jobs"][name];
        assert_eq!(
            job["env"]["IMAGE"],
            "ghcr.io/${{ github.repository_owner }}/template-cleanup"
        );
        let steps = seq_at(job, "/steps", name);
        assert!(
            steps.iter().any(|s| s["run"].as_str().is_some_and(|r| r
                .contains("cosign sign --yes --new-bundle-format=false")
                && r.contains("cosign sign --yes --new-bundle-format=true")
                && (r.contains("@$DIGEST\"") || r.contains("@$digest\"")))),
            "{name} signs the image by its digest, in both formats"
        );
        assert_eq!(job["permissions"]["id-token"], "write");
    }
}

/// The Helm component (examples/cleanup/helm) patches template-cleanup's CronJob and ClusterRole,
/// so it must come after the template-cleanup component: after it, in every order of the other
/// components, the CronJob reads Helm's releases and the role grants what that needs; before it,
/// the build fails, naming the CronJob, instead of silently leaving Helm out.
#[test]
fn the_helm_component_applies_after_the_clean_up_or_fails_the_build() {
    use super::placement::{RANCHER, kustomize, orders};
    const HELM: &str = "examples/cleanup/helm";
    const CLEANUP: &str = "examples/cleanup/component";
    if !crate::kubectl_on_path("the Helm component's order") {
        return;
    }
    for order in orders(&[CLEANUP, HELM, RANCHER]) {
        let what = format!("examples with components {order:?}");
        let position = |c| order.iter().position(|o| *o == c).unwrap();
        let built = kustomize(&["examples"], &order);
        if position(HELM) < position(CLEANUP) {
            let error = built.expect_err(&format!("{what}: the wrong order builds"));
            assert!(
                error.contains("nothing selected by CronJob")
                    && error.contains("capi-template-cleanup"),
                "{what}: {error}"
            );
            continue;
        }
        let built = built.unwrap_or_else(|e| panic!("{e}"));
        let find = |kind: &str| {
            built
                .iter()
                .find(|d| d["kind"] == kind && d["metadata"]["name"] == "capi-template-cleanup")
                .unwrap_or_else(|| panic!("{what}: no {kind} capi-template-cleanup"))
        };
        let cronjob = find("CronJob");
        let args = strings(
            &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"],
            &what,
        );
        assert_eq!(
            args.iter().filter(|a| *a == "--helm-releases").count(),
            1,
            "{what}: {args:?}"
        );
        let rules = seq_at(find("ClusterRole"), "/rules", &what);
        for (group, resource) in [("", "secrets"), ("helm.toolkit.fluxcd.io", "helmreleases")] {
            assert!(
                rules
                    .iter()
                    .any(|r| r["apiGroups"] == serde_json::json!([group])
                        && r["resources"] == serde_json::json!([resource])),
                "{what}: no rule for {resource}"
            );
        }
    }
    // the directory itself with `- helm` uncommented, as its comment says
    let built = kustomize(&["examples/cleanup"], &[HELM]).unwrap_or_else(|e| panic!("{e}"));
    assert!(built.iter().any(|d| d["kind"] == "CronJob"));
}
