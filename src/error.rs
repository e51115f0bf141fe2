//! The policy's one error type. Each variant carries the facts of what went wrong; the sentence a
//! user reads is made from it in `message.rs` and nowhere else.

use crate::catalogue::{Resource, Version, VersionSetting};

/// Something that stops the policy from answering the way it normally would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    // Settings (validate_settings, and the settings carried by each request).
    /// The settings payload is not JSON.
    SettingsNotJson(String),
    /// The settings are JSON but not an object.
    SettingsNotAnObject(String),
    /// Settings the policy does not know, sorted.
    UnknownSettings(Vec<String>),
    /// A setting holds a value of the wrong type or outside its choices.
    SettingValue {
        setting: &'static str,
        expected: &'static str,
        value: String,
    },
    /// An annotation-key setting is not a valid annotation key.
    AnnotationKey {
        setting: &'static str,
        key: String,
        problem: KeyProblem,
    },
    /// An annotation-key setting names a key owned by Cluster API or Kubernetes, or one the
    /// policy reads.
    ReservedAnnotationKey {
        setting: &'static str,
        key: String,
    },
    /// Both annotation-key settings name the same key.
    SameAnnotationKeys,

    // The admission request.
    /// The validate payload cannot be read.
    UnreadableRequest(String),
    /// A DELETE without `oldObject`.
    NoOldObject,
    /// The `oldObject` of a DELETE cannot be read.
    UnreadableOldObject(String),
    /// Neither the request nor its `oldObject` names the object.
    Unnamed,

    // Lookups.
    Lookup(LookupError),

    // The Metal3Machine mutation.
    /// The new machine cannot be read or edited.
    UnreadableMachine(String),
    /// A part of the machine that must be an object is not.
    NotAnObject(&'static str),
    /// No cloned-from annotations and no usable owner.
    NoTemplateSource,
    /// The owner does not exist or names no Metal3MachineTemplate.
    OwnerNamesNoTemplate {
        kind: &'static str,
        name: String,
    },
    /// The Metal3MachineTemplate does not exist.
    TemplateMissing(String),
}

/// Why an annotation key is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProblem {
    Prefix,
    NameLength,
    NameEdges,
    NameCharacters,
}

/// What was looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    List {
        api_version: String,
        resource: &'static Resource,
        namespace: String,
    },
    Get {
        api_version: String,
        resource: &'static Resource,
        namespace: String,
        name: String,
    },
}

impl Lookup {
    pub fn api_version(&self) -> &str {
        match self {
            Lookup::List { api_version, .. } | Lookup::Get { api_version, .. } => api_version,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Lookup::List { resource, .. } | Lookup::Get { resource, .. } => resource.kind,
        }
    }

    /// The resource name RBAC rules use, from the catalogue.
    pub fn plural(&self) -> &'static str {
        match self {
            Lookup::List { resource, .. } | Lookup::Get { resource, .. } => resource.plural,
        }
    }
}

/// How a lookup failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The API server serves the kind at no version the policy can read. A caller forgives this
    /// for an optional kind.
    NotServed,
    /// An explicit version setting names a version the kind is not served at, while it is
    /// served at `served`.
    WrongVersion {
        setting: VersionSetting,
        served: Version,
    },
    /// `get_resource` found no such object (the host's not-found answer).
    NotFound,
    /// The kind is not in the policy's `contextAwareResources`.
    AccessDenied,
    /// The host answered, but not with what was asked for (no `items`, items of another kind,
    /// fields of the wrong type).
    Unreadable,
    /// Any other host error: RBAC, time-outs, the API server.
    Other,
}

/// A lookup that did not give an answer the policy can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    pub lookup: Lookup,
    pub failure: Failure,
    /// The host's own words (first line) or what could not be read.
    pub detail: String,
}

impl From<LookupError> for Error {
    fn from(error: LookupError) -> Self {
        Error::Lookup(error)
    }
}
