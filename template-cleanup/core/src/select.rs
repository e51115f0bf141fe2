//! Which templates a pass sends a DELETE for. The guard decides whether a template is still
//! referenced; this decides which templates are worth asking about, and keeps away from the
//! guard what it cannot know: a template a deploy tool still declares, or one so new that the
//! object that will reference it may not exist yet.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::declared::Declared;
use crate::{CLEANUP_LABEL, CLEANUP_VALUE, DeclaredObject, ServedKind, TOPOLOGY_OWNED_LABEL};

/// A listed object without name, uid or resourceVersion: the DELETE's preconditions need the
/// last two.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the API server listed a {resource} without name, uid or resourceVersion ({namespace}/{name})."
)]
pub struct Unidentified {
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

/// A template as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTemplate {
    pub kind: ServedKind,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub labels: BTreeMap<String, String>,
    /// `metadata.creationTimestamp`, in seconds since the epoch.
    pub created: i64,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The template as the guard's decision reads it (its metadata: owning Clusters, the move
    /// annotation); `None` for a kind the guard does not protect.
    pub guarded: Option<guard::capi::Template>,
}

impl ListedTemplate {
    pub fn declared_object(&self) -> DeclaredObject {
        DeclaredObject {
            group: self.kind.group.clone(),
            kind: self.kind.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// Its age at `now`, in seconds (0 for a clock behind the API server's).
    pub fn age(&self, now: i64) -> i64 {
        (now - self.created).max(0)
    }

    /// An object of `kind` as the API server lists it (JSON); an object without a creation time
    /// counts as created at `now`. A listed object without name, uid or resourceVersion is an
    /// error: the DELETE's preconditions need the last two.
    pub fn from_listed(kind: &ServedKind, item: &Value, now: i64) -> Result<Self, Unidentified> {
        let field = |p: &str| {
            item.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (namespace, name) = (field("/metadata/namespace"), field("/metadata/name"));
        let (uid, resource_version) = (field("/metadata/uid"), field("/metadata/resourceVersion"));
        if name.is_empty() || uid.is_empty() || resource_version.is_empty() {
            return Err(Unidentified {
                resource: kind.resource(),
                namespace,
                name,
            });
        }
        let created = item
            .pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map_or(now, |t| t.as_second());
        let labels = item
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let guarded = guard::catalogue::template_class(&kind.group, &kind.kind).and_then(|class| {
            guard::capi::Template::from_object(&kind.group, &kind.kind, class, item).ok()
        });
        Ok(ListedTemplate {
            guarded,
            kind: kind.clone(),
            namespace,
            name,
            uid,
            resource_version,
            labels,
            created,
            deleting: item
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|v| !v.is_null()),
        })
    }
}

/// Why a listed template gets no DELETE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "reason")]
pub enum Skip {
    /// Neither the cleanup label nor a topology copy, or opted out with the label set to
    /// `false`.
    NotMarked,
    /// Already being deleted: the garbage collector or a finalizer holder has it.
    BeingDeleted,
    /// Younger than `--min-age`.
    TooYoung,
    /// A deploy tool still declares it.
    Declared { by: String },
    /// In a namespace the guard never judges (see `preflight::check_webhook`).
    Unjudged { namespace: String, policy: String },
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::NotMarked => write!(
                f,
                "not marked for clean-up ({CLEANUP_LABEL} is not \"{CLEANUP_VALUE}\", or a topology copy opted out with \"false\")"
            ),
            Skip::BeingDeleted => write!(f, "already being deleted"),
            Skip::TooYoung => write!(f, "younger than --min-age"),
            Skip::Declared { by } => write!(f, "still declared by {by}"),
            Skip::Unjudged { namespace, policy } => write!(
                f,
                "the guard {policy} never judges a DELETE in namespace {namespace} (its webhook's \
                 namespaceSelector leaves it out, or it is the policy server's own namespace, \
                 where the policy server accepts every request unchecked): move the template \
                 to another namespace to have it collected"
            ),
        }
    }
}

/// Whether `template` is a candidate: marked (the cleanup label, or a topology copy that does
/// not opt out with the label set to `false`), not being deleted, older than `min_age` seconds at
/// `now`, and declared by no deploy tool.
pub fn candidate(
    template: &ListedTemplate,
    now: i64,
    min_age: i64,
    declared: &Declared,
) -> Result<(), Skip> {
    let label = template.labels.get(CLEANUP_LABEL).map(String::as_str);
    let labelled = label == Some(CLEANUP_VALUE);
    let topology_copy =
        template.labels.contains_key(TOPOLOGY_OWNED_LABEL) && label != Some("false");
    if !labelled && !topology_copy {
        return Err(Skip::NotMarked);
    }
    if template.deleting {
        return Err(Skip::BeingDeleted);
    }
    if template.age(now) < min_age {
        return Err(Skip::TooYoung);
    }
    if let Some(by) = declared.by(&template.declared_object()) {
        return Err(Skip::Declared { by: by.to_string() });
    }
    Ok(())
}
