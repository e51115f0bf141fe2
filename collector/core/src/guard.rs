//! The pre-flight: the clean-up is only safe because the guard refuses the DELETE of a template
//! still in use. Before every pass it reads the guard's ClusterAdmissionPolicy and the webhook
//! configuration Kubewarden made of it, and deletes nothing unless the guard is certain to judge
//! every DELETE it sends. The fields and their defaults are Kubewarden's (kubewarden-controller
//! `api/policies/v1/policy_types.go`, `PolicySpec`, and `api/policies/v1/policy.go`,
//! `PolicyStatusEnum`, at v1.36.0-beta.1, as at 04bff54a, first released in v1.26.0).

use serde_json::Value;

use crate::Kind;

/// Why the pre-flight refused: the check's name and a sentence for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub check: &'static str,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pre-flight check `{}` failed: {} Nothing was deleted.",
            self.check, self.message
        )
    }
}

fn refuse(check: &'static str, message: String) -> Refusal {
    Refusal { check, message }
}

/// One admission rule of the guard (`admissionregistration.k8s.io/v1` `RuleWithOperations`:
/// kubewarden-controller v1.36.0-beta.1 `api/policies/v1/policy_types.go:67` declares
/// `spec.rules` as such, and `internal/controller/policy_subreconciler_webhook.go:66` copies them
/// into the webhook unchanged; not so the namespaceSelector, which [`check_webhook`] reads from
/// the webhook itself).
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
    /// `Matcher.scope`). Every template is namespaced: the clean-up collects no other kind.
    pub fn covers_delete(&self, group: &str, version: &str, plural: &str) -> bool {
        matches!(self.scope.as_deref(), None | Some("*" | "Namespaced"))
            && has(&self.api_groups, group)
            && has(&self.api_versions, version)
            && has(&self.resources, plural)
            && has(&self.operations, "DELETE")
    }
}

/// A guard that passed the policy checks: its rules, and what the operator should know.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Guard {
    pub rules: Vec<Rule>,
    /// Facts that do not stop the pass (the guard's `matchConditions` on the requester, which
    /// the clean-up cannot evaluate), printed on stderr.
    pub warnings: Vec<String>,
}

fn text<'a>(policy: &'a Value, pointer: &str) -> Option<&'a str> {
    policy.pointer(pointer).and_then(Value::as_str)
}

fn strings(value: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    let Some(items) = value.and_then(Value::as_array) else {
        return Err(format!("{what} is missing or not a list."));
    };
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{what} holds {item}, which is not a string."))
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

/// The checks on the guard's ClusterAdmissionPolicy `name` (`None`: the API server said 404).
pub fn check_policy(name: &str, policy: Option<&Value>) -> Result<Guard, Refusal> {
    let Some(policy) = policy else {
        return Err(refuse(
            "guard exists",
            format!(
                "the ClusterAdmissionPolicy {name} does not exist, so no DELETE would be judged."
            ),
        ));
    };
    // spec.mode defaults to protect (+kubebuilder:default:=protect)
    let spec_mode = text(policy, "/spec/mode").unwrap_or("protect");
    if spec_mode != "protect" {
        return Err(refuse(
            "spec.mode is protect",
            format!("the ClusterAdmissionPolicy {name} has spec.mode {spec_mode:?}: a policy in monitor mode allows every DELETE and only logs."),
        ));
    }
    let status_mode = text(policy, "/status/mode").unwrap_or("");
    if status_mode != "protect" {
        return Err(refuse(
            "status.mode is protect",
            format!("the policy server reports status.mode {status_mode:?} for {name}, not \"protect\": it may still run the policy in monitor mode."),
        ));
    }
    let policy_status = text(policy, "/status/policyStatus").unwrap_or("");
    if policy_status != "active" {
        return Err(refuse(
            "status.policyStatus is active",
            format!("the ClusterAdmissionPolicy {name} has status.policyStatus {policy_status:?}, not \"active\": its webhook may not be in place (from 1.36, Kubewarden leaves the policies of a deleted PolicyServer \"scheduled\", without webhooks; before, it deletes them)."),
        ));
    }
    // failurePolicy: "The default behaviour is Fail"
    let failure_policy = text(policy, "/spec/failurePolicy").unwrap_or("Fail");
    if failure_policy != "Fail" {
        return Err(refuse(
            "failurePolicy is Fail",
            format!("the ClusterAdmissionPolicy {name} has spec.failurePolicy {failure_policy:?}: while its policy server is down, every DELETE would be let through unchecked."),
        ));
    }
    match policy.pointer("/spec/settings/failOpenOnLookupError") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(other) => {
            return Err(refuse(
                "failOpenOnLookupError is not set",
                format!("the ClusterAdmissionPolicy {name} sets failOpenOnLookupError to {other}: a failed lookup would let a template in use be deleted."),
            ))
        }
    }
    for selector in ["objectSelector", "namespaceSelector"] {
        if narrows(policy.pointer(&format!("/spec/{selector}"))) {
            return Err(refuse(
                "the guard sees every template",
                format!("the ClusterAdmissionPolicy {name} sets spec.{selector}: a template it does not select would be deleted unchecked."),
            ));
        }
    }
    let rules = policy
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .filter(|rules| !rules.is_empty())
        .ok_or_else(|| {
            refuse(
                "rules cover DELETE",
                format!("the ClusterAdmissionPolicy {name} has no spec.rules."),
            )
        })?;
    let rules = rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let field = |key: &str| strings(rule.get(key), &format!("spec.rules[{i}].{key}"));
            Ok(Rule {
                api_groups: field("apiGroups")?,
                api_versions: field("apiVersions")?,
                resources: field("resources")?,
                operations: field("operations")?,
                scope: match rule.get("scope") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(scope)) => Some(scope.clone()),
                    Some(other) => {
                        return Err(format!(
                            "spec.rules[{i}].scope holds {other}, which is not a string."
                        ))
                    }
                },
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| {
            refuse(
                "rules cover DELETE",
                format!("the ClusterAdmissionPolicy {name}: {e}"),
            )
        })?;
    let mut warnings = Vec::new();
    if let Some(conditions) = policy
        .pointer("/spec/matchConditions")
        .and_then(Value::as_array)
    {
        // a condition on the requester could exempt the clean-up's own DELETEs
        let names: Vec<&str> = conditions
            .iter()
            .filter(|c| text(c, "/expression").is_some_and(|e| e.contains("userInfo")))
            .filter_map(|c| text(c, "/name"))
            .collect();
        if !names.is_empty() {
            warnings.push(format!(
                "the ClusterAdmissionPolicy {name} has matchConditions on the requester ({}); the clean-up cannot evaluate them: make sure none exempts its service account.",
                names.join(", ")
            ));
        }
    }
    Ok(Guard { rules, warnings })
}

/// The name kubewarden-controller gives a ClusterAdmissionPolicy's ValidatingWebhookConfiguration
/// (v1.36.0-beta.1 `api/policies/v1/clusteradmissionpolicy_types.go:215`, `GetUniqueName`, used
/// as the name at `internal/controller/policy_subreconciler_webhook.go:50`).
pub fn webhook_configuration_name(guard: &str) -> String {
    format!("clusterwide-{guard}")
}

/// The label kube-apiserver puts on every Namespace, holding its name (k8s.io/api
/// `core/v1/well_known_labels.go`, `LabelMetadataName`).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The checks on the guard's ValidatingWebhookConfiguration (`None`: the API server said 404);
/// returns the namespaces its webhook never sees. kubewarden-controller v1.36.0-beta.1 builds the
/// webhook `clusterwide-<guard>.kubewarden.admission`
/// (`internal/controller/policy_subreconciler_webhook.go:59-75`) with a namespaceSelector of its
/// own (`namespaceSelector`, lines 193-219): unless the policy sets
/// `spec.allowInsideAdmissionControllerNamespace` (`api/policies/v1/clusteradmissionpolicy_types.go:101`), it is `kubernetes.io/metadata.name NotIn
/// [<the controller's namespace>]` followed by the policy's own expressions. A template in such a
/// namespace is never judged by the guard. Such expressions are understood; any other term of the
/// selector fails the check, as a policy's own selector does.
pub fn check_webhook(name: &str, webhook: Option<&Value>) -> Result<Vec<String>, Refusal> {
    let configuration = webhook_configuration_name(name);
    let installed = "the guard's webhook is installed";
    let Some(webhook) = webhook else {
        return Err(refuse(
            installed,
            format!("the ValidatingWebhookConfiguration {configuration} does not exist, so no DELETE would be judged by the guard {name}."),
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
            format!("the ValidatingWebhookConfiguration {configuration} has no webhook {entry}, so no DELETE would be judged by the guard {name}."),
        ));
    };
    let sees_every = "the guard sees every template";
    let other = |what: String| {
        refuse(
            sees_every,
            format!("the webhook {entry} has a namespaceSelector {what}: a template in a namespace it does not select would be deleted unchecked."),
        )
    };
    let selector = hook.get("namespaceSelector").filter(|s| !s.is_null());
    match selector.and_then(|s| s.get("matchLabels")) {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) if labels.is_empty() => {}
        Some(labels) => return Err(other(format!("with matchLabels {labels}"))),
    }
    let mut unseen = Vec::new();
    let expressions = selector.and_then(|s| s.get("matchExpressions"));
    let expressions = match expressions {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(list)) => list.as_slice(),
        Some(other_value) => {
            return Err(other(format!("whose matchExpressions are {other_value}")))
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
    unseen.sort();
    unseen.dedup();
    Ok(unseen)
}

/// The last check: the guard's rules send the DELETE of every kind the pass would delete.
pub fn check_coverage(guard: &Guard, kinds: &[Kind]) -> Result<(), Refusal> {
    let missing: Vec<String> = kinds
        .iter()
        .filter(|k| {
            !guard
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
            "rules cover DELETE",
            format!(
                "the guard's rules do not send the DELETE of {} to it.",
                missing.join(", ")
            ),
        ))
    }
}

/// A resource the API server serves (discovery), at one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub kind: Kind,
    pub namespaced: bool,
    /// The group's preferred version.
    pub preferred: bool,
}

/// The groups the guard's DELETE rules name (`*` cannot be resolved and is skipped).
pub fn rule_groups(guard: &Guard) -> Vec<String> {
    let mut groups: Vec<String> = guard
        .rules
        .iter()
        .filter(|r| has(&r.operations, "DELETE"))
        .flat_map(|r| r.api_groups.iter().filter(|g| *g != "*").cloned())
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

/// The kinds a pass collects: each namespaced template kind the cluster serves whose DELETE the
/// rules send to the guard, once, at the group's preferred version when the rules cover it. Only
/// kinds named `*Template`: every kind the guard judges is one, and a wildcard rule must not make
/// the clean-up delete Machines.
pub fn collectable(guard: &Guard, served: &[Served]) -> Vec<Kind> {
    let covered = |s: &&Served| {
        s.namespaced
            && s.kind.kind.ends_with("Template")
            && !s.kind.plural.contains('/')
            && guard
                .rules
                .iter()
                .any(|r| r.covers_delete(&s.kind.group, &s.kind.version, &s.kind.plural))
    };
    let mut out: Vec<Kind> = Vec::new();
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
