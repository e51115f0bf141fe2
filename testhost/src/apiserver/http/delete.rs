//! A DELETE as kube-apiserver v1.33 handles it: preconditions, the validating webhook (called as
//! its configuration says, [`matching`]; the policy run in process, its failurePolicy,
//! Kubewarden's monitor mode), finalizers and dry run.

use serde_json::{Value, json};

use super::{Front, Query, Reply, Target, bad_request, matching, now, status};
use crate::admission::ValidateRequest;
use crate::host::lock;

impl Front {
    /// A DELETE in kube-apiserver's order (apiserver/pkg/registry/generic/registry/store.go,
    /// `Delete`; storage/etcd3/store.go, `conditionalDelete`): the preconditions, then the
    /// validating webhook, then the object is gone or, with finalizers, gets a
    /// deletionTimestamp. A dry run (query `dryRun=All` or DeleteOptions `dryRun: [All]`) changes
    /// nothing.
    pub(super) fn delete(&self, target: &Target, query: &Query, body: &str) -> Reply {
        let options: Value = match body.trim() {
            "" => json!({}),
            body => match serde_json::from_str(body) {
                Ok(options) => options,
                Err(e) => return bad_request(format!("the DeleteOptions are not JSON: {e}")),
            },
        };
        let mut api = lock(&self.api);
        let Some(mut object) = api.held.get(&target.key()).cloned() else {
            return target.not_found();
        };
        if self.no_namespace.contains(&target.kind) {
            // the namespace lifecycle's answer for a Namespace that no longer exists
            let ns = target.namespace.clone().unwrap_or_default();
            let details = json!({"name": ns, "kind": "namespaces"});
            return status(
                404,
                "NotFound",
                format!("namespaces \"{ns}\" not found"),
                details,
            );
        }
        if self.recreate.contains(&target.kind) {
            api.revision += 1;
            let meta = &mut object["metadata"];
            meta["uid"] = json!(format!("00000000-0000-4000-9000-{:012}", api.revision));
            meta["resourceVersion"] = json!(api.revision.to_string());
            meta["creationTimestamp"] = now();
            api.held.insert(target.key(), object.clone());
        }
        // storage.Preconditions.Check (apiserver/pkg/storage/interfaces.go), a Conflict through
        // the registry's InterpretDeleteError
        for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            let have = object["metadata"][field].as_str().unwrap_or_default();
            let want = options["preconditions"][field].as_str();
            if let Some(want) = want.filter(|w| *w != have) {
                let message = format!(
                    "Operation cannot be fulfilled on {} \"{}\": Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}",
                    target.resource(),
                    target.name
                );
                return target.status(409, "Conflict", message);
            }
        }
        let all = |d: &Vec<Value>| d.contains(&json!("All"));
        let dry_run = query.get("dryRun").is_some_and(|d| d == "All")
            || options["dryRun"].as_array().is_some_and(all);
        let review = review(target, &object, dry_run, &options, &self.args.user);
        let configurations: Vec<&Value> = api
            .held
            .values()
            .filter(|o| o["kind"] == "ValidatingWebhookConfiguration")
            .collect();
        let judged = if configurations.is_empty() {
            target.kind.ends_with("Template")
        } else {
            let namespace = target.namespace.clone().unwrap_or_default();
            let labels = api
                .held
                .values()
                .find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == namespace.as_str())
                .map_or(json!({}), |n| n["metadata"]["labels"].clone());
            let mut labels = if labels.is_object() {
                labels
            } else {
                json!({})
            };
            labels["kubernetes.io/metadata.name"] = json!(namespace);
            let (group, version) = target
                .api_version
                .split_once('/')
                .unwrap_or(("", &target.api_version));
            let what = (group, version, target.plural.as_str());
            match matching::call(
                &configurations,
                &self.args.webhook,
                what,
                &labels,
                &review["request"],
            ) {
                matching::Call::Judge => true,
                matching::Call::Skip(why) => {
                    eprintln!(" INFO testhost: the webhook is not called: {why}");
                    false
                }
                matching::Call::Fail(reason) => {
                    let details = json!({"causes": [{"message": reason}]});
                    return status(
                        500,
                        "InternalError",
                        format!("Internal error occurred: {reason}"),
                        details,
                    );
                }
            }
        };
        if judged {
            drop(api);
            if let Some(refusal) = self.admit(review) {
                return refusal;
            }
            api = lock(&self.api);
        }
        let finalizers = &object["metadata"]["finalizers"];
        let finalizers = finalizers.as_array().is_some_and(|f| !f.is_empty());
        let done = match (dry_run, finalizers) {
            (true, _) => "dry run",
            (false, true) => {
                let meta = &mut object["metadata"];
                if meta["deletionTimestamp"].is_null() {
                    meta["deletionTimestamp"] = now();
                }
                api.held.insert(target.key(), object.clone());
                "marked for deletion"
            }
            (false, false) => {
                api.held.remove(&target.key());
                "deleted"
            }
        };
        Reply(200, object, done.into())
    }

    /// The webhook's verdict on a DELETE; `None` lets it through. A refusal is kube-apiserver's
    /// (apiserver/pkg/admission/plugin/webhook/errors/statuserror.go, `ToStatusErr`); a webhook
    /// that cannot be called fails the request under failurePolicy Fail as an internal error
    /// (webhook/validating/dispatcher.go; webhook/errors.go, `ErrCallingWebhook`).
    fn admit(&self, review: Value) -> Option<Reply> {
        let name = &self.args.webhook;
        let Some(policy) = &self.policy else {
            let reason = format!(
                "failed calling webhook \"{name}\": failed to call webhook: Post \"https://policy-server-default.kubewarden.svc:8443/validate/clusterwide-capi-template-guard\": dial tcp: connect: connection refused"
            );
            let details = json!({"causes": [{"message": reason}]});
            let message = format!("Internal error occurred: {reason}");
            let fail = self.args.failure_policy == "Fail";
            return fail.then(|| status(500, "InternalError", message, details));
        };
        let judged = {
            let mut judged = lock(&self.judged);
            *judged += 1;
            *judged
        };
        let response = match ValidateRequest::build(&review) {
            Ok(request) => policy.validate(&request, &json!({})),
            Err(e) => return Some(bad_request(format!("{e:#}"))),
        };
        let refusal = response.status.unwrap_or_default();
        let message = refusal.message.unwrap_or_default();
        if response.allowed {
            return None;
        }
        if self.args.monitor || self.args.monitor_after.is_some_and(|n| judged > n) {
            // policy-server's monitor mode: the evaluation is logged and the request allowed
            eprintln!(" INFO testhost: monitor mode: the policy would have refused: {message}");
            return None;
        }
        let denied = format!("admission webhook \"{name}\" denied the request");
        let message = match message.is_empty() {
            true => format!("{denied} without explanation"),
            false => format!("{denied}: {message}"),
        };
        let code = refusal.code.unwrap_or(400).max(400);
        Some(status(code, "", message, Value::Null))
    }
}

/// The AdmissionReview kube-apiserver sends a validating webhook for a DELETE by the clean-up's
/// service account (examples/cleanup).
fn review(target: &Target, object: &Value, dry_run: bool, options: &Value, user: &str) -> Value {
    let (group, version) = target
        .api_version
        .split_once('/')
        .unwrap_or(("", &target.api_version));
    let kind = json!({"group": group, "version": version, "kind": target.kind});
    let resource = json!({"group": group, "version": version, "resource": target.plural});
    let mut options = options.clone();
    options["apiVersion"] = json!("meta.k8s.io/v1");
    options["kind"] = json!("DeleteOptions");
    let user = json!({"username": user,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:capi-system", "system:authenticated"]});
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": format!("{}-delete", object["metadata"]["uid"].as_str().unwrap_or_default()),
        "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
        "name": target.name, "namespace": target.namespace.clone().unwrap_or_default(),
        "operation": "DELETE", "userInfo": user, "oldObject": object, "dryRun": dry_run,
        "options": options}})
}

#[cfg(test)]
mod tests {
    use super::super::tests::{M3MT, front, get};
    use super::*;

    #[test]
    fn deletes_check_preconditions_then_the_webhook_then_finalizers() {
        let front = front(&["--failure-policy", "Ignore"]);
        let pre = r#"{"preconditions": {"uid": "other"}}"#;
        let Reply(code, conflict, _) = front.answer("DELETE", &format!("{M3MT}/a"), ["", ""], pre);
        let uid = "00000000-0000-4000-8000-000000000001";
        assert_eq!((code, &conflict["reason"]), (409, &json!("Conflict")));
        assert_eq!(
            conflict["message"],
            format!(
                "Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"a\": Precondition failed: UID in precondition: other, UID in object meta: {uid}"
            )
        );
        let dry = front.answer("DELETE", &format!("{M3MT}/a?dryRun=All"), ["", ""], "");
        assert_eq!((dry.0, get(&front, &format!("{M3MT}/a")).0), (200, 200));
        let Reply(code, marked, _) = front.answer("DELETE", &format!("{M3MT}/b"), ["", ""], "");
        assert!(code == 200 && marked["metadata"]["deletionTimestamp"].is_string());
        let pre = format!(r#"{{"preconditions": {{"uid": "{uid}"}}}}"#);
        let Reply(code, _, _) = front.answer("DELETE", &format!("{M3MT}/a"), ["", ""], &pre);
        let Reply(gone, status, _) = get(&front, &format!("{M3MT}/a"));
        assert_eq!((code, gone), (200, 404));
        let message = "metal3machinetemplates.infrastructure.cluster.x-k8s.io \"a\" not found";
        assert_eq!(status["message"], message);
    }
}
