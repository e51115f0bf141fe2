//! Admission request normalisation and the AdmissionResponse printed by
//! `run`, shaped like kwctl's.

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// What `validate` returns.
pub use kubewarden_policy_sdk::response::ValidationResponse;
/// What `validate_settings` returns, and what `validate-settings` prints.
pub use kubewarden_policy_sdk::settings::SettingsValidationResponse;

/// `admission/v1` GroupVersionKind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// `admission/v1` GroupVersionResource.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// `authentication/v1` UserInfo: every field optional, absent ones omitted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// `admission/v1` AdmissionRequest.  The request file is read into this
/// type and serialised again before being handed to the policy, as kwctl
/// does: unknown keys are dropped, `null` optional keys are omitted.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub operation: String,
    pub user_info: UserInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_object: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<serde_json::Value>,
}

/// What is sent to the policy as `request`.
#[derive(Debug, Clone)]
pub enum ValidateRequest {
    /// `--raw`, or a policy whose metadata says `policyType: raw`.
    Raw(serde_json::Value),
    AdmissionRequest(Box<AdmissionRequest>),
}

impl ValidateRequest {
    /// Builds the request like `kwctl run`: an `AdmissionReview` document is
    /// unwrapped to its `request`; anything else must be the request itself.
    pub fn build(request: &serde_json::Value, raw: bool) -> Result<Self> {
        if raw {
            return Ok(ValidateRequest::Raw(request.clone()));
        }
        let object = request
            .as_object()
            .ok_or_else(|| anyhow!("Invalid request object"))?;
        let req_obj =
            if object.get("kind").and_then(serde_json::Value::as_str) == Some("AdmissionReview") {
                object
                    .get("request")
                    .cloned()
                    .ok_or_else(|| anyhow!("invalid AdmissionReview object"))?
            } else {
                request.clone()
            };
        let adm_req: AdmissionRequest = serde_json::from_value(req_obj)
            .map_err(|e| anyhow!("cannot build AdmissionRequest object from given input: {e}"))?;
        Ok(ValidateRequest::AdmissionRequest(Box::new(adm_req)))
    }

    pub fn uid(&self) -> &str {
        match self {
            ValidateRequest::Raw(raw) => raw
                .get("uid")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default(),
            ValidateRequest::AdmissionRequest(req) => &req.uid,
        }
    }

    pub fn to_value(&self) -> Result<serde_json::Value> {
        Ok(match self {
            ValidateRequest::Raw(raw) => raw.clone(),
            ValidateRequest::AdmissionRequest(req) => serde_json::to_value(req)?,
        })
    }

    /// The object a mutation is compared against: the whole request when
    /// raw, `request.object` otherwise (absent for DELETE).
    pub fn object_for_diff(&self) -> Result<Option<serde_json::Value>> {
        let value = self.to_value()?;
        Ok(match self {
            ValidateRequest::Raw(_) => Some(value),
            ValidateRequest::AdmissionRequest(_) => value.get("object").cloned(),
        })
    }
}

/// Settings given to the policy: a JSON object (`null` means `{}`).
pub fn settings_from_value(value: serde_json::Value) -> Result<serde_json::Value> {
    match value {
        serde_json::Value::Null => Ok(serde_json::Value::Object(Default::default())),
        serde_json::Value::Object(_) => Ok(value),
        _ => Err(anyhow!("Invalid settings in CRD, not an object")),
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

/// The line printed by `run`.  Field order and omission rules are kwctl's:
/// `patchType`, `patch` and `status` are left out when empty,
/// `auditAnnotations` and `warnings` are always printed (`null` when empty).
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
    pub fn reject(uid: &str, message: String, code: u16) -> Self {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(message),
                code: Some(code),
            }),
            ..Default::default()
        }
    }

    pub fn reject_internal_server_error(uid: &str, message: String) -> Self {
        Self::reject(uid, format!("internal server error: {message}"), 500)
    }

    /// Turns the policy answer into the AdmissionResponse of request `uid`; a
    /// mutated object becomes a base64 JSON patch against `req_obj`.
    pub fn from_policy_validation_response(
        uid: &str,
        req_obj: Option<&serde_json::Value>,
        resp: &ValidationResponse,
    ) -> Result<Self> {
        let patch = match (&resp.mutated_object, req_obj) {
            (Some(_), None) => {
                return Ok(AdmissionResponse {
                    uid: uid.to_string(),
                    allowed: false,
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

        Ok(AdmissionResponse {
            uid: uid.to_string(),
            patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
            patch,
            ..AdmissionResponse::from(resp)
        })
    }
}

/// The verdict, status, audit annotations (sorted) and warnings of a policy
/// answer; no uid and no patch.
impl From<&ValidationResponse> for AdmissionResponse {
    fn from(resp: &ValidationResponse) -> Self {
        let status =
            (resp.message.is_some() || resp.code.is_some()).then(|| AdmissionResponseStatus {
                message: resp.message.clone(),
                code: resp.code,
            });
        AdmissionResponse {
            allowed: resp.accepted,
            status,
            audit_annotations: resp
                .audit_annotations
                .as_ref()
                .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            warnings: resp.warnings.clone(),
            ..Default::default()
        }
    }
}

/// RFC 6902 diff from `original` to `mutated`, serialised as JSON and
/// base64 encoded; `None` when they are equal.
pub fn json_patch_base64(
    original: &serde_json::Value,
    mutated: &serde_json::Value,
) -> Result<Option<String>> {
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
    use std::collections::HashMap;

    fn request() -> serde_json::Value {
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
    fn serde_json_map_is_sorted() {
        // kwctl's serde_json is built without `preserve_order`: objects are
        // sorted maps.  The JSON patch operation order depends on it.
        let v: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
        assert_eq!(v.to_string(), r#"{"a":2,"b":1}"#);
    }

    #[test]
    fn admission_request_is_normalised() {
        let req = ValidateRequest::build(&request(), false).unwrap();
        assert_eq!(req.uid(), "abc");
        let text = serde_json::to_string(&req.to_value().unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":{"group":"apps","kind":"Deployment","version":"v1"},"namespace":"default","object":{"metadata":{"labels":{"a":"1"},"name":"x"},"spec":{"replicas":1}},"operation":"CREATE","resource":{"group":"apps","resource":"deployments","version":"v1"},"uid":"abc","userInfo":{"username":"alice"}}"#
        );
    }

    #[test]
    fn admission_review_is_unwrapped() {
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request()});
        let req = ValidateRequest::build(&review, false).unwrap();
        assert_eq!(req.uid(), "abc");

        let err = ValidateRequest::build(&json!({"kind": "AdmissionReview"}), false).unwrap_err();
        assert_eq!(err.to_string(), "invalid AdmissionReview object");
        let err = ValidateRequest::build(&json!([1]), false).unwrap_err();
        assert_eq!(err.to_string(), "Invalid request object");
        let err = ValidateRequest::build(&json!({"uid": "x"}), false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot build AdmissionRequest object from given input: missing field `kind`"
        );
    }

    #[test]
    fn raw_request_is_kept() {
        let raw = json!({"uid": "r1", "user": "bob"});
        let req = ValidateRequest::build(&raw, true).unwrap();
        assert_eq!(req.uid(), "r1");
        assert_eq!(req.object_for_diff().unwrap(), Some(raw));
    }

    #[test]
    fn settings_must_be_object() {
        assert_eq!(settings_from_value(json!(null)).unwrap(), json!({}));
        assert!(settings_from_value(json!([1])).is_err());
    }

    #[test]
    fn patch_diff_and_base64() {
        let original =
            json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"replicas": 1}});
        let mutated = json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 3}});
        let patch = json_patch_base64(&original, &mutated).unwrap().unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&patch)
            .unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            r#"[{"op":"add","path":"/metadata/labels/b","value":"2"},{"op":"replace","path":"/spec/replicas","value":3}]"#
        );
        assert_eq!(json_patch_base64(&original, &original).unwrap(), None);
    }

    #[test]
    fn response_format_matches_kwctl() {
        let accepted = ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: None,
            audit_annotations: None,
            warnings: None,
        };
        let resp =
            AdmissionResponse::from_policy_validation_response("u1", Some(&json!({})), &accepted)
                .unwrap();
        assert_eq!(
            serde_json::to_string(&resp).unwrap(),
            r#"{"uid":"u1","allowed":true,"auditAnnotations":null,"warnings":null}"#
        );

        let rejected = ValidationResponse {
            accepted: false,
            message: Some("no".to_string()),
            code: Some(400),
            mutated_object: None,
            audit_annotations: Some(HashMap::from([("k".to_string(), "v".to_string())])),
            warnings: Some(vec!["w".to_string()]),
        };
        let resp =
            AdmissionResponse::from_policy_validation_response("u2", None, &rejected).unwrap();
        assert_eq!(
            serde_json::to_string(&resp).unwrap(),
            r#"{"uid":"u2","allowed":false,"status":{"message":"no","code":400},"auditAnnotations":{"k":"v"},"warnings":["w"]}"#
        );

        let mutating = ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: Some(json!({"a": 2})),
            audit_annotations: None,
            warnings: None,
        };
        let resp = AdmissionResponse::from_policy_validation_response(
            "u3",
            Some(&json!({"a": 1})),
            &mutating,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&resp).unwrap(),
            r#"{"uid":"u3","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJyZXBsYWNlIiwicGF0aCI6Ii9hIiwidmFsdWUiOjJ9XQ==","auditAnnotations":null,"warnings":null}"#
        );

        // DELETE: no object, mutation refused
        let resp =
            AdmissionResponse::from_policy_validation_response("u4", None, &mutating).unwrap();
        assert_eq!(
            serde_json::to_string(&resp).unwrap(),
            r#"{"uid":"u4","allowed":false,"status":{"message":"Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed"},"auditAnnotations":null,"warnings":null}"#
        );

        let resp = AdmissionResponse::reject_internal_server_error("u5", "boom".to_string());
        assert_eq!(
            serde_json::to_string(&resp).unwrap(),
            r#"{"uid":"u5","allowed":false,"status":{"message":"internal server error: boom","code":500},"auditAnnotations":null,"warnings":null}"#
        );
    }
}
