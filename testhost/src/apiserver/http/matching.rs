//! Whether kube-apiserver calls the validating webhook for a DELETE, read from the
//! ValidatingWebhookConfiguration this server holds (k8s.io/apiserver v0.36.3
//! `pkg/admission/plugin/webhook/generic/webhook.go`, `ShouldCallHook`): its rules
//! (`predicates/rules/rules.go`), its namespaceSelector (`predicates/namespace/matcher.go`, with the
//! label kube-apiserver puts on every Namespace, `kubernetes.io/metadata.name`), then its
//! matchConditions (`matchconditions/matcher.go`: CEL over the request; one false skips the
//! webhook; an error fails the request under failurePolicy Fail, and skips it under Ignore).
//! Held without such a configuration, the server calls the webhook on every template DELETE.

use cel_interpreter::{Context, Program, Value as Cel};
use serde_json::Value;

/// What the webhook configuration says of one DELETE.
#[derive(Debug, PartialEq)]
pub(super) enum Call {
    /// The webhook judges it.
    Judge,
    /// Not sent to the webhook: why.
    Skip(String),
    /// A matchCondition could not be evaluated, under failurePolicy Fail: kube-apiserver's text.
    Fail(String),
}

/// The webhook `name` of the configurations held, for a DELETE of `plural` in `group` at
/// `version` in `namespace` (labels `namespace_labels`), as `request` (the AdmissionRequest).
pub(super) fn call(
    configurations: &[&Value],
    name: &str,
    (group, version, plural): (&str, &str, &str),
    namespace_labels: &Value,
    request: &Value,
) -> Call {
    let Some(hook) = configurations
        .iter()
        .filter_map(|c| c["webhooks"].as_array())
        .flatten()
        .find(|w| w["name"] == name)
    else {
        return Call::Skip(format!("no webhook {name} is configured"));
    };
    let has = |list: &Value, item: &str| {
        list.as_array()
            .is_some_and(|l| l.iter().any(|x| x == "*" || x == item))
    };
    let rule_matches = hook["rules"].as_array().is_some_and(|rules| {
        rules.iter().any(|r| {
            matches!(r["scope"].as_str(), None | Some("*" | "Namespaced"))
                && has(&r["apiGroups"], group)
                && has(&r["apiVersions"], version)
                && has(&r["resources"], plural)
                && has(&r["operations"], "DELETE")
        })
    });
    if !rule_matches {
        return Call::Skip(format!(
            "no rule of {name} sends DELETE of {plural}.{group}"
        ));
    }
    if !selects(&hook["namespaceSelector"], namespace_labels) {
        return Call::Skip(format!(
            "the namespaceSelector of {name} leaves the namespace out"
        ));
    }
    let fail = hook["failurePolicy"].as_str() != Some("Ignore");
    for condition in hook["matchConditions"].as_array().into_iter().flatten() {
        let expression = condition["expression"].as_str().unwrap_or_default();
        let condition_name = condition["name"].as_str().unwrap_or_default();
        match evaluate(expression, request) {
            Ok(true) => {}
            Ok(false) => {
                return Call::Skip(format!(
                    "matchCondition {condition_name} of {name} is false"
                ));
            }
            Err(e) if fail => {
                return Call::Fail(format!(
                    "failed calling webhook \"{name}\": matchCondition {condition_name}: {e}"
                ));
            }
            Err(e) => return Call::Skip(format!("matchCondition {condition_name}: {e}")),
        }
    }
    Call::Judge
}

/// A label selector (`matchLabels`, `matchExpressions` with In, NotIn, Exists, DoesNotExist)
/// over `labels`; an absent one selects everything.
fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |key: &str| labels[key].as_str();
    let labels_match = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| v.as_str() == label(k)));
    let expressions_match = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values = e["values"].as_array();
            let listed = || values.is_some_and(|v| v.iter().any(|x| Some(x) == labels.get(key)));
            match e["operator"].as_str() {
                Some("In") => label(key).is_some() && listed(),
                Some("NotIn") => !listed(),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        });
    labels_match && expressions_match
}

/// A matchCondition's CEL expression over the variables kube-apiserver binds
/// (`pkg/admission/plugin/cel`: `CreateAdmissionRequest` and the activation): `object` and
/// `oldObject` (null when absent: a DELETE has no `object`), and `request`, the AdmissionRequest
/// without them. It must give a bool.
fn evaluate(expression: &str, request: &Value) -> Result<bool, String> {
    let program = Program::compile(expression).map_err(|e| format!("{e}"))?;
    let mut context = Context::default();
    let mut request = request.clone();
    let mut take = |key| request.as_object_mut().and_then(|r| r.remove(key));
    let objects = ["object", "oldObject"].map(|key| (key, take(key).unwrap_or(Value::Null)));
    for (name, value) in objects.into_iter().chain([("request", request)]) {
        context
            .add_variable(name, value)
            .map_err(|e| format!("{e}"))?;
    }
    match program.execute(&context) {
        Ok(Cel::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("the expression gives {other:?}, not a bool")),
        Err(e) => Err(format!("{e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CLEANUP: &str = "request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':capi-template-cleanup')";

    fn hook(conditions: Value) -> Value {
        json!({"webhooks": [{"name": "w", "failurePolicy": "Fail",
            "rules": [{"apiGroups": ["infrastructure.cluster.x-k8s.io"], "apiVersions": ["*"],
                       "resources": ["metal3machinetemplates"], "operations": ["DELETE"]}],
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                  "operator": "NotIn", "values": ["kubewarden"]}]},
            "matchConditions": conditions}]})
    }

    fn by(user: &str, namespace: &str, hook: &Value) -> Call {
        let request = json!({"userInfo": {"username": user}, "namespace": namespace});
        let labels = json!({"kubernetes.io/metadata.name": namespace});
        let target = (
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "metal3machinetemplates",
        );
        call(&[hook], "w", target, &labels, &request)
    }

    #[test]
    fn the_webhook_judges_what_its_rules_selector_and_conditions_send() {
        let cleanup = hook(json!([{"name": "only-cleanup", "expression": CLEANUP}]));
        let job = "system:serviceaccount:capi-system:capi-template-cleanup";
        assert_eq!(by(job, "edge", &cleanup), Call::Judge);
        assert!(
            matches!(by("kubernetes-admin", "edge", &cleanup), Call::Skip(why) if why.contains("only-cleanup"))
        );
        assert!(
            matches!(by(job, "kubewarden", &cleanup), Call::Skip(why) if why.contains("namespaceSelector"))
        );
        let negated = hook(json!([{"name": "not-cleanup", "expression": format!("!({CLEANUP})")}]));
        assert_eq!(by("kubernetes-admin", "edge", &negated), Call::Judge);
        let broken = hook(json!([{"name": "broken", "expression": "request.nothing.here"}]));
        assert!(matches!(by(job, "edge", &broken), Call::Fail(_)));
        let mut other = hook(json!([]));
        other["webhooks"][0]["rules"][0]["operations"] = json!(["CREATE"]);
        assert!(matches!(by(job, "edge", &other), Call::Skip(why) if why.contains("no rule")));
    }

    /// The main guard's break-glass condition (examples/guard) reads `oldObject`, which a DELETE's
    /// `request` variable does not hold.
    #[test]
    fn conditions_read_the_old_object_beside_the_request() {
        let glass = "!has(oldObject.metadata.annotations) || !('capi-template-guard.kubewarden.io/break-glass' in oldObject.metadata.annotations) || oldObject.metadata.annotations['capi-template-guard.kubewarden.io/break-glass'] != 'true'";
        let conditions = |e: &str| hook(json!([{"name": "c", "expression": e}]));
        let target = (
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "metal3machinetemplates",
        );
        let labels = json!({"kubernetes.io/metadata.name": "edge"});
        let call_on = |hook: &Value, annotations: Value| {
            let request = json!({"userInfo": {"username": "u"}, "namespace": "edge",
                "object": null, "oldObject": {"metadata": {"name": "t", "annotations": annotations}}});
            call(&[hook], "w", target, &labels, &request)
        };
        let (glass, annotated) = (
            conditions(glass),
            json!({"capi-template-guard.kubewarden.io/break-glass": "true"}),
        );
        assert_eq!(
            call_on(&glass, json!({"meta.helm.sh/release-name": "cluster"})),
            Call::Judge
        );
        assert!(matches!(call_on(&glass, annotated), Call::Skip(_)));
        let hidden = conditions("has(request.oldObject) || has(request.object) || object != null");
        assert!(matches!(call_on(&hidden, json!({})), Call::Skip(_)));
    }
}
