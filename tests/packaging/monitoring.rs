//! examples/monitoring/: the `release` label that kube-prometheus-stack's default selectors
//! require reaches both objects from the one component, the ServiceMonitor selects the Service the
//! Kubewarden controller gives each PolicyServer, both follow the placement (namespace and policy
//! server) with the same components as the policies, in any order, and a failed template-cleanup
//! Job is gone before kube-prometheus-stack's KubeJobFailed fires (tests/alerts/stack.yaml shows
//! the two alerts).

use super::*;

const KUSTOMIZATION: &str = "examples/monitoring/kustomization.yaml";
const COMPONENT: &str = "examples/monitoring/release/kustomization.yaml";
const SERVICE_MONITOR: &str = "examples/monitoring/service-monitor.yaml";
const STACK_RULES: &str = "tests/alerts/fixtures/kube-prometheus-stack.yaml";
const SERVER_PLACEMENT: &str = "examples/policy-server/placement";

/// The label the component writes, once.
fn release_label() -> String {
    let component = yaml_file(COMPONENT);
    assert_eq!(component["kind"], "Component", "{COMPONENT}");
    let labels = seq_at(&component, "/labels", COMPONENT);
    assert_eq!(labels.len(), 1, "{COMPONENT}: one `labels` entry");
    str_at(&labels[0], "/pairs/release", COMPONENT).to_string()
}

#[test]
fn the_kustomization_holds_the_rule_the_scrape_target_and_the_component() {
    let kustomization = yaml_file(KUSTOMIZATION);
    assert_eq!(
        strings(&kustomization["resources"], KUSTOMIZATION),
        [
            "../placement",
            "prometheus-rule.yaml",
            "service-monitor.yaml"
        ]
    );
    assert_eq!(
        strings(&kustomization["components"], KUSTOMIZATION),
        ["release", "../placement/follow"]
    );
    assert!(!release_label().is_empty());
}

/// kubectl builds it, when it is on PATH (it is on this project's machines): both objects carry
/// the label, and nothing else changed.
#[test]
fn kubectl_kustomize_shows_the_release_label_on_both_objects() {
    if !crate::kubectl_on_path("the component's build") {
        return;
    }
    let Ok(output) = std::process::Command::new("kubectl")
        .args(["kustomize", "examples/monitoring"])
        .current_dir(root())
        .output()
    else {
        eprintln!("kubectl is not on PATH: the component was checked statically only");
        return;
    };
    assert!(
        output.status.success(),
        "kubectl kustomize examples/monitoring: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let built = yaml_documents("kustomize output", &String::from_utf8_lossy(&output.stdout));
    let mut kinds: Vec<&str> = built.iter().filter_map(|d| d["kind"].as_str()).collect();
    kinds.sort();
    assert_eq!(kinds, ["PrometheusRule", "ServiceMonitor"]);
    let release = release_label();
    for doc in &built {
        assert_eq!(
            doc["metadata"]["labels"]["release"].as_str(),
            Some(release.as_str()),
            "{} has no `release` label",
            doc["kind"]
        );
        assert!(
            doc["spec"]["selector"]["matchLabels"]
                .get("release")
                .is_none(),
            "the component must not change the ServiceMonitor's selector"
        );
    }
}

/// The Service the controller reconciles for each PolicyServer (kubewarden-controller
/// v1.36.0-beta.1): labels from `CommonLabels` (api/policies/v1/policyserver_types.go), and the
/// port `metrics` added when metrics are on (internal/controller/policyserver_controller_service.go).
#[test]
fn the_service_monitor_selects_the_policy_servers_metrics_port() {
    let monitor = yaml_file(SERVICE_MONITOR);
    assert_eq!(monitor["kind"], "ServiceMonitor");
    let selector = &monitor["spec"]["selector"]["matchLabels"];
    assert_eq!(selector["app.kubernetes.io/component"], "policy-server");
    assert_eq!(selector["app.kubernetes.io/part-of"], "kubewarden");
    let endpoints = seq_at(&monitor, "/spec/endpoints", SERVICE_MONITOR);
    assert!(endpoints.iter().any(|e| e["port"] == "metrics"));
    // the namespace rbac.yaml binds the default PolicyServer's account in
    let rbac = read("examples/rbac.yaml");
    let namespace = str_at(&monitor, "/metadata/namespace", SERVICE_MONITOR);
    assert!(rbac.contains(&format!("namespace: {namespace}")));
    assert_eq!(
        strings(
            &monitor["spec"]["namespaceSelector"]["matchNames"],
            SERVICE_MONITOR
        ),
        [namespace]
    );
}

fn minutes(text: &str, what: &str) -> u64 {
    text.strip_suffix('m')
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("{what}: `{text}` is not in minutes"))
}

/// A failed Job lives ttlSecondsAfterFinished; kube_job_failed then goes stale. With a scrape and
/// an evaluation of slack (two minutes), that stays below KubeJobFailed's `for`, so the chart's
/// alert never fires beside CapiTemplateCleanupFailing; and tests/alerts/stack.yaml proves it
/// with ten minutes, so the TTL may not be longer.
#[test]
fn a_failed_jobs_ttl_is_shorter_than_kube_job_failed_waits() {
    let ttl = super::cleanup::object("CronJob")
        .pointer("/spec/jobTemplate/spec/ttlSecondsAfterFinished")
        .and_then(Value::as_u64)
        .expect("the CronJob sets ttlSecondsAfterFinished");
    let stack = yaml_file(STACK_RULES);
    let rule = seq_at(&stack, "/groups", STACK_RULES)
        .iter()
        .flat_map(|g| seq_at(g, "/rules", STACK_RULES).clone())
        .find(|r| r["alert"] == "KubeJobFailed")
        .expect("the fixture holds KubeJobFailed");
    let wait = minutes(str_at(&rule, "/for", STACK_RULES), "KubeJobFailed") * 60;
    assert!(
        ttl + 120 < wait,
        "ttlSecondsAfterFinished {ttl}s: a failed Job outlives KubeJobFailed's {wait}s and alerts twice"
    );
    assert!(
        ttl <= 600,
        "ttlSecondsAfterFinished {ttl}s: tests/alerts/stack.yaml shows one alert for 600 s at most"
    );
}

/// `kubectl kustomize` of examples/monitoring with the placement components, in every order: the
/// PrometheusRule's namespace and placement series, and the ServiceMonitor's namespace and the
/// namespace it scrapes, are the placement's, as for the policies (placement.rs).
#[rstest::rstest]
#[case::kubewarden(&[], "kubewarden", "default")]
#[case::rancher(&[super::placement::RANCHER], "cattle-kubewarden-system", "default")]
#[case::dedicated_server(&[SERVER_PLACEMENT], "kubewarden", "capi-template-guard")]
#[case::dedicated_server_in_rancher(
    &[super::placement::RANCHER, SERVER_PLACEMENT],
    "cattle-kubewarden-system",
    "capi-template-guard"
)]
fn the_alerts_and_the_scrape_target_follow_the_placement(
    #[case] components: &[&str],
    #[case] namespace: &str,
    #[case] server: &str,
) {
    if !crate::kubectl_on_path("the monitoring's placements") {
        return;
    }
    for order in super::placement::orders(components) {
        let what = format!("examples/monitoring with components {order:?}");
        let built = super::placement::build(&["examples/monitoring"], &order);
        let mut kinds: Vec<&str> = built.iter().filter_map(|d| d["kind"].as_str()).collect();
        kinds.sort();
        assert_eq!(kinds, ["PrometheusRule", "ServiceMonitor"], "{what}");
        let rule = built
            .iter()
            .find(|d| d["kind"] == "PrometheusRule")
            .unwrap();
        assert_eq!(rule["metadata"]["namespace"], namespace, "{what}: the rule");
        let placement = seq_at(rule, "/spec/groups", &what)
            .iter()
            .find(|g| g["name"] == "capi-template-guard-placement")
            .and_then(|g| g["rules"].get(0))
            .unwrap_or_else(|| panic!("{what}: no placement series"));
        assert_eq!(
            placement["record"], "capi_template_guard:placement",
            "{what}"
        );
        assert_eq!(
            placement["labels"],
            serde_json::json!({"namespace": namespace, "policy_server": server}),
            "{what}: the placement series"
        );
        let monitor = built
            .iter()
            .find(|d| d["kind"] == "ServiceMonitor")
            .unwrap();
        assert_eq!(
            monitor["metadata"]["namespace"], namespace,
            "{what}: the ServiceMonitor"
        );
        assert_eq!(
            strings(&monitor["spec"]["namespaceSelector"]["matchNames"], &what),
            [namespace],
            "{what}: the namespace scraped"
        );
    }
}

/// The placement series as written, with no component: the placement object's own values, so
/// that promtool's cases (tests/alerts/) run the alerts as `kubectl apply -k examples/monitoring`
/// installs them.
#[test]
fn the_placement_series_holds_the_placement_objects_values() {
    let placement = yaml_file("examples/placement/placement.yaml");
    let rule = yaml_file("examples/monitoring/prometheus-rule.yaml");
    let groups = seq_at(&rule, "/spec/groups", "the rule");
    assert_eq!(
        groups[0]["name"], "capi-template-guard-placement",
        "the placement series comes first, so that the alerts' evaluation sees it"
    );
    let labels = &groups[0]["rules"][0]["labels"];
    assert_eq!(labels["namespace"], placement["data"]["namespace"]);
    assert_eq!(labels["policy_server"], placement["data"]["policyServer"]);
    assert_eq!(
        rule["metadata"]["namespace"],
        placement["data"]["namespace"]
    );
}
