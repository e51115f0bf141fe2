//! Routes an admission request to the deletion guard or the Metal3Machine mutation and makes the
//! lookups each needs, through a [`Cluster`].

use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde_json::Value;

use crate::capi::{
    MetadataOnly, Metal3MachineTemplate, INFRASTRUCTURE_GROUP, METAL3_MACHINE,
    METAL3_MACHINE_TEMPLATE,
};
use crate::cluster::{self, Cluster, Failure, Listed, LookupError};
use crate::decision::{self, ClusterState, Decision, Inventory, ReferrerKind, Template};
use crate::message;
use crate::mutation::{self, Intent, TemplateSource};
use crate::references;
use crate::settings::Settings;

/// Status code of a rejection because the template is still in use.
pub const CODE_IN_USE: u16 = 409;
/// Status code of a rejection because a lookup failed (fail closed).
pub const CODE_LOOKUP_FAILED: u16 = 500;
/// Status code of a rejection because the request cannot be read.
pub const CODE_BAD_REQUEST: u16 = 400;

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Accept { warnings: Vec<String> },
    Reject { message: String, code: u16 },
    Mutate { object: Value },
}

impl Outcome {
    fn accept() -> Outcome {
        Outcome::Accept { warnings: vec![] }
    }

    fn warn(warning: String) -> Outcome {
        Outcome::Accept {
            warnings: vec![warning],
        }
    }
}

pub fn evaluate(
    request: &KubernetesAdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Outcome {
    let (group, kind) = (request.kind.group.as_str(), request.kind.kind.as_str());
    match request.operation.as_str() {
        "DELETE" if decision::is_protected(group, kind) => {
            guard_deletion(request, settings, cluster)
        }
        "CREATE"
            if group == INFRASTRUCTURE_GROUP
                && kind == METAL3_MACHINE
                && settings.mutate_metal3_machines =>
        {
            record_intent(request, settings, cluster)
        }
        _ => Outcome::accept(),
    }
}

// Field masks: the host keeps metadata plus these paths, nothing else.
const MACHINE_SET_FIELDS: [&str; 4] = [
    "spec.replicas",
    "spec.template.spec.bootstrap.configRef",
    "spec.template.spec.infrastructureRef",
    "status.replicas",
];
const MACHINE_DEPLOYMENT_FIELDS: [&str; 2] = [
    "spec.template.spec.bootstrap.configRef",
    "spec.template.spec.infrastructureRef",
];
const KUBEADM_CONTROL_PLANE_FIELDS: [&str; 2] = [
    "spec.machineTemplate.infrastructureRef",
    "spec.machineTemplate.spec.infrastructureRef",
];
const RKE2_CONTROL_PLANE_FIELDS: [&str; 3] = [
    "spec.infrastructureRef",
    "spec.machineTemplate.infrastructureRef",
    "spec.machineTemplate.spec.infrastructureRef",
];
const CLUSTER_CLASS_FIELDS: [&str; 2] = ["spec.controlPlane.machineInfrastructure", "spec.workers"];
/// Only metadata (annotations) matters; the mask names a path no Metal3Machine has, so the host
/// drops the whole spec and status.
const METADATA_ONLY_FIELDS: [&str; 1] = ["metadata.name"];
const METAL3_TEMPLATE_FIELDS: [&str; 2] =
    ["spec.nodeReuse", "spec.template.spec.automatedCleaningMode"];

fn api_version(group: &str, version: impl std::fmt::Display) -> String {
    format!("{group}/{version}")
}

/// Lists one referrer kind. An optional control-plane provider that is not installed counts as
/// none; a CAPI or Metal3 kind that is not served means the API version setting is wrong.
fn list_kind<T: serde::de::DeserializeOwned>(
    cluster: &dyn Cluster,
    kind: ReferrerKind,
    api_version: &str,
    namespace: &str,
    fields: &[&str],
) -> Result<Vec<T>, LookupError> {
    match cluster::list(cluster, api_version, kind.as_str(), namespace, fields)? {
        Listed::Items(items) => Ok(items),
        Listed::NotServed if kind.is_optional() => Ok(vec![]),
        Listed::NotServed => Err(LookupError::of_list(
            api_version,
            kind.as_str(),
            namespace,
            Failure::NotServed,
            "the API server does not serve this kind at this version".to_string(),
        )),
    }
}

fn read_inventory(
    template: &Template,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<Inventory, LookupError> {
    use crate::capi::{CAPI_GROUP, CONTROL_PLANE_GROUP};
    let capi = api_version(CAPI_GROUP, settings.capi_api_version);
    let control_plane = api_version(CONTROL_PLANE_GROUP, settings.control_plane_api_version);
    let metal3 = api_version(INFRASTRUCTURE_GROUP, settings.metal3_api_version);
    let ns = template.namespace.as_str();
    let mut inventory = Inventory::default();
    for kind in decision::referrer_kinds(template) {
        match kind {
            ReferrerKind::MachineDeployment => {
                inventory.machine_deployments =
                    list_kind(cluster, kind, &capi, ns, &MACHINE_DEPLOYMENT_FIELDS)?
            }
            ReferrerKind::MachineSet => {
                inventory.machine_sets = list_kind(cluster, kind, &capi, ns, &MACHINE_SET_FIELDS)?
            }
            ReferrerKind::KubeadmControlPlane => {
                inventory.kubeadm_control_planes = list_kind(
                    cluster,
                    kind,
                    &control_plane,
                    ns,
                    &KUBEADM_CONTROL_PLANE_FIELDS,
                )?
            }
            ReferrerKind::RKE2ControlPlane => {
                inventory.rke2_control_planes = list_kind(
                    cluster,
                    kind,
                    &control_plane,
                    ns,
                    &RKE2_CONTROL_PLANE_FIELDS,
                )?
            }
            ReferrerKind::ClusterClass => {
                inventory.cluster_classes =
                    list_kind(cluster, kind, &capi, ns, &CLUSTER_CLASS_FIELDS)?
            }
            ReferrerKind::Metal3Machine => {
                inventory.metal3_machines =
                    list_kind(cluster, kind, &metal3, ns, &METADATA_ONLY_FIELDS)?
            }
        }
    }
    Ok(inventory)
}

/// Row 6 input. The cached read is enough: a Cluster deleted a moment ago only delays the
/// garbage collector, which retries denied deletions.
fn cluster_states(
    template: &Template,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<Vec<ClusterState>, LookupError> {
    let capi = api_version(crate::capi::CAPI_GROUP, settings.capi_api_version);
    template
        .cluster_owners
        .iter()
        .map(|name| {
            let found: Option<MetadataOnly> = cluster::get(
                cluster,
                &capi,
                "Cluster",
                &template.namespace,
                name,
                false,
                &METADATA_ONLY_FIELDS,
            )?;
            Ok(match found {
                None => ClusterState::Gone,
                Some(c) if c.metadata.is_deleting() => ClusterState::Deleting,
                Some(_) => ClusterState::Live,
            })
        })
        .collect()
}

fn decided(template: &Template, decision: Decision) -> Outcome {
    match decision {
        Decision::Release(_) => Outcome::accept(),
        Decision::Keep(referrers) => Outcome::Reject {
            message: message::in_use(template, &referrers),
            code: CODE_IN_USE,
        },
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
    request: &KubernetesAdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Outcome {
    let kind = &request.kind;
    let template = match Template::from_old_object(
        &kind.group,
        &kind.kind,
        &request.name,
        &request.namespace,
        &request.old_object,
    ) {
        Ok(template) => template,
        Err(problem) => {
            return Outcome::Reject {
                message: message::malformed_delete(
                    &kind.kind,
                    &request.namespace,
                    &request.name,
                    &problem,
                ),
                code: CODE_BAD_REQUEST,
            }
        }
    };
    if let Some(decision) = decision::before_lookups(&template) {
        return decided(&template, decision);
    }
    let inventory = match read_inventory(&template, settings, cluster) {
        Ok(inventory) => inventory,
        Err(error) => return lookup_failed(&template, &error, settings),
    };
    let referrers = decision::find_referrers(&template, &inventory, settings);
    if let Some(decision) = decision::after_referrers(&template, &referrers) {
        return decided(&template, decision);
    }
    match cluster_states(&template, settings, cluster) {
        Ok(states) => decided(&template, decision::after_clusters(referrers, &states)),
        Err(error) => lookup_failed(&template, &error, settings),
    }
}

/// Reads a machine's owner and returns the Metal3MachineTemplate it names, if it exists and names one.
fn template_named_by_owner<T: serde::de::DeserializeOwned>(
    cluster: &dyn Cluster,
    api_version: &str,
    owner: &crate::capi::OwnerReference,
    namespace: &str,
    fields: &[&str],
    named: fn(&T) -> Vec<references::NamedTemplate<'_>>,
) -> Result<Option<String>, LookupError> {
    let found: Option<T> = cluster::get(
        cluster,
        api_version,
        &owner.kind,
        namespace,
        &owner.name,
        false,
        fields,
    )?;
    Ok(found.and_then(|object| mutation::metal3_template_named_by(&named(&object))))
}

/// Finds the name of the Metal3MachineTemplate a new machine comes from.
fn source_template(
    source: TemplateSource,
    namespace: &str,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<String, String> {
    let owner = match source {
        TemplateSource::Annotation(name) => return Ok(name),
        TemplateSource::None => {
            return Err(format!(
                "it has no {} annotation naming a Metal3MachineTemplate and no MachineSet or control-plane owner to find its template",
                crate::capi::CLONED_FROM_NAME
            ))
        }
        TemplateSource::Owner(owner) => owner,
    };
    let named = if owner.kind == "MachineSet" {
        let version = api_version(crate::capi::CAPI_GROUP, settings.capi_api_version);
        template_named_by_owner(
            cluster,
            &version,
            &owner,
            namespace,
            &["spec.template.spec.infrastructureRef"],
            references::of_machine_set,
        )
    } else {
        let version = api_version(
            crate::capi::CONTROL_PLANE_GROUP,
            settings.control_plane_api_version,
        );
        template_named_by_owner(
            cluster,
            &version,
            &owner,
            namespace,
            &RKE2_CONTROL_PLANE_FIELDS,
            references::of_control_plane,
        )
    };
    match named {
        Ok(Some(name)) => Ok(name),
        Ok(None) => Err(format!(
            "its owner {} {} does not exist or names no Metal3MachineTemplate",
            owner.kind, owner.name
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// Never blocks machine creation: every problem accepts without a patch and says why.
fn record_intent(
    request: &KubernetesAdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Outcome {
    let machine = &request.object;
    let meta = match serde_json::from_value::<MetadataOnly>(machine.clone()) {
        Ok(object) => object.metadata,
        Err(e) => {
            return Outcome::warn(message::machine_not_mutated(
                &request.namespace,
                &request.name,
                &format!("the object cannot be read ({e})"),
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
    let not_mutated =
        |reason: &str| Outcome::warn(message::machine_not_mutated(namespace, name, reason));

    let template_name = match source_template(
        mutation::template_source(&meta),
        namespace,
        settings,
        cluster,
    ) {
        Ok(template) => template,
        Err(reason) => return not_mutated(&reason),
    };
    // A direct read: the template may have been created a moment ago, after the cache's last
    // refresh.
    let version = api_version(INFRASTRUCTURE_GROUP, settings.metal3_api_version);
    let template = match cluster::get::<Metal3MachineTemplate>(
        cluster,
        &version,
        METAL3_MACHINE_TEMPLATE,
        namespace,
        &template_name,
        true,
        &METAL3_TEMPLATE_FIELDS,
    ) {
        Ok(Some(template)) => template,
        Ok(None) => {
            return not_mutated(&format!(
                "its template Metal3MachineTemplate {namespace}/{template_name} does not exist"
            ))
        }
        Err(error) => return not_mutated(&error.to_string()),
    };
    match mutation::apply(machine, &Intent::of(&template_name, &template), settings) {
        Ok(Some(object)) => Outcome::Mutate { object },
        Ok(None) => Outcome::accept(),
        Err(problem) => not_mutated(&problem),
    }
}
