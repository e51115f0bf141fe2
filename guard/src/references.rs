//! Which templates does an object name, and under which field? The catalogue's field paths are
//! walked over the object's masked JSON, so the paths the host keeps and the paths read here are
//! one list: a field cannot be extracted without being masked, or masked without being read.

use serde_json::Value;
use std::borrow::Cow;

use crate::capi::{Object, ObjectRef};
use crate::catalogue::{CLUSTER, ReferrerKind, split_key};
use crate::metadata::{Metadata, ReadKey};

/// A field of an object that names a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate {
    /// Path of the field, as a user would look it up (`kubectl explain` style), list items named
    /// by their key (`spec.workers.machineDeployments[class=md-0]...`); a fixed field is not
    /// copied for each object.
    pub field: Cow<'static, str>,
    pub reference: ObjectRef,
}

/// A listed object that may keep a template: what the decision needs of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Candidate {
    pub name: String,
    pub deleting: bool,
    /// The Cluster it belongs to: `spec.clusterName`, else the cluster-name label; a Cluster
    /// belongs to itself.
    pub cluster: Option<String>,
    /// `spec.replicas` and `status.replicas` (the machines it has), MachineSets only.
    pub replicas: Option<i64>,
    pub machines: Option<i64>,
    /// Its [`ReadKey::DeploymentName`] label, MachineSets only: the MachineDeployment it belongs
    /// to (an empty one names none, which its controller reads as an owner that is gone).
    pub deployment: Option<String>,
    /// Its [`ReadKey::Revision`] annotation, MachineDeployments and MachineSets only.
    pub revision: Option<String>,
    /// Read at a version whose controller reads its MachineDeployment before any template
    /// ([`crate::catalogue::ReferrerKind::owner_read_first`]); set by the lookup that lists it.
    pub owner_read_first: bool,
    /// Listed across namespaces (its kind follows the namespaces its references give): the
    /// namespace it is in. `None`: listed in the template's namespace, whose references name
    /// templates there.
    pub namespace: Option<String>,
    pub named: Vec<NamedTemplate>,
}

impl Candidate {
    /// A MachineSet scaled to zero with no machines left.
    pub fn scaled_down(&self) -> bool {
        self.replicas == Some(0) && self.machines == Some(0)
    }

    /// Whether it may still have machines. A MachineSet whose controller has not written
    /// `status.replicas` yet (v1beta2 omits it until then) is taken to have some: its machines
    /// could need their node-reuse template, and the controller writes the count on its next
    /// reconcile, deletion included, so the wait is short.
    pub fn has_machines(&self) -> bool {
        self.machines.is_none_or(|n| n > 0)
    }
}

/// Whether `reference`, read from a referrer listed in `across` (its namespace when it was listed
/// across namespaces, else `None`), names a template in `namespace`. A referrer listed in the
/// template's namespace names templates there, whatever its reference says. One listed across
/// namespaces names a template in its own namespace, and in the namespace its reference gives:
/// Cluster API 1.9 and 1.10 (and Talos 0.5.8 and newer, built on them) read the reference's
/// namespace (`external.Get` of `ref.Namespace`, controllers/external/util.go@v1.9.0), 1.8 and
/// older the Cluster's (`external.Get(ctx, c, ref, cluster.Namespace)`, util.go@v1.8.0), and both
/// serve the same v1beta1: which one runs cannot be read from the CRDs, so both count.
///
/// A kind whose controller reads only the namespace the reference resolves to
/// ([`ReferrerKind::reference_namespace_only`], Kairos) names a template there alone: the
/// reference's namespace, or its own when the reference gives none.
pub fn resolves_to(
    kind: &ReferrerKind,
    reference: &ObjectRef,
    across: Option<&str>,
    namespace: &str,
) -> bool {
    let given = reference.namespace.as_deref().filter(|n| !n.is_empty());
    across.is_none_or(|own| match kind.reference_namespace_only {
        true => given.unwrap_or(own) == namespace,
        false => own == namespace || given == Some(namespace),
    })
}

/// A field of a listed object that does not have the shape its path promises: the policy cannot
/// tell what the object names, so the lookup fails (closed) rather than guess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadField {
    pub field: String,
    pub expected: &'static str,
}

fn bad(field: &str, expected: &'static str) -> BadField {
    BadField {
        field: field.to_string(),
        expected,
    }
}

fn string_at(value: &Value, key: &str, field: &str) -> Result<Option<String>, BadField> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(bad(field, "an object reference")),
    }
}

/// A template reference in any of the shapes CAPI uses (see [`ObjectRef`]).
fn reference_at(value: &Value, field: &str) -> Result<ObjectRef, BadField> {
    if !value.is_object() {
        return Err(bad(field, "an object reference"));
    }
    Ok(ObjectRef {
        api_version: string_at(value, "apiVersion", field)?,
        api_group: string_at(value, "apiGroup", field)?,
        kind: string_at(value, "kind", field)?.unwrap_or_default(),
        name: string_at(value, "name", field)?.unwrap_or_default(),
        namespace: string_at(value, "namespace", field)?,
    })
}

/// Walks `path` (dotted segments, `name[key]` for a list) from `value`, at `shown`, which it
/// leaves as it found it; an absent or null step names nothing.
fn walk(
    value: &Value,
    path: &str,
    shown: &mut String,
    out: &mut Vec<NamedTemplate>,
) -> Result<(), BadField> {
    if path.is_empty() {
        let reference = reference_at(value, shown)?;
        out.push(NamedTemplate {
            field: Cow::Owned(shown.clone()),
            reference,
        });
        return Ok(());
    }
    let Value::Object(fields) = value else {
        return Err(bad(shown, "an object"));
    };
    let (segment, rest) = path.split_once('.').unwrap_or((path, ""));
    let (name, key) = split_key(segment);
    let child = match fields.get(name) {
        None | Some(Value::Null) => return Ok(()),
        Some(child) => child,
    };
    let at = shown.len();
    shown.extend([".", name]);
    let walked = match (key, child) {
        (None, _) => walk(child, rest, shown, out),
        (Some(key), Value::Array(items)) => items.iter().try_for_each(|item| {
            let label = item.get(key).and_then(Value::as_str).unwrap_or_default();
            let here = shown.len();
            shown.extend(["[", key, "=", label, "]"]);
            let walked = walk(item, rest, shown, out);
            shown.truncate(here);
            walked
        }),
        (Some(_), _) => Err(bad(shown, "a list")),
    };
    shown.truncate(at);
    walked
}

/// Every template `object` names through `path` (a catalogue field). Most objects lack most
/// fields: nothing is allocated for one whose first step is absent.
fn named_at(object: &Object, path: &str) -> Result<Vec<NamedTemplate>, BadField> {
    let (root, rest) = path.split_once('.').unwrap_or((path, ""));
    let value = match root {
        "spec" => &object.spec,
        "status" => &object.status,
        _ => return Ok(vec![]),
    };
    let first = split_key(rest.split('.').next().unwrap_or_default()).0;
    let absent = match value {
        Value::Null => true,
        Value::Object(fields) if !rest.is_empty() => fields.get(first).is_none_or(Value::is_null),
        _ => false,
    };
    let mut out = Vec::new();
    if !absent {
        walk(value, rest, &mut root.to_string(), &mut out)?;
    }
    Ok(out)
}

/// The fields besides references are read only where the kind masks them: a field read but not
/// masked would be stripped by the host and silently read as absent.
fn integer_at(kind: &ReferrerKind, object: &Object, path: &str) -> Result<Option<i64>, BadField> {
    if !kind.resource.reads.contains(&path) {
        return Ok(None);
    }
    match object.at(path) {
        None => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| bad(path, "an integer")),
    }
}

fn text_at(kind: &ReferrerKind, object: &Object, path: &str) -> Result<Option<String>, BadField> {
    if !kind.resource.reads.contains(&path) {
        return Ok(None);
    }
    match object.at(path) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(bad(path, "a string")),
    }
}

/// Gives the references found at `field` that name no kind the kind `field` implies, if any.
fn imply(kind: &ReferrerKind, field: &str, found: &mut [NamedTemplate]) {
    if let Some(implied) = kind.implied.iter().find(|i| i.field == field) {
        for reference in found.iter_mut().map(|n| &mut n.reference) {
            if reference.kind.is_empty() {
                reference.kind = implied.kind.to_string();
                if reference.group().is_none() {
                    reference.api_group = Some(implied.group.to_string());
                }
            }
        }
    }
}

/// What a listed object of `kind` names, and what the decision needs to know of it.
pub fn candidate_of(kind: &ReferrerKind, object: &Object) -> Result<Candidate, BadField> {
    take_candidate(kind, &mut object.clone())
}

/// [`candidate_of`], taking the object's strings instead of copying them, as a list's objects
/// are read once: on an error (a field of another shape) the object is left whole.
pub fn take_candidate(kind: &ReferrerKind, object: &mut Object) -> Result<Candidate, BadField> {
    let mut named = Vec::new();
    for field in kind.fields {
        let mut found = named_at(object, field)?;
        imply(kind, field, &mut found);
        named.extend(found);
    }
    let facts = facts(kind, object)?;
    let meta = &mut object.metadata;
    if kind.cloned_from {
        named.extend(take_cloned(meta));
    }
    Ok(candidate_from(kind, facts, meta, named))
}

/// The candidate of an object whose [`facts`] were read: its name and cluster-name label are
/// taken out of `meta`.
fn candidate_from(
    kind: &ReferrerKind,
    (cluster, replicas, machines): Facts,
    meta: &mut Metadata,
    named: Vec<NamedTemplate>,
) -> Candidate {
    let cluster = match kind.resource == CLUSTER {
        true => Some(meta.name.clone()),
        false => cluster.or_else(|| meta.labels.remove(ReadKey::ClusterName)),
    };
    let (deployment, revision) = match kind.reads_revision() {
        true => (
            meta.labels.remove(ReadKey::DeploymentName),
            meta.annotations.remove(ReadKey::Revision),
        ),
        false => (None, None),
    };
    Candidate {
        name: std::mem::take(&mut meta.name),
        deleting: meta.is_deleting(),
        cluster,
        replicas,
        machines,
        deployment,
        revision,
        owner_read_first: false,
        namespace: None,
        named,
    }
}

/// `spec.clusterName` (when not empty), `spec.replicas` and `status.replicas`, where the kind
/// reads them.
type Facts = (Option<String>, Option<i64>, Option<i64>);

fn facts(kind: &ReferrerKind, object: &Object) -> Result<Facts, BadField> {
    Ok((
        text_at(kind, object, "spec.clusterName")?.filter(|name| !name.is_empty()),
        integer_at(kind, object, "spec.replicas")?,
        integer_at(kind, object, "status.replicas")?,
    ))
}

/// What a scanned object of a catalogue kind served at a version the policy does not know names:
/// every reference the scan finds, and the name-only references at the kind's implied fields
/// (Kairos' `kairosConfigTemplate: {name}`) where that field still reads as a reference.
pub fn scan_known(kind: &ReferrerKind, object: &Object) -> Vec<NamedTemplate> {
    let mut named = scan(object);
    for implied in kind.implied {
        // A field of another shape at this version implies nothing: the scan has read it.
        let Ok(mut found) = named_at(object, implied.field) else {
            continue;
        };
        found.retain(|n| n.reference.kind.is_empty() && !n.reference.name.is_empty());
        imply(kind, implied.field, &mut found);
        named.extend(found);
    }
    named
}

/// The candidate of an object of `kind` that names `named`, its other fields read where the
/// catalogue says; a field of another shape is a [`BadField`].
pub fn candidate_naming(
    kind: &ReferrerKind,
    object: &Object,
    named: Vec<NamedTemplate>,
) -> Result<Candidate, BadField> {
    let facts = facts(kind, object)?;
    Ok(candidate_from(
        kind,
        facts,
        &mut object.metadata.clone(),
        named,
    ))
}

/// Every reference anywhere in a scanned object's spec, for a kind the catalogue does not know: a
/// map that names a kind and a name (strings), with its group where it gives one, at the path
/// where it sits (list items by index). Maps that are not references are walked into; values of
/// other shapes are skipped, since nothing says what they should be.
pub fn scan(object: &Object) -> Vec<NamedTemplate> {
    fn walk(value: &Value, here: &str, out: &mut Vec<NamedTemplate>) {
        match value {
            Value::Object(fields) => {
                let text = |key: &str| fields.get(key).and_then(Value::as_str);
                if let (Some(kind), Some(name)) = (text("kind"), text("name")) {
                    out.push(NamedTemplate {
                        field: Cow::Owned(here.to_string()),
                        reference: ObjectRef {
                            api_version: text("apiVersion").map(str::to_string),
                            api_group: text("apiGroup").map(str::to_string),
                            kind: kind.to_string(),
                            name: name.to_string(),
                            namespace: None,
                        },
                    });
                }
                for (key, child) in fields {
                    walk(child, &format!("{here}.{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{here}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&object.spec, "spec", &mut out);
    out
}

/// The Cluster a scanned object belongs to: its cluster-name label.
pub fn cluster_label(meta: &Metadata) -> Option<String> {
    meta.label(ReadKey::ClusterName).map(str::to_string)
}

/// The template an object was cloned from, as its cloned-from annotations name it: the name and
/// `Kind.group` (split at the first dot, as kinds have none).
pub fn cloned_from(meta: &Metadata) -> Option<ObjectRef> {
    take_cloned(&mut meta.clone()).map(|named| named.reference)
}

/// Where a Metal3Machine names its template: [`ReadKey::ClonedFromName`].
const CLONED_FIELD: &str = "metadata.annotations[cluster.x-k8s.io/cloned-from-name]";

/// Metal3Machine: the template named by its cloned-from annotations ([`cloned_from`]), taken out
/// of them.
fn take_cloned(meta: &mut Metadata) -> Option<NamedTemplate> {
    let mut kind = meta.annotations.remove(ReadKey::ClonedFromGroupKind)?;
    let dot = kind.find('.')?;
    let group = kind[dot + 1..].to_string();
    kind.truncate(dot);
    Some(NamedTemplate {
        field: Cow::Borrowed(CLONED_FIELD),
        reference: ObjectRef {
            api_version: None,
            api_group: Some(group),
            kind,
            name: meta.annotations.remove(ReadKey::ClonedFromName)?,
            namespace: None,
        },
    })
}

#[cfg(test)]
mod tests;
