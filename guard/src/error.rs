//! The policy's one error type. Each variant carries the facts of what went wrong; the sentence a
//! user reads is made from it in `message.rs` and nowhere else, `Display` included, so that this
//! module depends on the catalogue alone.

use crate::catalogue::{Resource, VersionSetting};

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
    /// An entry of `kindsNamingNoTemplate` the policy cannot take.
    NoTemplateKind {
        entry: String,
        problem: NoTemplateProblem,
    },

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
    /// The new machine is not a JSON object.
    MachineNotAnObject,
    /// A part of the machine that must be an object (`metadata`, `annotations`, `spec`) is not.
    PartNotAnObject(&'static str),
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

/// Why an entry of `kindsNamingNoTemplate` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoTemplateProblem {
    /// Not `Kind.group`.
    Form,
    /// A group the policy does not scan: the entry would change nothing.
    NotScanned,
    /// A kind the policy reads or guards: the entry would switch a rule off.
    Known,
}

/// What was looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A cluster-wide list (the CRDs).
    ListAll {
        api_version: String,
        resource: &'static Resource,
    },
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
    /// A list of a kind the catalogue does not know whole, scanned for references (boxed: its
    /// names are strings from the CRD, and every `Result` carries a `Lookup`).
    Scan(Box<ScanTarget>),
}

/// The kind a scan lists, named from its CRD (what a failed scan names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanTarget {
    pub api_version: String,
    pub kind: String,
    pub plural: String,
    pub namespace: String,
}

impl Lookup {
    pub fn api_version(&self) -> &str {
        match self {
            Lookup::ListAll { api_version, .. }
            | Lookup::List { api_version, .. }
            | Lookup::Get { api_version, .. } => api_version,
            Lookup::Scan(scan) => &scan.api_version,
        }
    }

    /// The catalogue's entry for the kind; `None` for a scanned kind.
    pub fn resource(&self) -> Option<&'static Resource> {
        match self {
            Lookup::ListAll { resource, .. }
            | Lookup::List { resource, .. }
            | Lookup::Get { resource, .. } => Some(resource),
            Lookup::Scan(_) => None,
        }
    }

    pub fn kind(&self) -> &str {
        match (self, self.resource()) {
            (Lookup::Scan(scan), _) => &scan.kind,
            (_, Some(resource)) => resource.kind,
            (_, None) => "",
        }
    }

    /// The resource name RBAC rules use, from the catalogue or the scanned kind's CRD.
    pub fn plural(&self) -> &str {
        match (self, self.resource()) {
            (Lookup::Scan(scan), _) => &scan.plural,
            (_, Some(resource)) => resource.plural,
            (_, None) => "",
        }
    }
}

/// How a lookup failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The kind's CRD serves none of the versions the policy can read.
    NoReadableVersion,
    /// An explicit version setting names a version the kind's CRD does not serve.
    WrongVersion { setting: VersionSetting },
    /// `get_resource` found no such object (the host's not-found answer).
    NotFound,
    /// The kind is not in the policy's `contextAwareResources`.
    AccessDenied,
    /// Kubewarden 1.36 and newer: the policy may not use this host capability at all (its
    /// `<namespace>/<operation>` is in the detail).
    CapabilityDenied,
    /// The template has Cluster owners and no CRD serves Clusters: whether they exist cannot be
    /// told, and reading them as gone would release the template (row 6).
    NoClusterCrd,
    /// The host answered, but not with what was asked for (no `items`, items of another kind,
    /// fields of the wrong type).
    Unreadable,
    /// The policy server's service account may not list a kind the scan would list (the host's
    /// `can_i` said so): listing it would hold a policy-server worker until the API server's
    /// webhook timeout.
    NotPermitted,
    /// Any other host error: RBAC, time-outs, the API server.
    Other,
}

/// A lookup that did not give an answer the policy can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    pub lookup: Lookup,
    pub failure: Failure,
    /// The host's own words (first line), what could not be read, or what the CRD serves.
    pub detail: String,
}

impl From<LookupError> for Error {
    fn from(error: LookupError) -> Self {
        Error::Lookup(error)
    }
}
