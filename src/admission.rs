//! Routing: a request in, one call to the deletion decision or the mutation, an [`Outcome`] out.

use serde_json::Value;

use crate::host::Host;
use crate::lookups::HostLookups;
use guard::capi::{AdmissionRequest, Object, Template, view_of};
use guard::catalogue::{self, INFRASTRUCTURE_GROUP};
use guard::decision::{self, Decision};
use guard::message;
use guard::metadata::namespace_of;
use guard::mutation;
use guard::settings::Settings;

/// Status code of a rejection because the template is still in use.
pub const CODE_IN_USE: u16 = 409;
/// Status code of a rejection because a lookup failed (fail closed).
pub const CODE_LOOKUP_FAILED: u16 = 500;
/// Status code of a rejection because the request cannot be read.
pub const CODE_BAD_REQUEST: u16 = 400;

/// What the policy answers a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Accept {
        warnings: Vec<String>,
        /// Why, for the policy server's log.
        reason: Option<String>,
    },
    Reject {
        message: String,
        code: u16,
    },
    Mutate {
        object: Value,
    },
}

impl Outcome {
    fn accept() -> Outcome {
        Outcome::Accept {
            warnings: vec![],
            reason: None,
        }
    }

    fn warn(warning: String) -> Outcome {
        Outcome::Accept {
            warnings: vec![warning],
            reason: None,
        }
    }
}

pub fn evaluate(request: &AdmissionRequest, settings: &Settings, host: &dyn Host) -> Outcome {
    let (group, kind) = (request.kind.group.as_str(), request.kind.kind.as_str());
    match request.operation.as_str() {
        "DELETE" => match catalogue::template_class(group, kind) {
            Some(class) => guard_deletion(request, class, settings, host),
            None => Outcome::accept(),
        },
        "CREATE"
            if group == INFRASTRUCTURE_GROUP
                && kind == catalogue::METAL3_MACHINE.kind
                && settings.mutate_metal3_machines =>
        {
            mutate_machine(request, settings, host)
        }
        _ => Outcome::accept(),
    }
}

/// A failed lookup refuses the deletion (fail closed), or accepts it with a warning when
/// `failOpenOnLookupError` is set.
fn guard_deletion(
    request: &AdmissionRequest,
    class: catalogue::TemplateClass,
    settings: &Settings,
    host: &dyn Host,
) -> Outcome {
    let template = match Template::from_request(request, class) {
        Ok(template) => template,
        Err(error) => {
            return Outcome::Reject {
                message: message::malformed_delete(
                    &request.kind.kind,
                    &request.namespace,
                    &request.name,
                    &error,
                ),
                code: CODE_BAD_REQUEST,
            };
        }
    };
    let mut lookups = HostLookups::new(host, settings, &template.namespace);
    match decision::decide(&template, settings, &mut lookups) {
        Ok(Decision::Release(release)) => Outcome::Accept {
            warnings: vec![],
            reason: Some(message::released(&template, release)),
        },
        Ok(Decision::Keep(referrers)) => Outcome::Reject {
            message: message::in_use(&template, &referrers),
            code: CODE_IN_USE,
        },
        Err(error) if settings.fail_open_on_lookup_error => {
            Outcome::warn(message::lookup_failed_accepted(&template, &error))
        }
        Err(error) => Outcome::Reject {
            message: message::lookup_failed(&template, &error),
            code: CODE_LOOKUP_FAILED,
        },
    }
}

/// Never blocks machine creation: every problem accepts without a patch and says why.
fn mutate_machine(request: &AdmissionRequest, settings: &Settings, host: &dyn Host) -> Outcome {
    let machine = &request.object;
    // The view checks the metadata's namespace is a string; it is read only where the view reads.
    let view = view_of::<Object>(machine).ok();
    let namespace = match (request.namespace.as_str(), &view) {
        ("", Some(_)) => namespace_of(machine),
        _ => request.namespace.clone(),
    };
    let meta = view.map(|o| o.metadata).unwrap_or_default();
    let name = if meta.name.is_empty() {
        &request.name
    } else {
        &meta.name
    };
    let mut lookups =
        HostLookups::new(host, settings, &namespace).for_machine_at(&request.kind.version);
    match mutation::record_intent(machine, &namespace, settings, &mut lookups) {
        Ok(Some(object)) => Outcome::Mutate { object },
        Ok(None) => Outcome::accept(),
        Err(error) => Outcome::warn(message::machine_not_mutated(&namespace, name, &error)),
    }
}
