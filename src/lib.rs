//! capi-template-guard: a Kubewarden policy that refuses to delete Cluster API machine and
//! bootstrap templates while something still needs them, and records the node-reuse and
//! cleaning intent of a Metal3MachineTemplate on every Metal3Machine created from it.
//!
//! This file only wires the waPC entry points and turns an [`admission::Outcome`] into the
//! response the host expects; the logic lives in the modules below.

pub mod admission;
pub mod capi;
pub mod cluster;
pub mod decision;
pub mod message;
pub mod mutation;
pub mod references;
pub mod settings;
#[cfg(test)]
mod testing;

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::{SettingsValidationResponse, Validatable};
use kubewarden_policy_sdk::wapc_guest::{self as guest, CallResult};
use serde_json::Value;

use admission::Outcome;
use cluster::{Cluster, Host};

#[no_mangle]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    respond(payload, &Host)
}

/// Settings are checked here rather than through the SDK helper so that a settings payload that
/// cannot be parsed also gets a readable sentence instead of a waPC error.
fn validate_settings(payload: &[u8]) -> CallResult {
    let response = match settings::parse_and_validate(payload) {
        Ok(_) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(message) => SettingsValidationResponse {
            valid: false,
            message: Some(message),
        },
    };
    Ok(serde_json::to_vec(&response)?)
}

fn response(outcome: Outcome) -> ValidationResponse {
    let (accepted, message, code, mutated_object, warnings) = match outcome {
        Outcome::Accept { warnings } => (true, None, None, None, warnings),
        Outcome::Mutate { object } => (true, None, None, Some(object), vec![]),
        Outcome::Reject { message, code } => (false, Some(message), Some(code), None, vec![]),
    };
    ValidationResponse {
        accepted,
        message,
        code,
        mutated_object,
        audit_annotations: None,
        warnings: (!warnings.is_empty()).then_some(warnings),
    }
}

fn outcome(payload: &[u8], cluster: &dyn Cluster) -> Outcome {
    let request: ValidationRequest<Value> = match serde_json::from_slice(payload) {
        Ok(request) => request,
        Err(e) => {
            return Outcome::Reject {
                message: message::unreadable_request(&e.to_string()),
                code: admission::CODE_BAD_REQUEST,
            }
        }
    };
    let settings = match settings::Settings::try_from(request.settings)
        .and_then(|settings| settings.validate().map(|()| settings))
    {
        Ok(settings) => settings,
        Err(problem) => {
            return Outcome::Reject {
                message: message::invalid_settings(&problem),
                code: admission::CODE_BAD_REQUEST,
            }
        }
    };
    admission::evaluate(&request.request, &settings, cluster)
}

fn respond(payload: &[u8], cluster: &dyn Cluster) -> CallResult {
    Ok(serde_json::to_vec(&response(outcome(payload, cluster)))?)
}

#[cfg(test)]
mod tests;
