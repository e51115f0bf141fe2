//! The pre-flight (the guard's policy and its live webhook) and the kinds collected, as tables.
//! The probe is in probe.rs, the answers in answer.rs; that docs/cleanup.md lists every check, and
//! that the shipped policies carry the clean-up's condition, `cargo xtask check` proves
//! (xtask/src/checks/cleanup.rs).

use rstest::rstest;
use serde_json::{Value, json};
use template_cleanup_core::ServedKind;
use template_cleanup_core::preflight::{
    Check, SELECTS_THE_CLEANUP, Served, Webhook, check_coverage, check_policy, check_webhook,
    collectable, rule_groups,
};

mod common;
use common::*;

/// template-cleanup's guard as examples/cleanup installs it (Metal3MachineTemplates only), active,
/// its conditions True; the binary's tests use the same file.
fn good_policy() -> Value {
    serde_json::from_str(include_str!("guard.json")).unwrap()
}

/// `good_policy()` with condition `kind` set to `status`, or removed (`None`).
fn condition(kind: &str, status: Option<&str>) -> Value {
    let mut p = good_policy();
    let conditions = p["status"]["conditions"].as_array_mut().unwrap();
    conditions.retain(|c| c["type"] != kind);
    if let Some(status) = status {
        conditions.push(json!({"type": kind, "status": status, "reason": "r", "message": "m"}));
    }
    p
}

#[rstest]
#[case::the_guard_as_shipped(Some(good_policy()), None)]
#[case::defaults_mode_protect(Some({
    let mut p = good_policy();
    p["spec"].as_object_mut().unwrap().remove("mode");
    p
}), None)]
#[case::missing(None, Some(Check::GuardExists))]
#[case::monitor_mode(Some(with(good_policy(), "/spec/mode", json!("monitor"))), Some(Check::SpecModeIsProtect))]
#[case::monitor_on_the_server(Some(with(good_policy(), "/status/mode", json!("monitor"))), Some(Check::StatusModeIsProtect))]
#[case::no_status_yet(Some(with(good_policy(), "/status", json!({}))), Some(Check::StatusModeIsProtect))]
#[case::scheduled_its_server_gone(Some(with(good_policy(), "/status/policyStatus", json!("scheduled"))), Some(Check::PolicyStatusIsActive))]
#[case::pending(Some(with(good_policy(), "/status/policyStatus", json!("pending"))), Some(Check::PolicyStatusIsActive))]
#[case::webhook_not_created(
    Some(condition("PolicyActive", Some("False"))),
    Some(Check::PolicyActive)
)]
#[case::no_active_condition(Some(condition("PolicyActive", None)), Some(Check::PolicyActive))]
#[case::rolling_out(
    Some(condition("PolicyUniquelyReachable", Some("False"))),
    Some(Check::PolicyUniquelyReachable)
)]
#[case::reachability_unknown(
    Some(condition("PolicyUniquelyReachable", Some("Unknown"))),
    Some(Check::PolicyUniquelyReachable)
)]
#[case::no_reachable_condition(
    Some(condition("PolicyUniquelyReachable", None)),
    Some(Check::PolicyUniquelyReachable)
)]
#[case::configuration_out_of_date_is_not_checked(
    Some(condition("PolicyServerConfigurationUpToDate", Some("False"))),
    None
)]
#[case::fail_open(Some(with(good_policy(), "/spec/settings/failOpenOnLookupError", json!(true))), Some(Check::FailOpenNotSet))]
// The guard's own settings reader refuses a string here, so the probe could not decide with them.
#[case::fail_open_as_a_string(Some(with(good_policy(), "/spec/settings/failOpenOnLookupError", json!("true"))), Some(Check::SettingsAreValid))]
#[case::settings_the_guard_refuses(Some(with(good_policy(), "/spec/settings/countScaledDownMachineSets", json!(3))), Some(Check::SettingsAreValid))]
#[case::fail_open_false(Some(with(good_policy(), "/spec/settings/failOpenOnLookupError", json!(false))), None)]
fn pre_flight_on_the_policy(#[case] policy: Option<Value>, #[case] refused_by: Option<Check>) {
    match (
        refused_by,
        check_policy("capi-template-guard-cleanup", policy.as_ref()),
    ) {
        (None, Ok(_)) => {}
        (Some(check), Err(refusal)) => {
            assert_eq!(refusal.check, check);
            let text = refusal.to_string();
            assert!(
                text.starts_with(&format!("pre-flight check `{check}` failed: ")),
                "{text}"
            );
            assert!(
                !text.contains("Nothing was deleted"),
                "said once, by the pass: {text}"
            );
        }
        (expected, got) => panic!("expected {expected:?}, got {got:?}"),
    }
}

#[test]
fn a_rolling_out_guard_is_refused_with_the_command_that_waits() {
    let refusal = check_policy(
        "g",
        Some(&condition("PolicyUniquelyReachable", Some("False"))),
    )
    .unwrap_err();
    assert!(
        refusal.message.starts_with("the ClusterAdmissionPolicy g has condition PolicyUniquelyReachable False: not every pod of its policy server belongs to the latest ReplicaSet: either a rollout is in progress"),
        "{}",
        refusal.message
    );
    assert!(
        refusal.message.ends_with(
            "kubectl wait --for=condition=PolicyUniquelyReachable clusteradmissionpolicy/g."
        ) && refusal.message.contains("an evicted or failed policy-server pod keeps it False until the pod is garbage-collected. See which: kubectl -n kubewarden get pods -o wide"),
        "{}",
        refusal.message
    );
}

/// The guard's webhook configuration with `hooks` as its webhooks.
fn configuration(hooks: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "clusterwide-g"}, "webhooks": hooks})
}

/// The guard's webhook as kubewarden-controller v1.36.0-beta.1 writes it for `good_policy()` in
/// `kubewarden` (`internal/controller/policy_subreconciler_webhook.go:21-90`), with `edit`
/// applied to the webhook entry.
fn hook_with(edit: impl FnOnce(&mut Value)) -> Value {
    let policy = good_policy();
    let mut hook = json!({"name": "clusterwide-g.kubewarden.admission",
        "clientConfig": {"service": {"namespace": "kubewarden", "name": "policy-server-default", "path": "/validate/clusterwide-g", "port": 8443}},
        "rules": policy["spec"]["rules"], "failurePolicy": "Fail", "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [not_in(json!(["kubewarden"]))]},
        "objectSelector": {}, "matchConditions": policy["spec"]["matchConditions"],
        "sideEffects": "None", "timeoutSeconds": 10, "admissionReviewVersions": ["v1"]});
    edit(&mut hook);
    configuration(json!([hook]))
}

/// The shipped webhook with `selector` as its namespaceSelector.
fn hook(selector: Value) -> Value {
    hook_with(|h| h["namespaceSelector"] = selector)
}

fn not_in(values: Value) -> Value {
    json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": values})
}

/// The live webhook decides: kubewarden-controller's own `NotIn [<its namespace>]`, then the
/// policy's expressions (none at all with allowInsideAdmissionControllerNamespace and no
/// selector), and always the namespace of its service, where the policy server accepts every
/// request unchecked.
#[rstest]
#[case::as_shipped(Some(hook_with(|_| {})), Ok(vec!["kubewarden"]))]
#[case::rancher(Some(hook_with(|h| {
    h["namespaceSelector"] = json!({"matchExpressions": [not_in(json!(["cattle-kubewarden-system"]))]});
    h["clientConfig"]["service"]["namespace"] = json!("cattle-kubewarden-system");
})), Ok(vec!["cattle-kubewarden-system"]))]
#[case::two_sorted_once(Some(hook(json!({"matchExpressions": [not_in(json!(["b", "a"])), not_in(json!(["a"]))]}))), Ok(vec!["a", "b", "kubewarden"]))]
#[case::allowed_inside_the_service_namespace_still_unseen(Some(hook(Value::Null)), Ok(vec!["kubewarden"]))]
#[case::no_selector_no_service(Some(configuration(json!([{"name": "clusterwide-g.kubewarden.admission", "rules": good_policy()["spec"]["rules"]}]))), Ok(vec![]))]
#[case::empty_parts(Some(hook(json!({"matchLabels": {}, "matchExpressions": []}))), Ok(vec!["kubewarden"]))]
#[case::failure_policy_absent_is_fail(Some(hook_with(|h| { h.as_object_mut().unwrap().remove("failurePolicy"); })), Ok(vec!["kubewarden"]))]
#[case::no_match_conditions(Some(hook_with(|h| { h.as_object_mut().unwrap().remove("matchConditions"); })), Ok(vec!["kubewarden"]))]
#[case::the_cleanups_condition_rewrapped(Some(hook_with(|h| h["matchConditions"][0]["expression"] = json!(SELECTS_THE_CLEANUP.1.replace(" && ", "\n  &&  ")))), Ok(vec!["kubewarden"]))]
#[case::missing(None, Err(Check::WebhookInstalled))]
#[case::no_webhooks(Some(configuration(Value::Null)), Err(Check::WebhookInstalled))]
#[case::another_policys_webhook(Some(configuration(json!([{"name": "clusterwide-h.kubewarden.admission"}]))), Err(Check::WebhookInstalled))]
#[case::failure_policy_ignore(Some(hook_with(|h| h["failurePolicy"] = json!("Ignore"))), Err(Check::FailurePolicyIsFail))]
#[case::break_glass(Some(hook_with(|h| h["matchConditions"] = json!([{"name": "not-break-glass", "expression": "!has(oldObject.metadata.annotations)"}]))), Err(Check::NoExemptingCondition))]
#[case::the_main_guards_exclusion(Some(hook_with(|h| h["matchConditions"] = json!([{"name": "not-capi-template-cleanup", "expression": format!("!({})", SELECTS_THE_CLEANUP.1)}]))), Err(Check::NoExemptingCondition))]
#[case::same_expression_other_name(Some(hook_with(|h| h["matchConditions"][0]["name"] = json!("mine"))), Err(Check::NoExemptingCondition))]
#[case::a_second_condition(Some(hook_with(|h| h["matchConditions"].as_array_mut().unwrap().push(json!({"name": "x", "expression": "true"})))), Err(Check::NoExemptingCondition))]
#[case::object_selector(Some(hook_with(|h| h["objectSelector"] = json!({"matchLabels": {"a": "b"}}))), Err(Check::SeesEveryTemplate))]
#[case::another_key(Some(hook(json!({"matchExpressions": [not_in(json!(["kubewarden"])), {"key": "team", "operator": "NotIn", "values": ["x"]}]}))), Err(Check::SeesEveryTemplate))]
#[case::in_operator(Some(hook(json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["edge"]}]}))), Err(Check::SeesEveryTemplate))]
#[case::exists(Some(hook(json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]}))), Err(Check::SeesEveryTemplate))]
#[case::values_not_strings(Some(hook(json!({"matchExpressions": [not_in(json!([1]))]}))), Err(Check::SeesEveryTemplate))]
#[case::expressions_not_a_list(Some(hook(json!({"matchExpressions": "x"}))), Err(Check::SeesEveryTemplate))]
#[case::match_labels(Some(hook(json!({"matchLabels": {"kubernetes.io/metadata.name": "edge"}}))), Err(Check::SeesEveryTemplate))]
#[case::no_rules(Some(hook_with(|h| h["rules"] = json!([]))), Err(Check::RulesCoverDelete))]
#[case::malformed_rule(Some(hook_with(|h| h["rules"] = json!([{"apiGroups": [INFRA]}]))), Err(Check::RulesCoverDelete))]
#[case::scope_not_a_string(Some(hook_with(|h| h["rules"] = json!([{"apiGroups": [INFRA], "apiVersions": ["*"], "resources": ["*"], "operations": ["DELETE"], "scope": 1}]))), Err(Check::RulesCoverDelete))]
fn pre_flight_on_the_live_webhook(
    #[case] webhook: Option<Value>,
    #[case] expected: Result<Vec<&str>, Check>,
) {
    match (expected, check_webhook("g", webhook.as_ref())) {
        (Ok(unseen), Ok(read)) => {
            assert_eq!(read.unseen, unseen);
            assert_eq!(read.rules.len(), 1);
        }
        (Err(check), Err(refusal)) => {
            assert_eq!(refusal.check, check);
            let text = refusal.to_string();
            assert!(text.contains("clusterwide-g"), "{text}");
        }
        (expected, got) => panic!("expected {expected:?}, got {got:?}"),
    }
}

/// A guard whose webhook sends DELETEs to it by `rules`.
fn webhook_with_rules(rules: Value) -> Webhook {
    check_webhook("g", Some(&hook_with(|h| h["rules"] = rules))).unwrap()
}

#[rstest]
#[case::covered(vec![m3mt("v1beta1")], true)]
#[case::other_kind(vec![m3mt("v1beta1"), kind(INFRA, "v1beta1", "Metal3DataTemplate", "metal3datatemplates")], false)]
#[case::other_group(vec![kind("bootstrap.cluster.x-k8s.io", "v1beta1", "KubeadmConfigTemplate", "kubeadmconfigtemplates")], false)]
#[case::nothing(vec![], true)]
fn coverage(#[case] kinds: Vec<ServedKind>, #[case] covered: bool) {
    // one version only, to see versions matter
    let mut rules = good_policy()["spec"]["rules"].clone();
    rules[0]["apiVersions"] = json!(["v1beta1"]);
    assert_eq!(
        check_coverage(&webhook_with_rules(rules.clone()), &kinds).is_ok(),
        covered
    );
    rules[0]["operations"] = json!(["CREATE"]);
    assert_eq!(
        check_coverage(&webhook_with_rules(rules), &kinds).is_ok(),
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
    let mut rules = good_policy()["spec"]["rules"].clone();
    if let Some(scope) = scope {
        rules[0]["scope"] = json!(scope);
    }
    let webhook = webhook_with_rules(rules);
    assert_eq!(check_coverage(&webhook, &[m3mt("v1beta1")]).is_ok(), sent);
    let expected = if sent { vec![m3mt("v1beta1")] } else { vec![] };
    assert_eq!(
        collectable(&webhook, &[served(m3mt("v1beta1"), true)]),
        expected
    );
}

fn served(k: ServedKind, preferred: bool) -> Served {
    Served {
        kind: k,
        namespaced: true,
        preferred,
    }
}

#[test]
fn the_kinds_collected_are_the_served_templates_the_rules_guard_at_the_preferred_version() {
    let webhook = webhook_with_rules(json!([
        {"apiGroups": [INFRA], "apiVersions": ["*"], "resources": ["metal3machinetemplates", "metal3datatemplates/status", "nosuchtemplates"], "operations": ["DELETE"]},
        {"apiGroups": ["wild.example"], "apiVersions": ["v1"], "resources": ["*"], "operations": ["*"]},
        {"apiGroups": ["bootstrap.cluster.x-k8s.io"], "apiVersions": ["v1beta1"], "resources": ["kubeadmconfigtemplates"], "operations": ["DELETE"]},
        {"apiGroups": ["create.example"], "apiVersions": ["*"], "resources": ["*"], "operations": ["CREATE"]},
    ]));
    assert_eq!(
        rule_groups(&webhook),
        [
            "bootstrap.cluster.x-k8s.io",
            "create.example",
            INFRA,
            "wild.example"
        ]
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
    // A wildcard rule sends wild.example's WildTemplate to the guard, but the guard protects no
    // such kind (it lets its DELETE through unjudged), so it is never collected.
    assert_eq!(
        collectable(&webhook, &all),
        vec![kct("v1beta1"), m3mt("v1beta1")]
    );
}
