//! What the cluster's CustomResourceDefinitions say: which kinds are installed, under which
//! plural, at which served versions. One cluster-wide list per request, decoded through a view
//! that reads no more than this.

use serde::Deserialize;

use crate::error::{Failure, Lookup, LookupError};
use crate::metadata::nullable;

/// One CRD as the policy reads it: a view that decodes its names and served versions and skips
/// the rest (the host keeps each CRD's metadata whole, about 0.6 KB, and every request decodes
/// the list again).
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct CrdView {
    #[serde(deserialize_with = "nullable")]
    kind: String,
    metadata: CrdMeta,
    spec: CrdSpec,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct CrdMeta {
    #[serde(deserialize_with = "nullable")]
    name: String,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct CrdSpec {
    #[serde(deserialize_with = "nullable")]
    group: String,
    names: CrdNames,
    versions: Option<Vec<CrdVersion>>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct CrdNames {
    #[serde(deserialize_with = "nullable")]
    kind: String,
    #[serde(deserialize_with = "nullable")]
    plural: String,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct CrdVersion {
    #[serde(deserialize_with = "nullable")]
    name: String,
    served: bool,
}

impl CrdView {
    /// The kind its list item says it is (a CRD).
    pub fn kind(&self) -> &str {
        &self.kind
    }
}

/// An installed kind: a CRD that serves at least one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub group: String,
    pub kind: String,
    pub plural: String,
    /// The served versions, in the CRD's order.
    pub served: Vec<String>,
}

/// The installed kinds. A CRD whose group, kind, plural or versions cannot be read is an
/// unreadable answer, not a kind that is absent; a CRD that serves no version is not installed,
/// since no client can read it.
pub fn installed_kinds(crds: Vec<CrdView>, lookup: &Lookup) -> Result<Vec<Installed>, LookupError> {
    let mut installed = Vec::new();
    for crd in crds {
        let spec = crd.spec;
        let (false, false, false, Some(versions)) = (
            spec.group.is_empty(),
            spec.names.kind.is_empty(),
            spec.names.plural.is_empty(),
            spec.versions,
        ) else {
            return Err(LookupError {
                lookup: lookup.clone(),
                failure: Failure::Unreadable,
                detail: format!(
                    "the CustomResourceDefinition {} has no spec.group, spec.names.kind, spec.names.plural or spec.versions",
                    crd.metadata.name
                ),
            });
        };
        let served: Vec<String> = versions
            .into_iter()
            .filter(|v| v.served && !v.name.is_empty())
            .map(|v| v.name)
            .collect();
        if !served.is_empty() {
            installed.push(Installed {
                group: spec.group,
                kind: spec.names.kind,
                plural: spec.names.plural,
                served,
            });
        }
    }
    Ok(installed)
}

/// Kubernetes' version priority (GA, then beta, then alpha; higher numbers first): the order
/// `kubectl` prefers versions in, used to pick the version a kind is scanned at.
fn priority(version: &str) -> (u8, u32, u32) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(major) = rest[..digits].parse::<u32>() else {
        return (0, 0, 0);
    };
    let (stability, minor) = match &rest[digits..] {
        "" => (3, 0),
        tail => match tail
            .strip_prefix("beta")
            .map(|m| (2, m))
            .or_else(|| tail.strip_prefix("alpha").map(|m| (1, m)))
        {
            Some((stability, minor)) => match minor.parse::<u32>() {
                Ok(minor) => (stability, minor),
                Err(_) => return (0, 0, 0),
            },
            None => return (0, 0, 0),
        },
    };
    (stability, major, minor)
}

pub fn newest(served: &[String]) -> &str {
    served
        .iter()
        .max_by_key(|v| (priority(v), std::cmp::Reverse(v.as_str())))
        .map_or("", String::as_str)
}
