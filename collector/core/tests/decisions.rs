//! The decisions as tables: pre-flight, kinds, candidates, deploy tools' desired state (on the
//! shapes the tools write), DELETE answers.

use std::collections::BTreeMap;
use std::io::Write;

use base64::Engine;
use rstest::rstest;
use serde_json::{json, Value};
use template_cleanup_core::answer::{classify, Outcome, Refused};
use template_cleanup_core::declared::{
    argo_application, flux_helm_storage_namespaces, flux_kustomization, helm_current,
    helm_release_secret, Declared, HelmRevision,
};
use template_cleanup_core::guard::{
    check_coverage, check_policy, check_webhook, collectable, rule_groups, Served,
};
use template_cleanup_core::select::{candidate, Skip, Template};
use template_cleanup_core::{Kind, ObjectRef};

const INFRA: &str = "infrastructure.cluster.x-k8s.io";

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> Kind {
    Kind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn m3mt(version: &str) -> Kind {
    kind(
        INFRA,
        version,
        "Metal3MachineTemplate",
        "metal3machinetemplates",
    )
}

/// The guard as examples/cluster-admission-policy-guard.yaml installs it (Metal3MachineTemplates
/// only), active; the binary's tests use the same file.
fn good_policy() -> Value {
    serde_json::from_str(include_str!("guard.json")).unwrap()
}

fn oref(group: &str, kind: &str, namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        group: group.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

fn with(mut policy: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    policy
        .pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .insert(key.to_string(), value);
    policy
}

#[rstest]
#[case::the_guard_as_shipped(Some(good_policy()), None)]
#[case::defaults_mode_protect_and_failure_policy_fail(Some({
    let mut p = good_policy();
    let spec = p["spec"].as_object_mut().unwrap();
    spec.remove("mode");
    spec.remove("failurePolicy");
    p
}), None)]
#[case::missing(None, Some("guard exists"))]
#[case::monitor_mode(Some(with(good_policy(), "/spec/mode", json!("monitor"))), Some("spec.mode is protect"))]
#[case::monitor_on_the_server(Some(with(good_policy(), "/status/mode", json!("monitor"))), Some("status.mode is protect"))]
#[case::no_status_yet(Some(with(good_policy(), "/status", json!({}))), Some("status.mode is protect"))]
#[case::scheduled_its_server_gone(Some(with(good_policy(), "/status/policyStatus", json!("scheduled"))), Some("status.policyStatus is active"))]
#[case::pending(Some(with(good_policy(), "/status/policyStatus", json!("pending"))), Some("status.policyStatus is active"))]
#[case::failure_policy_ignore(Some(with(good_policy(), "/spec/failurePolicy", json!("Ignore"))), Some("failurePolicy is Fail"))]
#[case::fail_open(Some(with(good_policy(), "/spec/settings/failOpenOnLookupError", json!(true))), Some("failOpenOnLookupError is not set"))]
#[case::fail_open_as_a_string(Some(with(good_policy(), "/spec/settings/failOpenOnLookupError", json!("true"))), Some("failOpenOnLookupError is not set"))]
#[case::fail_open_false(Some(with(good_policy(), "/spec/settings/failOpenOnLookupError", json!(false))), None)]
#[case::object_selector(Some(with(good_policy(), "/spec/objectSelector", json!({"matchLabels": {"a": "b"}}))), Some("the guard sees every template"))]
#[case::namespace_selector(Some(with(good_policy(), "/spec/namespaceSelector", json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}))), Some("the guard sees every template"))]
#[case::empty_selector(Some(with(good_policy(), "/spec/objectSelector", json!({}))), None)]
#[case::no_rules(Some(with(good_policy(), "/spec/rules", json!([]))), Some("rules cover DELETE"))]
#[case::malformed_rule(Some(with(good_policy(), "/spec/rules", json!([{"apiGroups": [INFRA]}]))), Some("rules cover DELETE"))]
#[case::scope_not_a_string(Some(with(good_policy(), "/spec/rules", json!([{"apiGroups": [INFRA], "apiVersions": ["*"], "resources": ["*"], "operations": ["DELETE"], "scope": 1}]))), Some("rules cover DELETE"))]
fn pre_flight(#[case] policy: Option<Value>, #[case] refused_by: Option<&str>) {
    let result = check_policy("capi-template-guard", policy.as_ref());
    match (refused_by, result) {
        (None, Ok(guard)) => assert_eq!(guard.rules.len(), 1),
        (Some(check), Err(refusal)) => {
            assert_eq!(refusal.check, check);
            let text = refusal.to_string();
            assert!(
                text.starts_with(&format!("pre-flight check `{check}` failed: ")),
                "{text}"
            );
            assert!(text.ends_with(". Nothing was deleted."), "{text}");
        }
        (expected, got) => panic!("expected {expected:?}, got {got:?}"),
    }
}

/// The guard's webhook configuration with `hooks` as its webhooks.
fn configuration(hooks: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "clusterwide-g"}, "webhooks": hooks})
}

/// The guard's webhook with `selector` as its namespaceSelector.
fn hook(selector: Value) -> Value {
    configuration(
        json!([{"name": "clusterwide-g.kubewarden.admission", "namespaceSelector": selector}]),
    )
}

fn not_in(values: Value) -> Value {
    json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": values})
}

/// kubewarden-controller v1.36.0-beta.1 `internal/controller/policy_subreconciler_webhook.go`,
/// `namespaceSelector`: its own `NotIn [<its namespace>]`, then the policy's expressions; none at
/// all with allowInsideAdmissionControllerNamespace and no selector on the policy.
#[rstest]
#[case::kubewarden(Some(hook(json!({"matchExpressions": [not_in(json!(["kubewarden"]))]}))), Ok(vec!["kubewarden"]))]
#[case::rancher(Some(hook(json!({"matchExpressions": [not_in(json!(["cattle-kubewarden-system"]))]}))), Ok(vec!["cattle-kubewarden-system"]))]
#[case::two_sorted_once(Some(hook(json!({"matchExpressions": [not_in(json!(["b", "a"])), not_in(json!(["a"]))]}))), Ok(vec!["a", "b"]))]
#[case::allowed_inside(Some(hook(Value::Null)), Ok(vec![]))]
#[case::no_selector_field(Some(configuration(json!([{"name": "clusterwide-g.kubewarden.admission"}]))), Ok(vec![]))]
#[case::empty_parts(Some(hook(json!({"matchLabels": {}, "matchExpressions": []}))), Ok(vec![]))]
#[case::missing(None, Err("the guard's webhook is installed"))]
#[case::no_webhooks(
    Some(configuration(Value::Null)),
    Err("the guard's webhook is installed")
)]
#[case::another_policys_webhook(Some(configuration(json!([{"name": "clusterwide-h.kubewarden.admission"}]))), Err("the guard's webhook is installed"))]
#[case::another_key(Some(hook(json!({"matchExpressions": [not_in(json!(["kubewarden"])), {"key": "team", "operator": "NotIn", "values": ["x"]}]}))), Err("the guard sees every template"))]
#[case::in_operator(Some(hook(json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["edge"]}]}))), Err("the guard sees every template"))]
#[case::exists(Some(hook(json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]}))), Err("the guard sees every template"))]
#[case::values_not_strings(Some(hook(json!({"matchExpressions": [not_in(json!([1]))]}))), Err("the guard sees every template"))]
#[case::expressions_not_a_list(Some(hook(json!({"matchExpressions": "x"}))), Err("the guard sees every template"))]
#[case::match_labels(Some(hook(json!({"matchLabels": {"kubernetes.io/metadata.name": "edge"}}))), Err("the guard sees every template"))]
fn the_guards_webhook(#[case] webhook: Option<Value>, #[case] expected: Result<Vec<&str>, &str>) {
    match (expected, check_webhook("g", webhook.as_ref())) {
        (Ok(unseen), Ok(got)) => assert_eq!(got, unseen),
        (Err(check), Err(refusal)) => {
            assert_eq!(refusal.check, check);
            let text = refusal.to_string();
            assert!(text.contains("clusterwide-g"), "{text}");
            assert!(text.ends_with(". Nothing was deleted."), "{text}");
        }
        (expected, got) => panic!("expected {expected:?}, got {got:?}"),
    }
}

#[rstest]
#[case::on_the_requester("request.userInfo.username != 'system:serviceaccount:x:y'", true)]
#[case::break_glass_annotation("!has(oldObject.metadata.annotations)", false)]
fn match_conditions_on_the_requester_are_named_in_a_warning(
    #[case] expression: &str,
    #[case] warned: bool,
) {
    let policy = with(
        good_policy(),
        "/spec/matchConditions",
        json!([{"name": "cond", "expression": expression}]),
    );
    let guard = check_policy("g", Some(&policy)).unwrap();
    assert_eq!(
        guard.warnings.len(),
        usize::from(warned),
        "{:?}",
        guard.warnings
    );
    assert!(
        guard.warnings.iter().all(|w| w.contains("(cond)")),
        "{:?}",
        guard.warnings
    );
}

#[rstest]
#[case::covered(vec![m3mt("v1beta1")], true)]
#[case::other_kind(vec![m3mt("v1beta1"), kind(INFRA, "v1beta1", "Metal3DataTemplate", "metal3datatemplates")], false)]
#[case::other_group(vec![kind("bootstrap.cluster.x-k8s.io", "v1beta1", "KubeadmConfigTemplate", "kubeadmconfigtemplates")], false)]
#[case::nothing(vec![], true)]
fn coverage(#[case] kinds: Vec<Kind>, #[case] covered: bool) {
    let mut policy = good_policy();
    // one version only, to see versions matter
    policy["spec"]["rules"][0]["apiVersions"] = json!(["v1beta1"]);
    let guard = check_policy("g", Some(&policy)).unwrap();
    assert_eq!(check_coverage(&guard, &kinds).is_ok(), covered);
    let mut create_only = policy.clone();
    create_only["spec"]["rules"][0]["operations"] = json!(["CREATE"]);
    let guard = check_policy("g", Some(&create_only)).unwrap();
    assert_eq!(
        check_coverage(&guard, &kinds).is_ok(),
        kinds.is_empty(),
        "a CREATE rule covers no DELETE"
    );
}

/// A rule's `scope`: kube-apiserver sends a namespaced object's DELETE only for an absent, `*` or
/// `Namespaced` scope (k8s.io/apiserver v0.36.3 `pkg/admission/plugin/webhook/predicates/rules/
/// rules.go`, `Matcher.scope`); every template is namespaced.
#[rstest]
#[case::absent(None, true)]
#[case::every_scope(Some("*"), true)]
#[case::namespaced(Some("Namespaced"), true)]
#[case::cluster(Some("Cluster"), false)]
#[case::unknown_value(Some("namespaced"), false)]
fn a_rules_scope_decides_whether_it_sends_template_deletes(
    #[case] scope: Option<&str>,
    #[case] sent: bool,
) {
    let mut policy = good_policy();
    if let Some(scope) = scope {
        policy["spec"]["rules"][0]["scope"] = json!(scope);
    }
    let guard = check_policy("g", Some(&policy)).unwrap();
    assert_eq!(check_coverage(&guard, &[m3mt("v1beta1")]).is_ok(), sent);
    let expected = if sent { vec![m3mt("v1beta1")] } else { vec![] };
    assert_eq!(
        collectable(&guard, &[served(m3mt("v1beta1"), true)]),
        expected
    );
}

fn served(k: Kind, preferred: bool) -> Served {
    Served {
        kind: k,
        namespaced: true,
        preferred,
    }
}

#[test]
fn the_kinds_collected_are_the_served_templates_the_rules_guard_at_the_preferred_version() {
    let mut policy = good_policy();
    policy["spec"]["rules"] = json!([
        {"apiGroups": [INFRA], "apiVersions": ["*"], "resources": ["metal3machinetemplates", "metal3datatemplates/status", "nosuchtemplates"], "operations": ["DELETE"]},
        {"apiGroups": ["wild.example"], "apiVersions": ["v1"], "resources": ["*"], "operations": ["*"]},
        {"apiGroups": ["bootstrap.cluster.x-k8s.io"], "apiVersions": ["v1beta1"], "resources": ["kubeadmconfigtemplates"], "operations": ["DELETE"]},
        {"apiGroups": ["create.example"], "apiVersions": ["*"], "resources": ["*"], "operations": ["CREATE"]},
    ]);
    let guard = check_policy("g", Some(&policy)).unwrap();
    assert_eq!(
        rule_groups(&guard),
        ["bootstrap.cluster.x-k8s.io", INFRA, "wild.example"]
    );
    let kct = |v: &str| {
        kind(
            "bootstrap.cluster.x-k8s.io",
            v,
            "KubeadmConfigTemplate",
            "kubeadmconfigtemplates",
        )
    };
    let all = vec![
        served(m3mt("v1alpha5"), false),
        served(m3mt("v1beta1"), true),
        served(
            kind(
                INFRA,
                "v1beta1",
                "Metal3DataTemplate",
                "metal3datatemplates",
            ),
            true,
        ),
        served(kind("wild.example", "v1", "Machine", "machines"), true),
        served(
            kind("wild.example", "v1", "WildTemplate", "wildtemplates"),
            true,
        ),
        Served {
            kind: kind(
                "wild.example",
                "v1",
                "ClusterWideTemplate",
                "clusterwidetemplates",
            ),
            namespaced: false,
            preferred: true,
        },
        served(kct("v1beta2"), true),
        served(kct("v1beta1"), false),
        served(
            kind("create.example", "v1", "CTemplate", "ctemplates"),
            true,
        ),
    ];
    assert_eq!(
        collectable(&guard, &all),
        vec![
            kct("v1beta1"),
            m3mt("v1beta1"),
            kind("wild.example", "v1", "WildTemplate", "wildtemplates")
        ]
    );
}

fn template(labels: &[(&str, &str)], created: i64, deleting: bool) -> Template {
    Template {
        kind: m3mt("v1beta1"),
        namespace: "edge".into(),
        name: "t1".into(),
        uid: "u".into(),
        resource_version: "1".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        created,
        deleting,
    }
}

const LABEL: (&str, &str) = ("capi-template-guard.kubewarden.io/cleanup", "true");
const TOPOLOGY: (&str, &str) = ("topology.cluster.x-k8s.io/owned", "");

#[rstest]
#[case::labelled_and_old(vec![LABEL], 0, false, false, Ok(()))]
#[case::topology_copy(vec![TOPOLOGY], 0, false, false, Ok(()))]
#[case::label_false(vec![("capi-template-guard.kubewarden.io/cleanup", "false")], 0, false, false, Err(Skip::NotMarked))]
#[case::unmarked(vec![], 0, false, false, Err(Skip::NotMarked))]
#[case::being_deleted(vec![LABEL], 0, true, false, Err(Skip::BeingDeleted))]
#[case::young(vec![LABEL], 1000 - 599, false, false, Err(Skip::TooYoung))]
#[case::exactly_min_age(vec![LABEL], 1000 - 600, false, false, Ok(()))]
#[case::declared(vec![LABEL], 0, false, true, Err(Skip::Declared { by: "Kustomization flux-system/sites".into() }))]
#[case::declared_topology_copy(vec![TOPOLOGY], 0, false, true, Err(Skip::Declared { by: "Kustomization flux-system/sites".into() }))]
fn candidates(
    #[case] labels: Vec<(&str, &str)>,
    #[case] created: i64,
    #[case] deleting: bool,
    #[case] is_declared: bool,
    #[case] expected: Result<(), Skip>,
) {
    let t = template(&labels, created, deleting);
    let mut declared = Declared::default();
    // a declaration of another version of the same object counts; another name does not
    declared.insert(
        ObjectRef {
            name: "t2".into(),
            ..t.object_ref()
        },
        "Kustomization other/x",
    );
    if is_declared {
        declared.insert(t.object_ref(), "Kustomization flux-system/sites");
    }
    assert_eq!(candidate(&t, 1000, 600, &declared), expected);
}

// --- deploy tools' desired state

/// A Flux Kustomization's status as kustomize-controller (api/v1) writes it.
#[test]
fn flux_inventory_entries_name_namespace_name_group_and_kind() {
    let k: Value = yaml_serde::from_str(
        r#"
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: sites, namespace: flux-system}
status:
  inventory:
    entries:
      - id: edge_site-a-md-v2_infrastructure.cluster.x-k8s.io_Metal3MachineTemplate
        v: v1beta1
      - id: edge_site-a__ConfigMap
        v: v1
      - id: _edge__Namespace
        v: v1
      - id: _system__controller__manager_rbac.authorization.k8s.io_ClusterRole
        v: v1
"#,
    )
    .unwrap();
    let refs = flux_kustomization(&k).unwrap();
    assert_eq!(
        refs,
        vec![
            oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
            oref("", "ConfigMap", "edge", "site-a"),
            oref("", "Namespace", "", "edge"),
            oref(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "",
                "system:controller:manager"
            ),
        ]
    );
    assert_eq!(flux_kustomization(&json!({"status": {}})).unwrap(), vec![]);
    let bad = json!({"metadata": {"name": "k", "namespace": "n"}, "status": {"inventory": {"entries": [{"id": "nounderscores"}]}}});
    assert_eq!(
        flux_kustomization(&bad).unwrap_err(),
        "Flux Kustomization n/k: inventory id \"nounderscores\" is not <namespace>_<name>_<group>_<Kind>."
    );
}

/// An Argo CD Application's status as argo-cd writes it; a retired template (no longer in Git)
/// is listed with requiresPruning until it is gone, and is not declared.
#[test]
fn argo_status_resources_name_group_kind_namespace_and_name() {
    let app = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "sites", "namespace": "argocd"},
        "status": {"resources": [
            {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "site-a-md-v2", "status": "Synced", "health": {"status": "Healthy"}},
            {"version": "v1", "kind": "Namespace", "name": "edge", "status": "Synced"},
            {"group": INFRA, "version": "v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "site-a-md-v1", "status": "OutOfSync", "requiresPruning": true},
        ]},
    });
    assert_eq!(
        argo_application(&app).unwrap(),
        vec![
            oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
            oref("", "Namespace", "", "edge"),
        ]
    );
    let bad = json!({"metadata": {"name": "a", "namespace": "argocd"}, "status": {"resources": [{"kind": "X"}]}});
    assert!(argo_application(&bad)
        .unwrap_err()
        .starts_with("Argo CD Application argocd/a: a status.resources entry has no kind or name"));
}

/// Where Flux helm-controller stores a HelmRelease's releases: `spec.storageNamespace`, defaulting
/// to the HelmRelease's namespace, and `status.storageNamespace`, where the current release is
/// (helm-controller v1.5.0 `api/v2/helmrelease_types.go`).
#[rstest]
#[case::default_own_namespace(json!({}), json!({}), Ok(vec!["flux-system"]))]
#[case::spec(json!({"storageNamespace": "store"}), json!({}), Ok(vec!["store"]))]
#[case::status_and_spec(json!({"storageNamespace": "new"}), json!({"storageNamespace": "old"}), Ok(vec!["old", "new"]))]
#[case::status_same_as_default(json!({}), json!({"storageNamespace": "flux-system"}), Ok(vec!["flux-system"]))]
#[case::not_a_string(json!({"storageNamespace": 3}), json!({}), Err("Flux HelmRelease flux-system/sites: /spec/storageNamespace holds 3, which is not a string."))]
fn flux_helmreleases_name_their_storage_namespaces(
    #[case] spec: Value,
    #[case] status: Value,
    #[case] expected: Result<Vec<&str>, &str>,
) {
    let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "sites", "namespace": "flux-system"}, "spec": spec, "status": status});
    let expected = expected
        .map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .map_err(str::to_string);
    assert_eq!(flux_helm_storage_namespaces(&release), expected);
    assert_eq!(
        flux_helm_storage_namespaces(&json!({"metadata": {"name": "x"}})).unwrap_err(),
        "Flux HelmRelease /x has no metadata.namespace."
    );
}

const MANIFEST: &str = "---\n# Source: sites/templates/m3mt.yaml\napiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\nmetadata:\n  name: site-a-md-v2\nspec: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: other\n";

/// A release Secret as Helm's Secrets driver stores it (helm pkg/storage/driver/secrets.go and
/// util.go): JSON, gzip, base64 by Helm, then base64 again as the API shows Secret data.
fn helm_secret(name: &str, version: i64, status: &str, gzip: bool) -> Value {
    let release = json!({
        "name": name, "namespace": "edge", "version": version,
        "info": {"status": status, "description": "Upgrade complete"},
        "chart": {"metadata": {"name": "sites", "version": "1.0.0"}},
        "manifest": MANIFEST,
    });
    let json = serde_json::to_vec(&release).unwrap();
    let bytes = if gzip {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&json).unwrap();
        encoder.finish().unwrap()
    } else {
        json
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let helm = b64.encode(bytes);
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": format!("sh.helm.release.v1.{name}.v{version}"), "namespace": "edge",
            "labels": {"owner": "helm", "name": name, "status": status, "version": version.to_string()}},
        "data": {"release": b64.encode(helm)},
    })
}

#[rstest]
#[case::gzipped(true)]
#[case::stored_before_compression(false)]
fn helm_release_secrets_decode_to_their_manifest_objects(#[case] gzip: bool) {
    let revision = helm_release_secret(&helm_secret("sites", 3, "deployed", gzip))
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            revision.name.as_str(),
            revision.version,
            revision.status.as_str()
        ),
        ("sites", 3, "deployed")
    );
    assert_eq!(
        revision.objects,
        vec![
            oref(INFRA, "Metal3MachineTemplate", "edge", "site-a-md-v2"),
            oref("", "ConfigMap", "other", "cm"),
        ]
    );
}

#[rstest]
#[case::other_secret(json!({"type": "Opaque", "data": {"release": "x"}}), None)]
#[case::not_base64(json!({"type": "helm.sh/release.v1", "metadata": {"name": "s", "namespace": "n"}, "data": {"release": "!!"}}), Some("Helm release Secret n/s: data.release is not base64"))]
#[case::no_data(json!({"type": "helm.sh/release.v1", "metadata": {"name": "s", "namespace": "n"}}), Some("Helm release Secret n/s has no data.release."))]
#[case::not_helms_base64(json!({"type": "helm.sh/release.v1", "metadata": {"name": "s", "namespace": "n"}, "data": {"release": "ISE="}}), Some("Helm release Secret n/s: the release is not Helm's base64"))]
fn helm_secrets_that_are_not_releases(#[case] secret: Value, #[case] error: Option<&str>) {
    match (helm_release_secret(&secret), error) {
        (Ok(None), None) => {}
        (Err(e), Some(start)) => assert!(e.starts_with(start), "{e}"),
        (other, _) => panic!("unexpected {other:?}"),
    }
}

fn rev(name: &str, version: i64, status: &str) -> HelmRevision {
    HelmRevision {
        namespace: "edge".into(),
        name: name.into(),
        version,
        status: status.into(),
        objects: vec![],
    }
}

#[test]
fn the_current_helm_revisions_are_the_deployed_and_each_releases_newest() {
    let revisions = vec![
        rev("a", 1, "superseded"),
        rev("a", 2, "deployed"),
        rev("a", 3, "pending-upgrade"),
        rev("b", 4, "superseded"),
        rev("b", 5, "failed"),
        rev("c", 1, "uninstalled"),
        rev("d", 7, "deployed"),
    ];
    let current: Vec<(&str, i64)> = helm_current(&revisions)
        .iter()
        .map(|r| (r.name.as_str(), r.version))
        .collect();
    assert_eq!(current, [("a", 2), ("a", 3), ("b", 5), ("d", 7)]);
}

// --- answers

fn refused(code: u16, reason: &str, message: &str, causes: &[&str]) -> Refused {
    Refused {
        code,
        reason: reason.into(),
        message: message.into(),
        causes: causes.iter().map(|c| c.to_string()).collect(),
    }
}

const DENIED: &str = "admission webhook \"clusterwide-capi-template-guard.kubewarden.admission\" denied the request: ";

/// kube-apiserver's usual answer to a DELETE whose preconditions fail: `rest.BeforeDelete`
/// (k8s.io/apiserver v0.36.3 `pkg/registry/rest/delete.go:83-92`), a Conflict on the kind (its
/// `GroupResource` is built from the kind) with these texts.
const BEFORE_DELETE_UID: &str = "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"t1\": the UID in the precondition (a) does not match the UID in record (b). The object might have been deleted and then recreated";
const BEFORE_DELETE_RV: &str = "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"t1\": the ResourceVersion in the precondition (7) does not match the ResourceVersion in record (8). The object might have been modified";

#[rstest]
#[case::deleted(None, Outcome::Deleted)]
#[case::guard_refusal(Some(refused(409, "", &format!("{DENIED}t1 is referenced by MachineSet edge/md-abc"), &[])), Outcome::Kept("kept: t1 is referenced by MachineSet edge/md-abc".into()))]
#[case::guard_refusal_with_spec_message(Some(refused(409, "", &format!("{DENIED}templates are protected"), &["t1 is referenced by MachineSet edge/md-abc"])), Outcome::Kept("kept: t1 is referenced by MachineSet edge/md-abc".into()))]
#[case::another_webhooks_409(Some(refused(409, "", "admission webhook \"other.example\" denied the request: no", &[])), Outcome::Failed("failed: 409: admission webhook \"other.example\" denied the request: no".into()))]
#[case::another_guards_409(Some(refused(409, "", &DENIED.replace("capi-template-guard", "other-guard"), &[])), Outcome::Failed(format!("failed: 409: {}", DENIED.replace("capi-template-guard", "other-guard"))))]
#[case::precondition(Some(refused(409, "Conflict", "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": Precondition failed: UID in precondition: a, UID in object meta: b", &[])), Outcome::Kept("kept: changed since it was listed, the next pass looks again (Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": Precondition failed: UID in precondition: a, UID in object meta: b)".into()))]
#[case::uid_precondition_before_delete(Some(refused(409, "Conflict", BEFORE_DELETE_UID, &[])), Outcome::Kept(format!("kept: changed since it was listed, the next pass looks again ({BEFORE_DELETE_UID})")))]
#[case::resource_version_precondition_before_delete(Some(refused(409, "Conflict", BEFORE_DELETE_RV, &[])), Outcome::Kept(format!("kept: changed since it was listed, the next pass looks again ({BEFORE_DELETE_RV})")))]
#[case::precondition_text_without_conflict(Some(refused(409, "", BEFORE_DELETE_UID, &[])), Outcome::Failed(format!("failed: 409: {BEFORE_DELETE_UID}")))]
#[case::another_conflict(Some(refused(409, "Conflict", "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": the object has been modified; please apply your changes to the latest version and try again", &[])), Outcome::Failed("failed: 409 Conflict: Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": the object has been modified; please apply your changes to the latest version and try again".into()))]
#[case::gone(Some(refused(404, "NotFound", "not found", &[])), Outcome::Gone)]
#[case::forbidden(Some(refused(403, "Forbidden", "cannot delete", &[])), Outcome::Failed("failed: 403 Forbidden: cannot delete".into()))]
#[case::guard_error(Some(refused(500, "", &format!("{DENIED}could not check"), &[])), Outcome::Failed(format!("failed: 500: {DENIED}could not check")))]
fn answers(#[case] answer: Option<Refused>, #[case] outcome: Outcome) {
    assert_eq!(classify("capi-template-guard", answer.as_ref()), outcome);
}
