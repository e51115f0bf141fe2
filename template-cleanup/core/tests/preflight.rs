//! The pre-flight (the guard's policy and its live webhook), the kinds collected, the live
//! probe's reading, and the answers to a DELETE, as tables.

use guard::settings::Settings;
use rstest::rstest;
use serde_json::{json, Value};
use template_cleanup_core::answer::{classify, webhook_unreachable, ErrorStatus, TemplateOutcome};
use template_cleanup_core::preflight::{
    check_coverage, check_policy, check_webhook, collectable, rule_groups, Check, Served, Webhook,
    SELECTS_THE_CLEANUP,
};
use template_cleanup_core::probe::{
    being_deleted, judge, Named, Probe, Referrers, Verdict, MACHINE_DEPLOYMENT,
};
use template_cleanup_core::ServedKind;

mod common;
use common::{kind, m3mt, INFRA};

/// template-cleanup's guard as examples/cleanup installs it (Metal3MachineTemplates only), active,
/// its conditions True; the binary's tests use the same file.
fn good_policy() -> Value {
    serde_json::from_str(include_str!("guard.json")).unwrap()
}

fn with(mut object: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    object
        .pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .insert(key.to_string(), value);
    object
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

/// The shipped template-cleanup policy carries exactly the condition the pre-flight accepts, and
/// the main guard its negation, so that every template DELETE is judged by exactly one of them.
/// The clean-up's policy is the main guard patched (examples/cleanup/guard/kustomization.yaml):
/// the condition is read from that patch; tests/packaging/placement.rs builds it with kustomize
/// and checks that nothing else differs.
#[test]
fn the_shipped_policies_carry_the_cleanups_condition() {
    let read = |path: &str| -> Value {
        let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        yaml_value(&text)
    };
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let kustomization = read("examples/cleanup/guard/kustomization.yaml");
    let ops: Value = yaml_value(
        kustomization["patches"][0]["patch"]
            .as_str()
            .expect("the clean-up guard is one patch of the main guard"),
    );
    let op = |path: &str| {
        ops.as_array()
            .unwrap()
            .iter()
            .find(|op| op["path"] == path)
            .unwrap_or_else(|| panic!("the patch sets {path}"))["value"]
            .clone()
    };
    assert_eq!(op("/metadata/name"), "capi-template-guard-cleanup");
    assert_eq!(op("/spec/mode"), "protect");
    let conditions = op("/spec/matchConditions");
    let conditions = conditions.as_array().unwrap();
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    assert_eq!(conditions[0]["name"], SELECTS_THE_CLEANUP.0);
    assert_eq!(
        squash(conditions[0]["expression"].as_str().unwrap()),
        SELECTS_THE_CLEANUP.1
    );
    let main = read("examples/guard/cluster-admission-policy-guard.yaml");
    let exclusion = main["spec"]["matchConditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "not-capi-template-cleanup")
        .expect("the main guard leaves template-cleanup's DELETEs to its own policy");
    assert_eq!(
        squash(exclusion["expression"].as_str().unwrap()),
        format!("!({})", SELECTS_THE_CLEANUP.1)
    );
}

/// A one-document YAML file as JSON (template-cleanup's policy and the main guard).
fn yaml_value(text: &str) -> Value {
    yaml_serde::from_str(text).unwrap()
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

// --- answers

fn refused(code: u16, reason: &str, message: &str, causes: &[&str]) -> ErrorStatus {
    ErrorStatus {
        code,
        reason: reason.into(),
        message: message.into(),
        causes: causes.iter().map(|c| c.to_string()).collect(),
        ..ErrorStatus::default()
    }
}

const DENIED: &str = "admission webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\" denied the request: ";

/// kube-apiserver's usual answer to a DELETE whose preconditions fail: `rest.BeforeDelete`
/// (k8s.io/apiserver v0.36.3 `pkg/registry/rest/delete.go:83-92`), a Conflict on the kind (its
/// `GroupResource` is built from the kind) with these texts.
const BEFORE_DELETE_UID: &str = "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"t1\": the UID in the precondition (a) does not match the UID in record (b). The object might have been deleted and then recreated";
const BEFORE_DELETE_RV: &str = "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"t1\": the ResourceVersion in the precondition (7) does not match the ResourceVersion in record (8). The object might have been modified";

#[rstest]
#[case::deleted(None, TemplateOutcome::Deleted)]
#[case::guard_refusal(Some(refused(409, "", &format!("{DENIED}t1 is referenced by MachineSet edge/md-abc"), &[])), TemplateOutcome::KeptByGuard("t1 is referenced by MachineSet edge/md-abc".into()))]
#[case::guard_refusal_with_spec_message(Some(refused(409, "", &format!("{DENIED}templates are protected"), &["t1 is referenced by MachineSet edge/md-abc"])), TemplateOutcome::KeptByGuard("t1 is referenced by MachineSet edge/md-abc".into()))]
#[case::another_webhooks_409(Some(refused(409, "", "admission webhook \"other.example\" denied the request: no", &[])), TemplateOutcome::Failed("409: admission webhook \"other.example\" denied the request: no".into()))]
#[case::another_guards_409(Some(refused(409, "", &DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"), &[])), TemplateOutcome::Failed(format!("409: {}", DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"))))]
#[case::precondition(Some(refused(409, "Conflict", "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": Precondition failed: UID in precondition: a, UID in object meta: b", &[])), TemplateOutcome::Changed("Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": Precondition failed: UID in precondition: a, UID in object meta: b".into()))]
#[case::uid_precondition_before_delete(Some(refused(409, "Conflict", BEFORE_DELETE_UID, &[])), TemplateOutcome::Changed(BEFORE_DELETE_UID.into()))]
#[case::resource_version_precondition_before_delete(Some(refused(409, "Conflict", BEFORE_DELETE_RV, &[])), TemplateOutcome::Changed(BEFORE_DELETE_RV.into()))]
#[case::precondition_text_without_conflict(Some(refused(409, "", BEFORE_DELETE_UID, &[])), TemplateOutcome::Failed(format!("409: {BEFORE_DELETE_UID}")))]
#[case::another_conflict(Some(refused(409, "Conflict", "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": the object has been modified; please apply your changes to the latest version and try again", &[])), TemplateOutcome::Failed("409 Conflict: Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"t1\": the object has been modified; please apply your changes to the latest version and try again".into()))]
#[case::gone(Some(refused(404, "NotFound", "not found", &[])), TemplateOutcome::Gone)]
#[case::forbidden(Some(refused(403, "Forbidden", "cannot delete", &[])), TemplateOutcome::Failed("403 Forbidden: cannot delete".into()))]
#[case::guard_error(Some(refused(500, "", &format!("{DENIED}could not check"), &[])), TemplateOutcome::Failed(format!("500: {DENIED}could not check")))]
fn answers(#[case] answer: Option<ErrorStatus>, #[case] outcome: TemplateOutcome) {
    assert_eq!(
        classify("capi-template-guard-cleanup", answer.as_ref()),
        outcome
    );
}

/// A DELETE that fails because the webhook could not be called stops the pass; the guard's own
/// answers, even a 500, do not.
#[rstest]
#[case::timeout(refused(500, "InternalError", "Internal error occurred: failed calling webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\": failed to call webhook: Post \"https://policy-server-default.kubewarden.svc:8443/validate/clusterwide-capi-template-guard-cleanup?timeout=10s\": context deadline exceeded", &[]), true)]
#[case::no_endpoints(refused(500, "InternalError", "Internal error occurred: failed calling webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\": failed to call webhook: Post \"https://policy-server-default.kubewarden.svc:8443/validate/clusterwide-capi-template-guard-cleanup?timeout=10s\": no endpoints available for service \"policy-server-default\"", &[]), true)]
#[case::the_guards_own_500(refused(500, "", &format!("{DENIED}could not check"), &[]), false)]
#[case::forbidden(refused(403, "Forbidden", "cannot delete", &[]), false)]
#[case::refused(refused(409, "", &format!("{DENIED}in use"), &[]), false)]
fn a_webhook_that_cannot_be_called_stops_the_pass(
    #[case] answer: ErrorStatus,
    #[case] stops: bool,
) {
    assert_eq!(webhook_unreachable(&answer), stops);
}

// --- the live probe

fn md(shape: &str, deleting: bool) -> Value {
    let (infra, bootstrap) = match shape {
        "v1beta1" => (
            json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate", "name": "m3mt-a", "namespace": "edge"}),
            json!({"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": "kct-a"}),
        ),
        _ => (
            json!({"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-a"}),
            json!({"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "kct-a"}),
        ),
    };
    let mut md = json!({"apiVersion": format!("cluster.x-k8s.io/{shape}"), "kind": "MachineDeployment",
        "metadata": {"name": "md", "namespace": "edge"},
        "spec": {"clusterName": "a", "template": {"spec": {"clusterName": "a", "infrastructureRef": infra, "bootstrap": {"configRef": bootstrap}}}}});
    if deleting {
        md["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    md
}

fn named(group: &str, kind: &str, name: &str) -> Named {
    Named {
        group: group.into(),
        kind: kind.into(),
        namespace: "edge".into(),
        name: name.into(),
    }
}

fn deployments(mds: &[Value]) -> Referrers {
    let mut deployments = Referrers::default();
    for md in mds {
        deployments.add(MACHINE_DEPLOYMENT, md).unwrap();
    }
    deployments
}

/// The targets come from the guard's own reading of a MachineDeployment's fields.
#[rstest]
#[case::v1beta1(md("v1beta1", false), 2)]
#[case::v1beta2(md("v1beta2", false), 2)]
#[case::being_deleted(md("v1beta2", true), 0)]
#[case::no_bootstrap(with(md("v1beta2", false), "/spec/template/spec/bootstrap", json!({"dataSecretName": "s"})), 1)]
#[case::no_namespace(with(md("v1beta1", false), "/metadata/namespace", Value::Null), 0)]
fn a_live_machine_deployment_names_the_probes_targets(#[case] md: Value, #[case] count: usize) {
    let expected = [
        named(
            "bootstrap.cluster.x-k8s.io",
            "KubeadmConfigTemplate",
            "kct-a",
        ),
        named(INFRA, "Metal3MachineTemplate", "m3mt-a"),
    ];
    let named = deployments(&[md]).named();
    assert_eq!(named.len(), count, "{named:?}");
    assert!(named.iter().all(|n| expected.contains(n)), "{named:?}");
}

#[test]
fn a_machine_deployment_the_guard_cannot_read_is_an_error() {
    let bad = with(
        md("v1beta2", false),
        "/spec/template/spec/infrastructureRef",
        json!("m3mt-a"),
    );
    let error = Referrers::default()
        .add(MACHINE_DEPLOYMENT, &bad)
        .unwrap_err();
    assert!(
        error.starts_with("MachineDeployment edge/md cannot be read: "),
        "{error}"
    );
}

fn template(annotations: Value, owners: Value) -> Value {
    json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3MachineTemplate",
        "metadata": {"name": "m3mt-a", "namespace": "edge", "annotations": annotations, "ownerReferences": owners}})
}

fn owned_by_a() -> Value {
    json!([{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "a", "uid": "1"}])
}

/// Cluster `a` as listed, being deleted or not.
fn cluster_a(deleting: bool) -> Value {
    let mut cluster = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "a", "namespace": "edge"}, "spec": {}});
    if deleting {
        cluster["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    cluster
}

/// The probe's target is what the guard's own decision keeps: row 1 (a MachineDeployment names
/// it), row 5 (clusterctl move lets it go), row 6 (its Cluster is being deleted).
#[rstest]
#[case::named_by_a_live_deployment(template(json!({}), json!([])), None, "keeps")]
#[case::moving(template(json!({"clusterctl.cluster.x-k8s.io/delete-for-move": ""}), json!([])), None, "releases")]
#[case::its_cluster_live(template(json!({}), owned_by_a()), Some(false), "keeps")]
#[case::its_cluster_deleting(template(json!({}), owned_by_a()), Some(true), "releases")]
#[case::its_cluster_unread(template(json!({}), owned_by_a()), None, "releases")]
fn the_guards_own_decision_picks_the_target(
    #[case] template: Value,
    #[case] cluster_deleting: Option<bool>,
    #[case] expected: &str,
) {
    let target = named(INFRA, "Metal3MachineTemplate", "m3mt-a");
    let mut referrers = deployments(&[md("v1beta2", false)]);
    if let Some(deleting) = cluster_deleting {
        referrers.add("Cluster", &cluster_a(deleting)).unwrap();
    }
    let verdict = referrers.guard_decides(&target, &template, &Settings::default());
    match (expected, &verdict) {
        ("keeps", Verdict::Keeps(text)) => assert!(text.contains("MachineDeployment md"), "{text}"),
        ("releases", Verdict::Releases(_)) => {}
        _ => panic!("expected the guard to say {expected}, got {verdict:?}"),
    }
}

/// A MachineSet keeps its template as the guard decides it: one still scaled up keeps it, an
/// old revision scaled to zero lets it go (retired), as does one whose MachineDeployment is
/// gone (read at v1beta2); the current revision and one outside a MachineDeployment keep it
/// even at zero.
#[rstest]
#[case::scaled_up(json!(2), json!(2), Some("1"), true, "keeps")]
#[case::retired_revision(json!(0), json!(0), Some("1"), true, "releases")]
#[case::current_revision_at_zero(json!(0), json!(0), Some("2"), true, "keeps")]
#[case::owner_gone(json!(2), json!(2), None, true, "releases")]
#[case::standalone_at_zero(json!(0), json!(0), Some("1"), false, "keeps")]
fn a_machine_set_keeps_as_the_guard_decides(
    #[case] replicas: Value,
    #[case] machines: Value,
    #[case] revision: Option<&str>,
    #[case] in_deployment: bool,
    #[case] expected: &str,
) {
    let mut labels = json!({"cluster.x-k8s.io/cluster-name": "a"});
    if in_deployment {
        labels["cluster.x-k8s.io/deployment-name"] = json!("md");
    }
    let ms = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
        "metadata": {"name": "md-7f9c", "namespace": "edge", "labels": labels,
            "annotations": {"machinedeployment.clusters.x-k8s.io/revision": revision.unwrap_or("1")}},
        "spec": {"clusterName": "a", "replicas": replicas, "template": {"spec": {"clusterName": "a",
            "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-a"}}}},
        "status": {"replicas": machines}});
    let mut referrers = Referrers::default();
    // Its MachineDeployment, at revision 2, has moved on to another template; none when the
    // MachineSet's owner is gone.
    if revision.is_some() {
        let md = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": "md", "namespace": "edge",
                "annotations": {"machinedeployment.clusters.x-k8s.io/revision": "2"}},
            "spec": {"clusterName": "a", "template": {"spec": {"clusterName": "a",
                "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-b"}}}}});
        referrers.add("MachineDeployment", &md).unwrap();
    }
    referrers.add("MachineSet", &ms).unwrap();
    assert!(
        referrers.named().iter().all(|n| n.name != "m3mt-a"),
        "MachineSets are no probe targets"
    );
    let verdict = referrers.guard_decides(
        &named(INFRA, "Metal3MachineTemplate", "m3mt-a"),
        &template(json!({}), json!([])),
        &Settings::default(),
    );
    match (expected, &verdict) {
        ("keeps", Verdict::Keeps(text)) => assert!(text.contains("MachineSet md-7f9c"), "{text}"),
        ("releases", Verdict::Releases(_)) => {}
        _ => panic!("expected the guard to say {expected}, got {verdict:?}"),
    }
}

/// Every referrer kind the guard reads counts, as it decides: a control plane keeps its
/// machine template; a listed Cluster being deleted lets go of the template it owns that only its
/// own MachineDeployment names (row 6), a live one does not.
#[rstest]
#[case::control_plane("KubeadmControlPlane", None, "keeps")]
#[case::owning_cluster_live("MachineDeployment", Some(false), "keeps")]
#[case::owning_cluster_deleting("MachineDeployment", Some(true), "releases")]
fn every_listed_referrer_kind_counts(
    #[case] kind: &str,
    #[case] cluster_deleting: Option<bool>,
    #[case] expected: &str,
) {
    let referrer = match kind {
        "KubeadmControlPlane" => {
            json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": kind,
            "metadata": {"name": "cp", "namespace": "edge", "labels": {"cluster.x-k8s.io/cluster-name": "a"}},
            "spec": {"machineTemplate": {"spec": {"infrastructureRef":
                {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "m3mt-a"}}}}})
        }
        _ => md("v1beta2", false),
    };
    let mut referrers = Referrers::default();
    referrers.add(kind, &referrer).unwrap();
    let mut owners = json!([]);
    if let Some(deleting) = cluster_deleting {
        referrers.add("Cluster", &cluster_a(deleting)).unwrap();
        owners = owned_by_a();
    }
    let verdict = referrers.guard_decides(
        &named(INFRA, "Metal3MachineTemplate", "m3mt-a"),
        &template(json!({}), owners),
        &Settings::default(),
    );
    match (expected, &verdict) {
        ("keeps", Verdict::Keeps(_)) | ("releases", Verdict::Releases(_)) => {}
        _ => panic!("expected the guard to say {expected}, got {verdict:?}"),
    }
}

#[test]
fn a_template_no_deployment_names_is_let_go() {
    let target = named(INFRA, "Metal3MachineTemplate", "m3mt-a");
    let verdict = Referrers::default().guard_decides(
        &target,
        &template(json!({}), json!([])),
        &Settings::default(),
    );
    assert!(matches!(verdict, Verdict::Releases(_)), "{verdict:?}");
}

#[test]
fn a_template_being_deleted_is_no_target() {
    assert!(!being_deleted(&json!({"metadata": {"name": "t"}})));
    assert!(being_deleted(
        &json!({"metadata": {"name": "t", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    ));
}

/// Only the guard's refusal proves it judges; 404 and a failed precondition try another
/// template; anything else stops the pass, saying what came back.
#[rstest]
#[case::refused(Some(refused(409, "", &format!("{DENIED}m3mt-a is referenced by MachineDeployment edge/md"), &[])), Probe::Judged("m3mt-a is referenced by MachineDeployment edge/md".into()))]
#[case::allowed_monitor_mode(None, Probe::NotJudged("2xx: the DELETE would have gone through, so the pods that answer do not refuse it (monitor mode, an older configuration, or rules that miss it)".into()))]
#[case::gone(Some(refused(404, "NotFound", "not found", &[])), Probe::Moved)]
#[case::recreated(Some(refused(409, "Conflict", BEFORE_DELETE_UID, &[])), Probe::Moved)]
#[case::the_main_guard_answered(Some(refused(409, "", &DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"), &[])), Probe::NotJudged(format!("409: {}", DENIED.replace("capi-template-guard-cleanup", "capi-template-guard"))))]
#[case::unreachable(Some(refused(500, "InternalError", "Internal error occurred: failed calling webhook", &[])), Probe::NotJudged("500 InternalError: Internal error occurred: failed calling webhook".into()))]
fn the_probes_answer(#[case] answer: Option<ErrorStatus>, #[case] probe: Probe) {
    assert_eq!(judge("capi-template-guard-cleanup", answer.as_ref()), probe);
}

/// docs/cleanup.md names every pre-flight check, and no other: a bullet of its pre-flight list
/// opens with the check's name, and the caller's check (step 1) is named as `check `...``.
#[test]
fn the_docs_list_every_check() {
    let docs = include_str!("../../../docs/cleanup.md");
    let start = docs
        .find("**Pre-flight.**")
        .expect("docs/cleanup.md has a pre-flight section");
    let end = start
        + docs[start..]
            .find("Fields and defaults")
            .expect("the section ends");
    let listed = docs[start..end]
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name));
    let named = docs
        .split("check `")
        .skip(1)
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name));
    let mut documented: Vec<&str> = listed.chain(named).collect();
    documented.sort_unstable();
    documented.dedup();
    let mut checks: Vec<&str> = Check::ALL.iter().map(|c| c.name()).collect();
    checks.sort_unstable();
    assert_eq!(documented, checks);
}
