//! The request handed to `validate` and the AdmissionResponse line `run` prints, shaped like
//! kwctl's.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use base64::Engine as _;
use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// What `validate` returns.
pub use kubewarden_policy_sdk::response::ValidationResponse;
/// What `validate_settings` returns.
pub use kubewarden_policy_sdk::settings::SettingsValidationResponse;

/// The keys of `admission/v1` AdmissionRequest; kwctl drops any other key and every `null`.
const REQUEST_KEYS: [&str; 15] = [
    "uid",
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "object",
    "oldObject",
    "dryRun",
    "options",
];
/// The keys kwctl's AdmissionRequest cannot do without.
const REQUIRED_KEYS: [&str; 5] = ["uid", "kind", "resource", "operation", "userInfo"];

/// What is sent to the policy as `request`: the AdmissionRequest, normalised as kwctl does.
#[derive(Debug, Clone)]
pub struct ValidateRequest(Value);

impl ValidateRequest {
    /// Builds the request like `kwctl run`: an `AdmissionReview` is unwrapped to its `request`,
    /// anything else must be the request itself; unknown keys and `null`s are dropped.
    pub fn build(request: &Value) -> Result<Self> {
        let object = request
            .as_object()
            .ok_or_else(|| anyhow!("Invalid request object"))?;
        let object = if object.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
            object
                .get("request")
                .and_then(Value::as_object)
                .ok_or_else(|| anyhow!("invalid AdmissionReview object"))?
        } else {
            object
        };
        let invalid =
            |e: String| anyhow!("cannot build AdmissionRequest object from given input: {e}");
        if let Some(missing) = REQUIRED_KEYS.iter().find(|k| !object.contains_key(**k)) {
            return Err(invalid(format!("missing field `{missing}`")));
        }
        let mut normalised: Map<String, Value> = REQUEST_KEYS
            .iter()
            .filter_map(|k| {
                object
                    .get(*k)
                    .filter(|v| !v.is_null())
                    .map(|v| (k.to_string(), v.clone()))
            })
            .collect();
        if let Some(Value::Object(user)) = normalised.get_mut("userInfo") {
            user.retain(|_, v| !v.is_null());
        }
        let normalised = Value::Object(normalised);
        // the field types are the SDK's, which is how the policy reads them
        serde_json::from_value::<KubernetesAdmissionRequest>(normalised.clone())
            .map_err(|e| invalid(e.to_string()))?;
        Ok(ValidateRequest(normalised))
    }

    pub fn uid(&self) -> &str {
        self.0["uid"].as_str().unwrap_or_default()
    }

    /// What `validate` is called with: this request and `settings`.
    pub fn payload(&self, settings: &Value) -> Vec<u8> {
        json!({"request": self.0, "settings": settings})
            .to_string()
            .into_bytes()
    }

    /// The object a mutation is compared against (absent for DELETE).
    pub fn object(&self) -> Option<&Value> {
        self.0.get("object")
    }
}

/// `AdmissionResponse.status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdmissionResponseStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// The line printed by `run`: kwctl's policy evaluator's own AdmissionResponse (neither the SDK
/// nor k8s-openapi has admission/v1 types; the request side is the SDK's). Field order and
/// omission rules are kwctl's: `patchType`, `patch` and `status` are left out when empty,
/// `auditAnnotations` and `warnings` always printed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionResponseStatus>,
    pub audit_annotations: Option<BTreeMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    pub fn reject_internal_server_error(uid: &str, message: String) -> Self {
        AdmissionResponse {
            uid: uid.to_string(),
            status: Some(AdmissionResponseStatus {
                message: Some(format!("internal server error: {message}")),
                code: Some(500),
            }),
            ..Default::default()
        }
    }

    /// The AdmissionResponse of request `uid`; a mutated object becomes a base64 JSON patch
    /// against `original` (none on DELETE: the host refuses that mutation).
    pub fn from_policy(
        uid: &str,
        original: Option<&Value>,
        resp: &ValidationResponse,
    ) -> Result<Self> {
        let patch = match (&resp.mutated_object, original) {
            (Some(_), None) => {
                return Ok(AdmissionResponse {
                    uid: uid.to_string(),
                    status: Some(AdmissionResponseStatus {
                        message: Some("Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed".to_string()),
                        code: None,
                    }),
                    ..Default::default()
                });
            }
            (Some(mutated), Some(original)) => json_patch_base64(original, mutated)?,
            (None, _) => None,
        };
        let status =
            (resp.message.is_some() || resp.code.is_some()).then(|| AdmissionResponseStatus {
                message: resp.message.clone(),
                code: resp.code,
            });
        Ok(AdmissionResponse {
            uid: uid.to_string(),
            allowed: resp.accepted,
            patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
            patch,
            status,
            audit_annotations: resp
                .audit_annotations
                .as_ref()
                .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            warnings: resp.warnings.clone(),
        })
    }
}

/// RFC 6902 diff from `original` to `mutated`, as JSON in base64; `None` when they are equal.
fn json_patch_base64(original: &Value, mutated: &Value) -> Result<Option<String>> {
    let diff = json_patch::diff(original, mutated);
    if diff.0.is_empty() {
        return Ok(None);
    }
    let text = serde_json::to_string(&diff)?;
    Ok(Some(base64::engine::general_purpose::STANDARD.encode(text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        json!({
            "uid": "abc",
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": null},
            "name": null,
            "namespace": "default",
            "unknownKey": 1,
            "object": {"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"replicas": 1}},
            "oldObject": null
        })
    }

    #[test]
    fn requests_are_normalised_like_kwctl() {
        let req = ValidateRequest::build(&request()).unwrap();
        assert_eq!(req.uid(), "abc");
        // serde_json without `preserve_order`, as kwctl: sorted keys (the patch order depends on it)
        assert_eq!(
            String::from_utf8(req.payload(&json!({"a": 1}))).unwrap(),
            r#"{"request":{"kind":{"group":"apps","kind":"Deployment","version":"v1"},"namespace":"default","object":{"metadata":{"labels":{"a":"1"},"name":"x"},"spec":{"replicas":1}},"operation":"CREATE","resource":{"group":"apps","resource":"deployments","version":"v1"},"uid":"abc","userInfo":{"username":"alice"}},"settings":{"a":1}}"#
        );
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request()});
        assert_eq!(ValidateRequest::build(&review).unwrap().uid(), "abc");
        for (input, text) in [
            (
                json!({"kind": "AdmissionReview"}),
                "invalid AdmissionReview object",
            ),
            (json!([1]), "Invalid request object"),
            (
                json!({"uid": "x"}),
                "cannot build AdmissionRequest object from given input: missing field `kind`",
            ),
        ] {
            assert_eq!(
                ValidateRequest::build(&input).unwrap_err().to_string(),
                text
            );
        }
    }

    /// The other answers are checked through a guest in e2e_tests.rs.
    #[test]
    fn a_mutation_of_a_delete_is_refused_like_kwctl() {
        let mutating = ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: Some(json!({"a": 2})),
            audit_annotations: None,
            warnings: None,
        };
        let response = AdmissionResponse::from_policy("u4", None, &mutating).unwrap();
        assert_eq!(
            serde_json::to_string(&response).unwrap(),
            r#"{"uid":"u4","allowed":false,"status":{"message":"Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed"},"auditAnnotations":null,"warnings":null}"#
        );
    }
}
