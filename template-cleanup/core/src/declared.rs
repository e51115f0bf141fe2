//! What the deploy tools still declare. A template a deploy tool declares is not retired, even
//! if nothing references it yet: it may have been rendered a moment before the MachineDeployment
//! that will point at it (Sylva's garbage collector deleted such a Metal3DataTemplate and hung an
//! upgrade, sylva-core issue 2820). Each reader takes an object as the API server returns it, as
//! JSON; Helm's release storage is read by [`crate::helm`].

use std::collections::BTreeMap;

use serde_json::Value;

use crate::DeclaredObject;

/// Every object some deploy tool declares, with the first source that declares it, and the
/// namespaces where a source could not be read, so that every template there counts as declared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    objects: BTreeMap<DeclaredObject, String>,
    namespaces: BTreeMap<String, String>,
}

impl Declared {
    pub fn insert(&mut self, object: DeclaredObject, source: &str) {
        self.objects
            .entry(object)
            .or_insert_with(|| source.to_string());
    }

    /// Every object in `namespace` counts as declared by `source` (a Helm release that cannot be
    /// read may declare any of them).
    pub fn insert_namespace(&mut self, namespace: &str, source: &str) {
        self.namespaces
            .entry(namespace.to_string())
            .or_insert_with(|| source.to_string());
    }

    /// The source that declares `object` (`Flux Kustomization flux-system/sites`, ...).
    pub fn by(&self, object: &DeclaredObject) -> Option<&str> {
        self.objects
            .get(object)
            .or_else(|| self.namespaces.get(&object.namespace))
            .map(String::as_str)
    }

    /// The objects declared one by one.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.namespaces.is_empty()
    }
}

/// What one deploy tool object declares, and a note on how it was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declaration {
    pub objects: Vec<DeclaredObject>,
    /// Said after the object's name in a template's `kept` line.
    pub note: Option<String>,
}

/// Why a deploy tool's object cannot be read as its tool writes it: what it declares is then
/// unknown. `what` names the object (`Flux Kustomization flux-system/sites`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectError {
    #[error("{what}: {field} is not a list.")]
    NotAList { what: String, field: &'static str },
    #[error("{what}: an inventory entry has no id: {entry}.")]
    NoInventoryId { what: String, entry: Value },
    #[error("{what}: inventory id {id:?} is not <namespace>_<name>_<group>_<Kind>.")]
    InventoryId { what: String, id: String },
    #[error("{what}: a status.resources entry has no kind or name: {entry}.")]
    NoKindOrName { what: String, entry: Value },
    #[error("{what}: {pointer} holds {value}, which is not a string.")]
    NotAString {
        what: String,
        pointer: &'static str,
        value: Value,
    },
    #[error("{what} has no metadata.namespace.")]
    NoNamespace { what: String },
}

/// `namespace/name` of an object, for messages (empty parts when absent).
pub(crate) fn name_of(object: &Value) -> String {
    let ns = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("{ns}/{name}")
}

/// A Flux Kustomization's `status.inventory.entries[].id`: `<namespace>_<name>_<group>_<Kind>`
/// (kustomize-controller `api/v1/inventory_types.go`, `ResourceRef.ID`; the format is
/// fluxcd/cli-utils `pkg/object/objmetadata.go`, `ObjMetadata.String`, where a `:` in a name is
/// written `__`). A Kustomization with no inventory yet declares nothing.
pub fn flux_kustomization(object: &Value) -> Result<Vec<DeclaredObject>, ObjectError> {
    let what = format!("Flux Kustomization {}", name_of(object));
    let Some(entries) = object.pointer("/status/inventory/entries") else {
        return Ok(Vec::new());
    };
    let entries = entries.as_array().ok_or_else(|| ObjectError::NotAList {
        what: what.clone(),
        field: "status.inventory.entries",
    })?;
    entries
        .iter()
        .map(|entry| {
            let id = entry.get("id").and_then(Value::as_str).ok_or_else(|| {
                ObjectError::NoInventoryId {
                    what: what.clone(),
                    entry: entry.clone(),
                }
            })?;
            let bad = || ObjectError::InventoryId {
                what: what.clone(),
                id: id.to_string(),
            };
            let mut back = id.rsplitn(3, '_');
            let (kind, group, rest) = (back.next(), back.next(), back.next());
            let (Some(kind), Some(group), Some(rest)) = (kind, group, rest) else {
                return Err(bad());
            };
            let (namespace, name) = rest.split_once('_').ok_or_else(bad)?;
            if kind.is_empty() || name.is_empty() {
                return Err(bad());
            }
            Ok(DeclaredObject {
                group: group.to_string(),
                kind: kind.to_string(),
                namespace: namespace.to_string(),
                name: name.replace("__", ":"),
            })
        })
        .collect()
}

/// [`flux_kustomization`] as a [`Declaration`], the shape of the sources table's readers.
pub fn flux_kustomization_declaration(object: &Value) -> Result<Declaration, ObjectError> {
    flux_kustomization(object).map(|objects| Declaration {
        objects,
        note: None,
    })
}

/// An Argo CD Application's `status.resources[]`: `group`, `version`, `kind`, `namespace`,
/// `name` (argo-cd v3.5.1 `pkg/apis/application/v1alpha1/types.go`, `ResourceStatus`, whose
/// `RequiresPruning` is at :2249).
///
/// An entry with `requiresPruning: true` is one Argo CD manages but no longer renders, retired,
/// only when the Application's target state loaded. argo-cd v3.5.1 `controller/state.go`,
/// `CompareAppState` (commit 109ca7ca): `RequiresPruning` is `targetObj == nil && liveObj != nil
/// && isSelfReferencedObj` (:950). When the manifests cannot be generated (:695-712), local
/// manifests cannot be read (:715-731), the target state cannot be normalized (:744-750), the
/// live state or a project check fails (:774-843) or the diff fails (:918-924), `targetObjs` is
/// left empty or incomplete and a `ComparisonError` condition is set
/// (`ApplicationConditionComparisonError`, types.go:1904; kept in `status.conditions` by
/// `SetConditions`, :1108). Every live object then reads `requiresPruning`: with such a
/// condition, everything the Application lists counts as declared.
pub fn argo_application(object: &Value) -> Result<Declaration, ObjectError> {
    let what = format!("Argo CD Application {}", name_of(object));
    let Some(resources) = object.pointer("/status/resources") else {
        return Ok(Declaration::default());
    };
    let resources = resources.as_array().ok_or_else(|| ObjectError::NotAList {
        what: what.clone(),
        field: "status.resources",
    })?;
    let unloaded = argo_comparison_error(object, &what)?;
    let objects = resources
        .iter()
        .filter(|r| unloaded.is_some() || r.get("requiresPruning") != Some(&Value::Bool(true)))
        .map(|r| {
            let field = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("").to_string();
            let (kind, name) = (field("kind"), field("name"));
            if kind.is_empty() || name.is_empty() {
                return Err(ObjectError::NoKindOrName {
                    what: what.clone(),
                    entry: r.clone(),
                });
            }
            Ok(DeclaredObject {
                group: field("group"),
                kind,
                namespace: field("namespace"),
                name,
            })
        })
        .collect::<Result<Vec<_>, ObjectError>>()?;
    Ok(Declaration {
        objects,
        note: unloaded.map(|message| {
            format!(
                "(its target state did not load, ComparisonError {message:?}: every resource it lists counts as declared)"
            )
        }),
    })
}

/// The message of the Application's `ComparisonError` condition, if it has one.
fn argo_comparison_error(object: &Value, what: &str) -> Result<Option<String>, ObjectError> {
    let conditions = match object.pointer("/status/conditions") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(ObjectError::NotAList {
                what: what.to_string(),
                field: "status.conditions",
            });
        }
    };
    Ok(conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("ComparisonError"))
        .map(|c| {
            c.get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(200)
                .collect()
        }))
}
