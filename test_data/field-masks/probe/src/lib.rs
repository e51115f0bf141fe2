//! The field-mask probe: `validate` makes each host call its settings list, in order, and rejects
//! with a message that is the JSON array of the answers (`{"answer": <JSON>}` or `{"error": text}`),
//! so that check-live.sh can compare what the real host sends with test_data/field-masks/vectors.json.

use std::collections::BTreeSet;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    get_resource, GetResourceRequest, ListResourcesByNamespaceRequest,
};
use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::settings::Validatable;
use kubewarden_policy_sdk::{protocol_version_guest, reject_request, validate_settings};
use serde::Deserialize;
use serde_json::{json, Value};
use wapc_guest::{self as guest, CallResult};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Settings {
    calls: Vec<Call>,
}

/// One host call: a list of one kind in one namespace, or a get of one object (through the host's
/// cache or not); `masks` as sent.
#[derive(Deserialize)]
#[serde(tag = "call", rename_all = "lowercase")]
enum Call {
    List {
        api_version: String,
        kind: String,
        namespace: String,
        masks: Option<BTreeSet<String>>,
    },
    Get {
        api_version: String,
        kind: String,
        namespace: String,
        name: String,
        disable_cache: bool,
        masks: Option<BTreeSet<String>>,
    },
}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        match self.calls.is_empty() {
            true => Err("The probe's settings list no calls: give at least one in `calls`.".into()),
            false => Ok(()),
        }
    }
}

#[no_mangle]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings::<Settings>);
    guest::register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    let request = ValidationRequest::<Settings>::new(payload)?;
    let answers: Vec<Value> = request.settings.calls.into_iter().map(answer).collect();
    reject_request(Some(serde_json::to_string(&answers)?), None, None, None)
}

/// The host's answer to `call`: its JSON as sent, or its error text.
fn answer(call: Call) -> Value {
    let answer: Result<Value, String> = match call {
        // The SDK's list functions decode into a k8s-openapi type, which Cluster API kinds have
        // not: the SDK's request is sent the way its list_resources_by_namespace sends it.
        Call::List {
            api_version,
            kind,
            namespace,
            masks,
        } => {
            let request = ListResourcesByNamespaceRequest {
                api_version,
                kind,
                namespace,
                label_selector: None,
                field_selector: None,
                field_masks: masks,
            };
            serde_json::to_vec(&request)
                .map_err(|e| e.to_string())
                .and_then(|payload| {
                    guest::host_call(
                        "kubewarden",
                        "kubernetes",
                        "list_resources_by_namespace",
                        &payload,
                    )
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
                })
        }
        Call::Get {
            api_version,
            kind,
            namespace,
            name,
            disable_cache,
            masks,
        } => {
            let request = GetResourceRequest {
                api_version,
                kind,
                name,
                namespace: Some(namespace),
                disable_cache,
                field_masks: masks,
            };
            get_resource::<Value>(&request).map_err(|e| e.to_string())
        }
    };
    match answer {
        Ok(answer) => json!({ "answer": answer }),
        Err(error) => json!({ "error": error }),
    }
}
