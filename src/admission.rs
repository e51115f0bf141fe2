//! Routes an admission request to the deletion guard or the Metal3Machine mutation, and turns
//! their results into an [`Outcome`].

use serde_json::Value;

use crate::capi::{view_of, AdmissionRequest, MetadataOnly, Template};
use crate::catalogue::{self, INFRASTRUCTURE_GROUP};
use crate::cluster::Cluster;
use crate::decision::{self, Decision};
use crate::error::{Error, LookupError};
use crate::lookups::HostLookups;
use crate::message;
use crate::mutation::{self, Intent, TemplateSource};
use crate::settings::Settings;

/// Status code of a rejection because the template is still in use.
pub const CODE_IN_USE: u16 = 409;
/// Status code of a rejection because a lookup failed (fail closed).
pub const CODE_LOOKUP_FAILED: u16 = 500;
/// Status code of a rejection because the request cannot be read.
pub const CODE_BAD_REQUEST: u16 = 400;

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

pub fn evaluate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Outcome {
    let (group, kind) = (request.kind.group.as_str(), request.kind.kind.as_str());
    match request.operation.as_str() {
        "DELETE" => match catalogue::template_class(group, kind) {
            Some(class) => guard_deletion(request, class, settings, cluster),
            None => Outcome::accept(),
        },
        "CREATE"
            if group == INFRASTRUCTURE_GROUP
                && kind == catalogue::METAL3_MACHINE.kind
                && settings.mutate_metal3_machines =>
        {
            record_intent(request, settings, cluster)
        }
        _ => Outcome::accept(),
    }
}

fn lookup_failed(template: &Template, error: &LookupError, settings: &Settings) -> Outcome {
    if settings.fail_open_on_lookup_error {
        Outcome::warn(message::lookup_failed_accepted(template, error))
    } else {
        Outcome::Reject {
            message: message::lookup_failed(template, error),
            code: CODE_LOOKUP_FAILED,
        }
    }
}

fn guard_deletion(
    request: &AdmissionRequest,
    class: catalogue::TemplateClass,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Outcome {
    let kind = &request.kind;
    let template = match Template::from_old_object(
        &kind.group,
        &kind.kind,
        class,
        &request.name,
        &request.namespace,
        &request.old_object,
    ) {
        Ok(template) => template,
        Err(error) => {
            return Outcome::Reject {
                message: message::malformed_delete(
                    &kind.kind,
                    &request.namespace,
                    &request.name,
                    &error,
                ),
                code: CODE_BAD_REQUEST,
            }
        }
    };
    let mut lookups = HostLookups::new(cluster, settings, &template.namespace);
    match decision::decide(&template, settings, &mut lookups) {
        Ok(Decision::Release(release)) => Outcome::Accept {
            warnings: vec![],
            reason: Some(message::released(&template, release)),
        },
        Ok(Decision::Keep(referrers)) => Outcome::Reject {
            message: message::in_use(&template, &referrers),
            code: CODE_IN_USE,
        },
        Err(error) => lookup_failed(&template, &error, settings),
    }
}

/// Finds the name of the Metal3MachineTemplate a new machine comes from.
fn source_template(source: TemplateSource, lookups: &mut HostLookups<'_>) -> Result<String, Error> {
    let owner = match source {
        TemplateSource::Annotation(name) => return Ok(name),
        TemplateSource::None => return Err(Error::NoTemplateSource),
        TemplateSource::Owner(owner) => owner,
    };
    lookups
        .referrer(owner.kind, &owner.name)?
        .and_then(|candidate| mutation::metal3_template_named_by(&candidate))
        .ok_or(Error::OwnerNamesNoTemplate {
            kind: owner.kind.kind(),
            name: owner.name,
        })
}

fn intent_for(
    machine: &Value,
    meta: &crate::capi::Metadata,
    namespace: &str,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<Option<Value>, Error> {
    let mut lookups = HostLookups::new(cluster, settings, namespace);
    let name = source_template(mutation::template_source(meta), &mut lookups)?;
    let template = lookups
        .metal3_machine_template(&name)?
        .ok_or_else(|| Error::TemplateMissing(format!("{namespace}/{name}")))?;
    mutation::apply(machine, &Intent::of(&name, &template), settings)
}

/// Never blocks machine creation: every problem accepts without a patch and says why.
fn record_intent(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Outcome {
    let machine = &request.object;
    let meta = match view_of::<MetadataOnly>(machine) {
        Ok(object) => object.metadata,
        Err(e) => {
            return Outcome::warn(message::machine_not_mutated(
                &request.namespace,
                &request.name,
                &Error::UnreadableMachine(e.to_string()),
            ))
        }
    };
    let namespace = if request.namespace.is_empty() {
        &meta.namespace
    } else {
        &request.namespace
    };
    let name = if meta.name.is_empty() {
        &request.name
    } else {
        &meta.name
    };
    match intent_for(machine, &meta, namespace, settings, cluster) {
        Ok(Some(object)) => Outcome::Mutate { object },
        Ok(None) => Outcome::accept(),
        Err(error) => Outcome::warn(message::machine_not_mutated(namespace, name, &error)),
    }
}
