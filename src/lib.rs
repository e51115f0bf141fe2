//! capi-template-guard: a Kubewarden policy that refuses to delete Cluster API templates while
//! something still needs them, and records the node-reuse and cleaning intent of a
//! Metal3MachineTemplate on every Metal3Machine created from it.
//!
//! This file wires the waPC entry points, reads the payload and the settings, and turns an
//! [`admission::Outcome`] into the response the host expects; the decision and the mutation live
//! in the guard crate, the host I/O in the modules below, all private to the crate.
//!
//! lib -> admission (routing) -> the guard crate's decision | mutation -> lookups (its `Lookups`
//! trait answered from the host) -> requests (typed lists and gets, read by list_reader) -> host
//! (the waPC transport). The guard crate holds everything that is not host I/O: object views
//! (capi), kinds (catalogue), what an object names (references), settings, every sentence
//! (message) and the errors.

mod admission;
#[cfg(test)]
mod fuzz;
mod host;
mod list_reader;
mod lookups;
mod requests;
#[cfg(test)]
mod testing;

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use wapc_guest::{self as guest, CallResult};

use admission::Outcome;
use guard::error::Error;
use guard::{capi, message, settings};
use host::{Host, WapcHost};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    answer(payload, &WapcHost)
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
            message: Some(error.to_string()),
        },
    };
    Ok(serde_json::to_vec(&response)?)
}

/// The answer to a validate payload, as the bytes the host expects.
fn answer(payload: &[u8], host: &dyn Host) -> CallResult {
    Ok(serde_json::to_vec(&log_and_respond(evaluate_payload(
        payload, host,
    )))?)
}

/// Reads the payload (request and settings) and evaluates it.
fn evaluate_payload(payload: &[u8], host: &dyn Host) -> Outcome {
    let payload: capi::Payload = match serde_json::from_slice(payload) {
        Ok(request) => request,
        Err(e) => {
            return Outcome::Reject {
                message: message::unreadable_request(&Error::UnreadableRequest(e.to_string())),
                code: admission::CODE_BAD_REQUEST,
            };
        }
    };
    match settings::parse_and_validate(payload.settings) {
        Ok(settings) => admission::evaluate(&payload.request, &settings, host),
        Err(error) => Outcome::Reject {
            message: message::invalid_settings(&error),
            code: admission::CODE_BAD_REQUEST,
        },
    }
}

/// The response for an outcome; an accepted deletion's reason goes to the policy server's log.
fn log_and_respond(outcome: Outcome) -> ValidationResponse {
    let (accepted, message, code, mutated_object, warnings) = match outcome {
        Outcome::Accept { warnings, reason } => {
            if let Some(reason) = reason {
                host::log_info(&reason);
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

#[cfg(test)]
mod tests;
