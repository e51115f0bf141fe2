//! capi-template-guard: a Kubewarden policy that refuses to delete Cluster API templates while
//! something still needs them, and records the node-reuse and cleaning intent of a
//! Metal3MachineTemplate on every Metal3Machine created from it.
//!
//! This file only wires the waPC entry points and turns an [`admission::Outcome`] into the
//! response the host expects; the logic lives in the modules below, all private to the crate.

mod admission;
mod capi;
mod catalogue;
mod cluster;
mod decision;
mod error;
#[cfg(test)]
mod fuzz;
mod lookups;
mod message;
mod mutation;
mod references;
mod settings;
#[cfg(test)]
mod testing;

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use kubewarden_policy_sdk::wapc_guest::{self as guest, CallResult};

use admission::Outcome;
use cluster::{Cluster, Host};
use error::Error;

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
    let response = match settings::parse_payload(payload) {
        Ok(_) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(error) => SettingsValidationResponse {
            valid: false,
            message: Some(message::describe(&error)),
        },
    };
    Ok(serde_json::to_vec(&response)?)
}

fn response(outcome: Outcome) -> ValidationResponse {
    let (accepted, message, code, mutated_object, warnings) = match outcome {
        Outcome::Accept { warnings, reason } => {
            if let Some(reason) = reason {
                // The policy server's log says why a deletion went through.
                cluster::log_info(&reason);
            }
            (true, None, None, None, warnings)
        }
        Outcome::Mutate { object } => (true, None, None, Some(object), vec![]),
        Outcome::Reject { message, code } => (
            false,
            Some(message::bounded(message, message::MAX_MESSAGE)),
            Some(code),
            None,
            vec![],
        ),
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
    let payload: capi::Payload = match serde_json::from_slice(payload) {
        Ok(request) => request,
        Err(e) => {
            return Outcome::Reject {
                message: message::unreadable_request(&Error::UnreadableRequest(e.to_string())),
                code: admission::CODE_BAD_REQUEST,
            }
        }
    };
    match settings::parse_and_validate(payload.settings) {
        Ok(settings) => admission::evaluate(&payload.request, &settings, cluster),
        Err(error) => Outcome::Reject {
            message: message::invalid_settings(&error),
            code: admission::CODE_BAD_REQUEST,
        },
    }
}

fn respond(payload: &[u8], cluster: &dyn Cluster) -> CallResult {
    Ok(serde_json::to_vec(&response(outcome(payload, cluster)))?)
}

#[cfg(test)]
mod tests;
