//! The pre-flight: template-cleanup is only safe because the guard refuses the DELETE of a template
//! still in use. Before every pass it reads the guard's ClusterAdmissionPolicy (what is wanted)
//! and the ValidatingWebhookConfiguration Kubewarden made of it (what kube-apiserver does), and
//! deletes nothing unless both say the guard judges every DELETE the pass sends. A live probe
//! (`crate::probe`) then checks that the guard's pods answer as these objects say.
//!
//! The policy's fields and defaults are Kubewarden's (kubewarden-controller v1.36.0-beta.1
//! `api/policies/v1/policy_types.go`, `PolicySpec`; `api/policies/v1/policy.go`,
//! `PolicyStatusEnum` and the condition types, lines 39-55); the webhook is built by
//! `internal/controller/policy_subreconciler_webhook.go`, `reconcileValidatingWebhookConfiguration`
//! (lines 21-90), which copies the policy's rules, failurePolicy, matchPolicy, objectSelector
//! and matchConditions, and writes the namespaceSelector and the service itself.

use guard::settings::Settings;
use serde_json::Value;

use crate::ServedKind;

/// The pre-flight's checks, in the order a pass runs them; docs/cleanup.md lists each by name
/// (`cargo xtask check` compares them: xtask/src/checks/cleanup.rs). Adding one is a variant, its name,
/// its place in [`Check::ALL`] (the build fails without it), and the place that refuses with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The caller is the service account the guard's matchCondition selects.
    JudgesThisCaller,
    /// The guard's ClusterAdmissionPolicy exists.
    GuardExists,
    /// `spec.mode` is protect (its default): monitor mode allows every DELETE.
    SpecModeIsProtect,
    /// `status.mode` is protect: the mode the policy server runs.
    StatusModeIsProtect,
    /// `status.policyStatus` is active: the webhook is in place.
    PolicyStatusIsActive,
    /// Condition `PolicyActive` is True: the webhook has been created.
    PolicyActive,
    /// Condition `PolicyUniquelyReachable` is True: no older policy server pod answers.
    PolicyUniquelyReachable,
    /// The guard's settings read as the guard reads them.
    SettingsAreValid,
    /// `failOpenOnLookupError` is not set: a failed lookup refuses the DELETE.
    FailOpenNotSet,
    /// The webhook's `failurePolicy` is Fail (its default).
    FailurePolicyIsFail,
    /// No matchCondition but template-cleanup's own lets a template DELETE skip the guard.
    NoExemptingCondition,
    /// The ValidatingWebhookConfiguration exists and holds the guard's webhook.
    WebhookInstalled,
    /// No selector leaves a template outside the guard, bar the controller's namespace.
    SeesEveryTemplate,
    /// The rules send the DELETE of every kind the pass would delete, and of every template kind
    /// they name.
    RulesCoverDelete,
}

impl Check {
    /// Every check, in the order a pass runs them (the compiler checks that none is missing).
    pub const ALL: [Check; 14] = [
        Check::JudgesThisCaller,
        Check::GuardExists,
        Check::SpecModeIsProtect,
        Check::StatusModeIsProtect,
        Check::PolicyStatusIsActive,
        Check::PolicyActive,
        Check::PolicyUniquelyReachable,
        Check::SettingsAreValid,
        Check::FailOpenNotSet,
        Check::FailurePolicyIsFail,
        Check::NoExemptingCondition,
        Check::WebhookInstalled,
        Check::SeesEveryTemplate,
        Check::RulesCoverDelete,
    ];

    /// The name messages, Events and docs give the check.
    pub const fn name(self) -> &'static str {
        match self {
            Check::JudgesThisCaller => "the guard judges this caller",
            Check::GuardExists => "guard exists",
            Check::SpecModeIsProtect => "spec.mode is protect",
            Check::StatusModeIsProtect => "status.mode is protect",
            Check::PolicyStatusIsActive => "status.policyStatus is active",
            Check::PolicyActive => "condition PolicyActive is True",
            Check::PolicyUniquelyReachable => "condition PolicyUniquelyReachable is True",
            Check::SettingsAreValid => "settings are valid",
            Check::FailOpenNotSet => "failOpenOnLookupError is not set",
            Check::FailurePolicyIsFail => "failurePolicy is Fail",
            Check::NoExemptingCondition => "no matchCondition exempts a template DELETE",
            Check::WebhookInstalled => "the guard's webhook is installed",
            Check::SeesEveryTemplate => "the guard sees every template",
            Check::RulesCoverDelete => "rules cover DELETE",
        }
    }
}

// `Check::ALL` holds every check, which the compiler checks: the `match` below has one pattern
// per entry of ALL and is exhaustive only while they cover every variant. A check left out of
// ALL is a variant not covered; one listed twice leaves another out (ALL has a pattern per place).
const _: () = {
    const C0: Check = Check::ALL[0];
    const C1: Check = Check::ALL[1];
    const C2: Check = Check::ALL[2];
    const C3: Check = Check::ALL[3];
    const C4: Check = Check::ALL[4];
    const C5: Check = Check::ALL[5];
    const C6: Check = Check::ALL[6];
    const C7: Check = Check::ALL[7];
    const C8: Check = Check::ALL[8];
    const C9: Check = Check::ALL[9];
    const C10: Check = Check::ALL[10];
    const C11: Check = Check::ALL[11];
    const C12: Check = Check::ALL[12];
    const C13: Check = Check::ALL[13];
    const fn listed(check: Check) {
        match check {
            C0 | C1 | C2 | C3 | C4 | C5 | C6 | C7 | C8 | C9 | C10 | C11 | C12 | C13 => {}
        }
    }
    listed(Check::GuardExists);
};

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the pre-flight refused: the check and a sentence for the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pre-flight check `{check}` failed: {message}")]
pub struct Refusal {
    pub check: Check,
    pub message: String,
}

fn refuse(check: Check, message: String) -> Refusal {
    Refusal { check, message }
}

/// One admission rule of the guard's webhook (`admissionregistration.k8s.io/v1`
/// `RuleWithOperations`, copied from the policy's `spec.rules` by
/// `internal/controller/policy_subreconciler_webhook.go:66`, and read from the webhook).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<String>,
    /// `scope`: `None` when absent.
    pub scope: Option<String>,
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == "*" || x == item)
}

impl Rule {
    /// Whether the rule sends the DELETE of a namespaced `plural` in `group` at `version` to the
    /// guard. kube-apiserver matches a namespaced object's request only when the rule's `scope`
    /// is absent, `*` or `Namespaced`; `Cluster`, or a value it does not know, matches none
    /// (k8s.io/apiserver v0.36.3 `pkg/admission/plugin/webhook/predicates/rules/rules.go`,
    /// `Matcher.scope`). Every template is namespaced: template-cleanup collects no other kind.
    pub fn covers_delete(&self, group: &str, version: &str, plural: &str) -> bool {
        matches!(self.scope.as_deref(), None | Some("*" | "Namespaced"))
            && has(&self.api_groups, group)
            && has(&self.api_versions, version)
            && has(&self.resources, plural)
            && has(&self.operations, "DELETE")
    }
}

/// The guard as its live webhook sends DELETEs to it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Webhook {
    pub rules: Vec<Rule>,
    /// Namespaces whose templates the guard never judges, sorted: those the webhook's
    /// namespaceSelector leaves out, and the namespace of the webhook's service (see
    /// [`check_webhook`]).
    pub unseen: Vec<String>,
    /// The webhook carries template-cleanup's own matchCondition ([`SELECTS_THE_CLEANUP`]): it
    /// judges only DELETEs by a service account of that name ([`check_caller`]).
    pub only_cleanup: bool,
}

fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// A field of a webhook rule that is not as kube-apiserver writes it; `field` names it
/// (`rules[0].apiGroups`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum RuleField {
    #[error("{field} is missing or not a list.")]
    NotAList { field: String },
    #[error("{field} holds {value}, which is not a string.")]
    NotAString { field: String, value: Value },
}

fn strings(value: Option<&Value>, field: &str) -> Result<Vec<String>, RuleField> {
    let Some(items) = value.and_then(Value::as_array) else {
        return Err(RuleField::NotAList {
            field: field.to_string(),
        });
    };
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| RuleField::NotAString {
                    field: field.to_string(),
                    value: item.clone(),
                })
        })
        .collect()
}

/// A label selector that selects something less than everything.
fn narrows(selector: Option<&Value>) -> bool {
    let non_empty = |key: &str| {
        selector.and_then(|s| s.get(key)).is_some_and(|v| {
            v.as_object().is_some_and(|o| !o.is_empty())
                || v.as_array().is_some_and(|a| !a.is_empty())
        })
    };
    non_empty("matchLabels") || non_empty("matchExpressions")
}

/// One field the pre-flight compares: where it is, the value its owner defaults it to when
/// absent, the value template-cleanup needs, and why.
struct FieldCheck {
    check: Check,
    field: &'static str,
    pointer: &'static str,
    default: &'static str,
    want: &'static str,
    why: &'static str,
}

/// The ClusterAdmissionPolicy's fields. `spec.mode` defaults to protect
/// (`+kubebuilder:default:=protect`); the status is written by the controller:
/// `setPolicyModeStatus` copies the mode from the policy server's ConfigMap, and
/// `policyStatus` is `pending` until the webhook is first created, then stays `active`
/// (`internal/controller/policy_subreconciler.go`, `reconcilePolicy`, lines 72-145): desired
/// state, which is why the conditions and the probe follow.
const POLICY_FIELDS: [FieldCheck; 3] = [
    FieldCheck {
        check: Check::SpecModeIsProtect,
        field: "spec.mode",
        pointer: "/spec/mode",
        default: "protect",
        want: "protect",
        why: "a policy in monitor mode allows every DELETE and only logs.",
    },
    FieldCheck {
        check: Check::StatusModeIsProtect,
        field: "status.mode",
        pointer: "/status/mode",
        default: "",
        want: "protect",
        why: "the policy server's configuration may still run the policy in monitor mode.",
    },
    FieldCheck {
        check: Check::PolicyStatusIsActive,
        field: "status.policyStatus",
        pointer: "/status/policyStatus",
        default: "",
        want: "active",
        why: "its webhook may not be in place (from 1.36, Kubewarden leaves the policies of a deleted PolicyServer \"scheduled\", without webhooks; before, it deletes them).",
    },
];

/// The webhook's fields. kube-apiserver defaults `failurePolicy` to Fail
/// (k8s.io/api `admissionregistration/v1/types.go`, `ValidatingWebhook.FailurePolicy`).
const WEBHOOK_FIELDS: [FieldCheck; 1] = [FieldCheck {
    check: Check::FailurePolicyIsFail,
    field: "failurePolicy",
    pointer: "/failurePolicy",
    default: "Fail",
    want: "Fail",
    why: "while its policy server is down, every DELETE would be let through unchecked.",
}];

fn check_fields(object: &Value, what: &str, checks: &[FieldCheck]) -> Result<(), Refusal> {
    for c in checks {
        let value = text(object, c.pointer).unwrap_or(c.default);
        if value != c.want {
            return Err(refuse(
                c.check,
                format!(
                    "{what} has {} {value:?}, not {:?}: {}",
                    c.field, c.want, c.why
                ),
            ));
        }
    }
    Ok(())
}

/// The conditions the controller sets on a policy (`api/policies/v1/policy.go:44,54`), which must
/// be `True`, and what `False` or absent means. `PolicyActive` is `False` until the webhook is
/// created (`setPolicyAsActive`, `policy_subreconciler.go:503`); `PolicyUniquelyReachable` is
/// `False` while a new ReplicaSet of the policy server rolls out (lines 107-118): the old pods
/// still answer, with the old configuration (monitor mode, or fewer rules), and the webhook keeps
/// its old rules until the rollout ends.
const CONDITIONS: [(&str, Check, &str); 2] = [
    (
        "PolicyActive",
        Check::PolicyActive,
        "its webhook has not been created.",
    ),
    (
        "PolicyUniquelyReachable",
        Check::PolicyUniquelyReachable,
        "not every pod of its policy server belongs to the latest ReplicaSet: either a rollout is in progress, and the old pods may still answer with an older configuration of the policy (monitor mode, fewer rules), or, with no rollout, an evicted or failed policy-server pod keeps it False until the pod is garbage-collected. See which: kubectl -n kubewarden get pods -o wide (the controller's namespace) lists the policy-server pods and their status; delete a pod left Evicted or Failed (kubectl -n kubewarden delete pod <pod>), or wait for the rollout: kubectl wait --for=condition=PolicyUniquelyReachable clusteradmissionpolicy/<name>.",
    ),
];

/// The checks on the guard's ClusterAdmissionPolicy `name` (`None`: the API server said 404):
/// its mode, its status and conditions, and its settings. Rules, selectors, failurePolicy and
/// matchConditions are read from the webhook ([`check_webhook`]). The settings come back read
/// as the guard reads them: the probe decides with them.
pub fn check_policy(name: &str, policy: Option<&Value>) -> Result<Settings, Refusal> {
    let Some(policy) = policy else {
        return Err(refuse(
            Check::GuardExists,
            format!(
                "the ClusterAdmissionPolicy {name} does not exist, so no DELETE would be judged."
            ),
        ));
    };
    let what = format!("the ClusterAdmissionPolicy {name}");
    check_fields(policy, &what, &POLICY_FIELDS)?;
    let conditions = policy
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (kind, check, why) in CONDITIONS {
        let status = conditions
            .iter()
            .find(|c| text(c, "/type") == Some(kind))
            .and_then(|c| text(c, "/status"))
            .unwrap_or("absent");
        if status != "True" {
            return Err(refuse(
                check,
                format!(
                    "{what} has condition {kind} {status}: {}",
                    why.replace("<name>", name)
                ),
            ));
        }
    }
    let raw = policy
        .pointer("/spec/settings")
        .cloned()
        .unwrap_or(Value::Null);
    let settings = guard::settings::parse_and_validate(raw).map_err(|e| {
        refuse(
            Check::SettingsAreValid,
            format!(
                "{what} has settings the guard refuses: {}. Fix them in its spec.settings.",
                guard::message::describe(&e)
            ),
        )
    })?;
    if settings.fail_open_on_lookup_error {
        return Err(refuse(
            Check::FailOpenNotSet,
            format!(
                "{what} sets failOpenOnLookupError: a failed lookup would let a template in use be deleted."
            ),
        ));
    }
    Ok(settings)
}

/// The name kubewarden-controller gives a ClusterAdmissionPolicy's ValidatingWebhookConfiguration
/// (v1.36.0-beta.1 `api/policies/v1/clusteradmissionpolicy_types.go:215`, `GetUniqueName`, used
/// as the name at `internal/controller/policy_subreconciler_webhook.go:50`).
pub fn webhook_configuration_name(policy: &str) -> String {
    format!("clusterwide-{policy}")
}

/// The label kube-apiserver puts on every Namespace, holding its name (k8s.io/api
/// `core/v1/well_known_labels.go`, `LabelMetadataName`).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// template-cleanup's service account, as examples/cleanup/component/cleanup.yaml names it.
pub const CLEANUP_ACCOUNT: &str = "capi-template-cleanup";

/// The one matchCondition template-cleanup's own policy carries (examples/cleanup/guard/
/// kustomization.yaml): it selects template-cleanup's service account in any namespace, so it is
/// true for every DELETE template-cleanup sends and exempts none of them. examples/cleanup/component
/// gives the main guard a condition that skips one account this selects (template-cleanup's, in
/// its namespace), so each template DELETE is judged by at least one of the two policies.
pub const SELECTS_THE_CLEANUP: (&str, &str) = (
    "only-capi-template-cleanup",
    "request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':capi-template-cleanup')",
);

/// Whether a matchCondition is provably true for template-cleanup's DELETEs: exactly
/// [`SELECTS_THE_CLEANUP`], whitespace aside. Anything else could be false for some template
/// DELETE (an annotation, a namespace, another user), and kube-apiserver then skips the webhook
/// and lets the DELETE through ("If any matchCondition evaluates to FALSE, the webhook is
/// skipped", k8s.io/api `admissionregistration/v1/types.go`, `ValidatingWebhook.MatchConditions`);
/// template-cleanup cannot evaluate CEL, so it refuses.
fn harmless(condition: &Value) -> bool {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    text(condition, "/name") == Some(SELECTS_THE_CLEANUP.0)
        && text(condition, "/expression").map(squash) == Some(squash(SELECTS_THE_CLEANUP.1))
}

/// The checks on the guard's ValidatingWebhookConfiguration (`None`: the API server said 404),
/// which is what kube-apiserver applies: the guard's webhook exists, fails closed, has no
/// objectSelector and no matchCondition that could exempt a template DELETE, and its
/// namespaceSelector leaves out only namespaces it names. Returns its rules and the namespaces it
/// never judges.
///
/// kubewarden-controller v1.36.0-beta.1 builds the webhook `clusterwide-<guard>.kubewarden.admission`
/// (`internal/controller/policy_subreconciler_webhook.go:59-75`) with a namespaceSelector of its
/// own (`namespaceSelector`, lines 193-219): unless the policy sets
/// `spec.allowInsideAdmissionControllerNamespace`, `kubernetes.io/metadata.name NotIn [<the
/// controller's namespace>]` followed by the policy's own expressions. Such expressions are
/// understood; any other term fails the check. And whatever the selector says, the namespace of
/// the webhook's service (the policy server's, `clientConfig.service.namespace`, line 33) is never
/// judged with the chart's default `alwaysAcceptAdmissionReviewsOnDeploymentsNamespace: true`
/// (`charts/kubewarden-controller/values.yaml:153`): the policy server then accepts every request
/// made in its own namespace without running the policy (`crates/policy-server/src/api/service.rs`,
/// lines 37-63).
pub fn check_webhook(name: &str, webhook: Option<&Value>) -> Result<Webhook, Refusal> {
    let configuration = webhook_configuration_name(name);
    let installed = Check::WebhookInstalled;
    let Some(webhook) = webhook else {
        return Err(refuse(
            installed,
            format!(
                "the ValidatingWebhookConfiguration {configuration} does not exist, so no DELETE would be judged by the guard {name}."
            ),
        ));
    };
    let entry = format!("{configuration}.kubewarden.admission");
    let Some(hook) = webhook
        .pointer("/webhooks")
        .and_then(Value::as_array)
        .and_then(|hooks| hooks.iter().find(|h| text(h, "/name") == Some(&entry)))
    else {
        return Err(refuse(
            installed,
            format!(
                "the ValidatingWebhookConfiguration {configuration} has no webhook {entry}, so no DELETE would be judged by the guard {name}."
            ),
        ));
    };
    let what = format!("the webhook {entry}");
    check_fields(hook, &what, &WEBHOOK_FIELDS)?;
    let conditions = hook
        .get("matchConditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if let Some(exempting) = conditions.iter().find(|c| !harmless(c)) {
        return Err(refuse(
            Check::NoExemptingCondition,
            format!(
                "{what} has the matchCondition {exempting}: when it is false for a template DELETE, kube-apiserver lets the DELETE through without asking the guard. Give template-cleanup a policy whose only condition is {:?} (examples/cleanup).",
                SELECTS_THE_CLEANUP.0
            ),
        ));
    }
    let sees_every = Check::SeesEveryTemplate;
    if narrows(hook.get("objectSelector")) {
        return Err(refuse(
            sees_every,
            format!(
                "{what} has an objectSelector: a template it does not select would be deleted unchecked."
            ),
        ));
    }
    let other = |what_: String| {
        refuse(
            sees_every,
            format!(
                "{what} has a namespaceSelector {what_}: a template in a namespace it does not select would be deleted unchecked."
            ),
        )
    };
    let selector = hook.get("namespaceSelector").filter(|s| !s.is_null());
    match selector.and_then(|s| s.get("matchLabels")) {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) if labels.is_empty() => {}
        Some(labels) => return Err(other(format!("with matchLabels {labels}"))),
    }
    let mut unseen = Vec::new();
    let expressions = match selector.and_then(|s| s.get("matchExpressions")) {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(list)) => list.as_slice(),
        Some(other_value) => {
            return Err(other(format!("whose matchExpressions are {other_value}")));
        }
    };
    for expression in expressions {
        let values = expression.get("values").and_then(Value::as_array);
        let names: Option<Vec<String>> =
            values.and_then(|v| v.iter().map(|n| n.as_str().map(str::to_string)).collect());
        match (
            text(expression, "/key"),
            text(expression, "/operator"),
            names,
        ) {
            (Some(NAMESPACE_NAME_LABEL), Some("NotIn"), Some(names)) => unseen.extend(names),
            _ => return Err(other(format!("term {expression}"))),
        }
    }
    if let Some(namespace) = text(hook, "/clientConfig/service/namespace") {
        unseen.push(namespace.to_string());
    }
    unseen.sort();
    unseen.dedup();
    let rules = hook
        .get("rules")
        .and_then(Value::as_array)
        .filter(|rules| !rules.is_empty())
        .ok_or_else(|| refuse(Check::RulesCoverDelete, format!("{what} has no rules.")))?;
    let rules = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let field = |key: &str| strings(rule.get(key), &format!("rules[{i}].{key}"));
            Ok(Rule {
                api_groups: field("apiGroups")?,
                api_versions: field("apiVersions")?,
                resources: field("resources")?,
                operations: field("operations")?,
                scope: match rule.get("scope") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(scope)) => Some(scope.clone()),
                    Some(other) => {
                        return Err(RuleField::NotAString {
                            field: format!("rules[{i}].scope"),
                            value: other.clone(),
                        });
                    }
                },
            })
        })
        .collect::<Result<Vec<_>, RuleField>>()
        .map_err(|e| refuse(Check::RulesCoverDelete, format!("{what}: {e}")))?;
    Ok(Webhook {
        rules,
        unseen,
        only_cleanup: !conditions.is_empty(),
    })
}

/// The last check: the guard's rules send the DELETE of every kind the pass would delete.
pub fn check_coverage(webhook: &Webhook, kinds: &[ServedKind]) -> Result<(), Refusal> {
    let missing: Vec<String> = kinds
        .iter()
        .filter(|k| {
            !webhook
                .rules
                .iter()
                .any(|r| r.covers_delete(&k.group, &k.version, &k.plural))
        })
        .map(|k| format!("{} at {}", k.resource(), k.version))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(refuse(
            Check::RulesCoverDelete,
            format!(
                "the guard's rules do not send the DELETE of {} to it.",
                missing.join(", ")
            ),
        ))
    }
}

/// Whether `username` is one the matchCondition [`SELECTS_THE_CLEANUP`] selects:
/// `startsWith('system:serviceaccount:') && endsWith(':capi-template-cleanup')`, evaluated as
/// CEL does on strings.
pub fn selected_by_the_cleanup_condition(username: &str) -> bool {
    username.starts_with("system:serviceaccount:")
        && username.ends_with(&format!(":{CLEANUP_ACCOUNT}"))
}

/// The check that the guard judges this very caller: `username` is who the API server says the
/// job is (SelfSubjectReview, `authentication.k8s.io/v1`). When the guard's webhook carries
/// template-cleanup's matchCondition, kube-apiserver sends it only the DELETEs of a service
/// account named `capi-template-cleanup`; anyone else's DELETEs are judged by another policy
/// (the main guard, whose `not-capi-template-cleanup` selects every other user), if by any, and
/// neither the pre-flight nor the probe of this guard says anything about them.
pub fn check_caller(name: &str, webhook: &Webhook, username: &str) -> Result<(), Refusal> {
    if !webhook.only_cleanup || selected_by_the_cleanup_condition(username) {
        return Ok(());
    }
    Err(refuse(
        Check::JudgesThisCaller,
        format!(
            "the API server says this job runs as {username:?} (SelfSubjectReview), but the guard {name} judges only DELETEs by a service account named {CLEANUP_ACCOUNT} (its matchCondition {:?}). The DELETEs of {username:?} would be judged by another policy (the main guard, through its matchCondition \"not-capi-template-cleanup\"), if by any, and this pass has checked nothing about that one. Run template-cleanup as the service account {CLEANUP_ACCOUNT} (the CronJob of examples/cleanup; by hand: kubectl create job --from=cronjob/capi-template-cleanup).",
            SELECTS_THE_CLEANUP.0
        ),
    ))
}

/// The check that rules which name a template kind send its DELETE to the guard: every
/// namespaced `*Template` kind the cluster serves whose group and resource a rule names, in any
/// operation, version or scope, must have a served version whose DELETE some rule sends
/// ([`Rule::covers_delete`]). Otherwise the pass would collect nothing of it and exit 0 forever.
pub fn check_named_coverage(webhook: &Webhook, served: &[Served]) -> Result<(), Refusal> {
    let named = |s: &Served| {
        s.is_template()
            && webhook
                .rules
                .iter()
                .any(|r| has(&r.api_groups, &s.kind.group) && has(&r.resources, &s.kind.plural))
    };
    let mut missing: Vec<String> = served
        .iter()
        .filter(|s| named(s))
        .filter(|s| {
            !served.iter().any(|v| {
                v.kind.group == s.kind.group
                    && v.kind.plural == s.kind.plural
                    && webhook
                        .rules
                        .iter()
                        .any(|r| r.covers_delete(&v.kind.group, &v.kind.version, &v.kind.plural))
            })
        })
        .map(|s| s.kind.resource())
        .collect();
    missing.sort();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    Err(refuse(
        Check::RulesCoverDelete,
        format!(
            "the guard's rules name {} but send no DELETE of them to it (operations, apiVersions or scope), so the pass would collect none of them and read as a success. Add DELETE to those rules of the guard's ClusterAdmissionPolicy, as examples/cleanup/guard ships them.",
            missing.join(", ")
        ),
    ))
}

/// A resource the API server serves (discovery), at one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub kind: ServedKind,
    pub namespaced: bool,
    /// The group's preferred version.
    pub preferred: bool,
}

impl Served {
    /// A namespaced kind the guard protects (`guard::catalogue::template_class`, the policy's
    /// own test), not a subresource: the only kinds a pass may collect, whatever a wildcard rule
    /// sends to the guard. A template kind the guard does not know would be let go unjudged.
    pub fn is_template(&self) -> bool {
        self.namespaced
            && !self.kind.plural.contains('/')
            && guard::catalogue::template_class(&self.kind.group, &self.kind.kind).is_some()
    }
}

/// The served version of `kind` in `group`, the group's preferred one first (`None`: not
/// served).
pub fn served_kind<'a>(served: &'a [Served], group: &str, kind: &str) -> Option<&'a ServedKind> {
    served
        .iter()
        .filter(|s| s.kind.group == group && s.kind.kind == kind)
        .min_by_key(|s| !s.preferred)
        .map(|s| &s.kind)
}

/// The groups the guard's rules name, whatever their operations (`*` cannot be resolved and is
/// skipped): discovery reads them all, so that rules which name template kinds but do not send
/// their DELETE are seen ([`check_named_coverage`]) instead of collecting nothing.
pub fn rule_groups(webhook: &Webhook) -> Vec<String> {
    let mut groups: Vec<String> = webhook
        .rules
        .iter()
        .flat_map(|r| r.api_groups.iter().filter(|g| *g != "*").cloned())
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

/// The kinds a pass collects: each namespaced template kind the cluster serves whose DELETE the
/// rules send to the guard, once, at the group's preferred version when the rules cover it. Only
/// kinds named `*Template`: every kind the guard judges is one, and a wildcard rule must not make
/// template-cleanup delete Machines.
pub fn collectable(webhook: &Webhook, served: &[Served]) -> Vec<ServedKind> {
    let covered = |s: &&Served| {
        s.is_template()
            && webhook
                .rules
                .iter()
                .any(|r| r.covers_delete(&s.kind.group, &s.kind.version, &s.kind.plural))
    };
    let mut out: Vec<ServedKind> = Vec::new();
    let mut candidates: Vec<&Served> = served.iter().filter(covered).collect();
    // preferred versions first, so that each (group, plural) keeps its preferred version
    candidates.sort_by_key(|s| !s.preferred);
    for s in candidates {
        if !out
            .iter()
            .any(|k| k.group == s.kind.group && k.plural == s.kind.plural)
        {
            out.push(s.kind.clone());
        }
    }
    out.sort();
    out
}
