//! Helm's release storage, read the way Helm reads it, bounded at a cluster's scale: the
//! binary lists the release Secrets as metadata only, [`current_revisions`] picks from Helm's own
//! labels the revisions that still declare objects, and only those Secrets are fetched and
//! decoded, one at a time, by [`release_from_secret`], whose decompression is capped.
//!
//! Sources, at helm v4.2.4 (the same code in v3.21.4 unless said otherwise):
//! - `pkg/storage/driver/secrets.go`, `newSecretsObject`: every release Secret is named
//!   `sh.helm.release.v1.<release>.v<revision>` (`pkg/storage/storage.go`, `makeKey`) and labelled
//!   `owner=helm`, `name`, `status` and `version`; these four are set after the release's custom
//!   labels, so a chart's labels cannot change them. `Update` writes them again, so `status`
//!   follows the release.
//! - `pkg/storage/storage.go`, `Deployed`: the current release is the deployed revision with the
//!   highest number ("If executed concurrently, Helm's database gets corrupted and multiple
//!   releases are DEPLOYED. Take the latest."); `Last` is the highest revision whatever its status.
//! - `pkg/action/upgrade.go`, `prepareUpgrade`: an upgrade diffs against `Deployed`, or, when no
//!   revision is deployed and the last one is `failed` or `superseded`, against the last one; a
//!   `pending-*` last revision is an upgrade in flight (`errPending`). `failRelease` records a
//!   failed upgrade as `failed` and leaves what it created in place.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use crate::DeclaredObject;
use crate::declared::{ObjectError, name_of};
use guard::capi::group_of;

/// The most a release may take once decompressed. A Secret holds at most 1 MiB (the API
/// server's limit), and Helm's gzip of release JSON rarely shrinks it more than tenfold; a larger
/// answer is a corrupt or hostile Secret (a gzip bomb), read as an unreadable release instead of
/// filling the Job's memory. The manifest is held whole while it is read, twice at its peak: at
/// 32 MiB one hostile release took the Job to 65.5 MiB, at 16 MiB it stays near 40.
pub const MAX_RELEASE_BYTES: u64 = 16 << 20;

/// The prefix of every release Secret's name (helm `pkg/storage/storage.go`, `HelmStorageType`
/// and `makeKey`).
pub const SECRET_PREFIX: &str = "sh.helm.release.v1.";

/// The type of a release Secret (helm `pkg/storage/driver/secrets.go`, `newSecretsObject`).
pub const SECRET_TYPE: &str = "helm.sh/release.v1";

/// The label selector of Helm's Secrets (`Secrets.List`, `Secrets.Query`).
pub const SELECTOR: &str = "owner=helm";

/// One revision as its storage Secret's labels describe it, from a metadata-only list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredRevision {
    /// Where the Secret is: the release's namespace for the Helm CLI, a Flux HelmRelease's
    /// storage namespace for helm-controller.
    pub namespace: String,
    pub secret: String,
    pub release: String,
    pub version: u64,
    pub status: String,
}

/// A release whose current revision could not be read: every template it might declare counts
/// as declared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unreadable {
    /// The namespace its Secrets are stored in.
    pub namespace: String,
    pub release: String,
    pub reason: String,
}

/// A Secret of a metadata-only `owner=helm` list, as a revision. `Ok(None)` for a Secret that is
/// not release storage (another name, though labelled `owner=helm`); an error when it is release
/// storage whose labels Helm did not write as it does.
pub fn stored_revision(
    namespace: &str,
    secret: &str,
    labels: &BTreeMap<String, String>,
) -> Result<Option<StoredRevision>, Unreadable> {
    let Some(rest) = secret.strip_prefix(SECRET_PREFIX) else {
        return Ok(None);
    };
    // the release named by the Secret, in case its labels are wrong
    let named = rest.rsplit_once(".v").map_or(rest, |(name, _)| name);
    let unreadable = |reason: String| Unreadable {
        namespace: namespace.to_string(),
        release: labels.get("name").cloned().unwrap_or(named.to_string()),
        reason,
    };
    let label = |key: &str| {
        labels
            .get(key)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| unreadable(format!("its Secret {secret} has no {key} label")))
    };
    let (release, version, status) = (label("name")?, label("version")?, label("status")?);
    let version = version.parse::<u64>().map_err(|_| {
        unreadable(format!(
            "its Secret {secret} has version label {version:?}, not a revision number"
        ))
    })?;
    Ok(Some(StoredRevision {
        namespace: namespace.to_string(),
        secret: secret.to_string(),
        release: release.clone(),
        version,
        status: status.clone(),
    }))
}

/// The revisions to read, at most two per release (by storage namespace and name): the newest
/// `deployed` one, which Helm's next upgrade diffs against (`Storage.Deployed`), and the newest
/// revision when it is newer than that and not `uninstalled` or `uninstalling`: a `pending-*`
/// one is being applied, a `failed` one left what it created in place, and with no deployed
/// revision a `failed` or `superseded` last one is what the next upgrade diffs against
/// (`prepareUpgrade`). Older `superseded` revisions declare nothing: Helm never reads them again
/// but to roll back, which writes a new revision.
pub fn current_revisions(stored: &[StoredRevision]) -> Vec<&StoredRevision> {
    let mut releases: BTreeMap<(&str, &str), (Option<&StoredRevision>, &StoredRevision)> =
        BTreeMap::new();
    for r in stored {
        let deployed = (r.status == "deployed").then_some(r);
        let slot = releases
            .entry((&r.namespace, &r.release))
            .or_insert((deployed, r));
        if let Some(d) = deployed
            && slot.0.is_none_or(|old| d.version > old.version)
        {
            slot.0 = Some(d);
        }
        if r.version > slot.1.version {
            slot.1 = r;
        }
    }
    let mut out = Vec::new();
    for (deployed, newest) in releases.into_values() {
        out.extend(deployed);
        let newer = deployed.is_none_or(|d| newest.version > d.version);
        if newer && !matches!(newest.status.as_str(), "uninstalled" | "uninstalling") {
            out.push(newest);
        }
    }
    out
}

/// Why a stored release cannot be read: every template it might declare then counts as
/// declared. `what` names the Secret (`Helm release Secret edge/sh.helm.release.v1.site.v3`).
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("its Secret {secret} is of type {secret_type:?}, not {SECRET_TYPE}")]
    NotHelmsType { secret: String, secret_type: String },
    #[error("its Secret {secret} has no data.release")]
    NoRelease { secret: String },
    #[error("{what}: the release is not Helm's base64 ({source}).")]
    NotBase64 {
        what: String,
        #[source]
        source: base64::DecodeError,
    },
    #[error(
        "{what}: the release is larger than {mib} MiB once decompressed, more than any release Helm writes."
    )]
    TooLargeUnzipped { what: String, mib: u64 },
    #[error("{what}: the release is larger than {mib} MiB.")]
    TooLarge { what: String, mib: u64 },
    #[error("{what}: the release does not gunzip ({source}).")]
    NotGzip {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what}: the release is not Helm's release JSON ({source}).")]
    NotReleaseJson {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what}: {source}")]
    Manifest {
        what: String,
        #[source]
        source: ManifestError,
    },
}

/// Why a release's rendered manifest cannot be read within its bounds. `document` counts from 1.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(
        "manifest document #{document} may hold {nodes} YAML nodes, more than the {MAX_DOCUMENT_NODES} a template document is read with."
    )]
    TooManyNodes { document: usize, nodes: usize },
    #[error(
        "manifest document #{document} may hold {aliases} YAML aliases, more than the {MAX_DOCUMENT_ALIASES} a template document is read with."
    )]
    TooManyAliases { document: usize, aliases: usize },
    #[error("manifest document #{document} is not YAML ({source}).")]
    NotYaml {
        document: usize,
        #[source]
        source: yaml_serde::Error,
    },
}

/// One revision of a Helm release, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmRevision {
    /// The release's namespace (where it renders objects without one).
    pub namespace: String,
    pub name: String,
    pub version: i64,
    pub status: String,
    pub objects: Vec<DeclaredObject>,
}

/// The part of Helm's release JSON template-cleanup reads (helm `pkg/release/v1/release.go` and
/// `info.go`@v4.2.4; `pkg/release/release.go`@v3.21.4): serde skips the rest (chart, values) as it
/// parses, so only the manifest is kept.
#[derive(Deserialize)]
struct Release {
    name: String,
    #[serde(default)]
    namespace: String,
    version: i64,
    #[serde(default)]
    info: Option<Info>,
    #[serde(default)]
    manifest: String,
}

#[derive(Deserialize)]
struct Info {
    #[serde(default)]
    status: String,
}

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// A release Secret's `data.release` once the API's base64 is undone (kube-rs does it for a typed
/// Secret): Helm's own base64 of the gzipped release JSON (helm `pkg/storage/driver/util.go`,
/// `encodeRelease`/`decodeRelease`: releases stored before compression are not gzipped, and Helm
/// checks the gzip magic bytes, as this does). `namespace` and `secret` name the Secret in
/// messages; a release without a namespace is in the Secret's. Decompression stops after `limit`
/// bytes, which makes the release unreadable.
pub fn release_from_secret(
    namespace: &str,
    secret: &str,
    helm_text: &[u8],
    limit: u64,
) -> Result<HelmRevision, ReleaseError> {
    let what = format!("Helm release Secret {namespace}/{secret}");
    let b64 = base64::engine::general_purpose::STANDARD;
    let bytes = b64
        .decode(helm_text)
        .map_err(|source| ReleaseError::NotBase64 {
            what: what.clone(),
            source,
        })?;
    // the release JSON is read as it is decompressed, keeping only the fields below (the chart,
    // its files and values are skipped): the manifest is the only large thing held
    let too_large = || ReleaseError::TooLargeUnzipped {
        what: what.clone(),
        mib: limit >> 20,
    };
    let release: Result<Release, _> = if bytes.starts_with(&GZIP_MAGIC) {
        let reader = Capped {
            inner: flate2::read::GzDecoder::new(bytes.as_slice()),
            left: limit,
        };
        serde_json::from_reader(std::io::BufReader::new(reader)).map_err(
            |source: serde_json::Error| match source.io_error_kind() {
                Some(std::io::ErrorKind::FileTooLarge) => too_large(),
                Some(_) => ReleaseError::NotGzip {
                    what: what.clone(),
                    source,
                },
                None => ReleaseError::NotReleaseJson {
                    what: what.clone(),
                    source,
                },
            },
        )
    } else if bytes.len() as u64 > limit {
        return Err(ReleaseError::TooLarge {
            what,
            mib: limit >> 20,
        });
    } else {
        serde_json::from_slice(&bytes).map_err(|source| ReleaseError::NotReleaseJson {
            what: what.clone(),
            source,
        })
    };
    drop(bytes);
    let release = release?;
    let namespace = if release.namespace.is_empty() {
        namespace.to_string()
    } else {
        release.namespace
    };
    let objects = manifest_objects(&release.manifest, &namespace)
        .map_err(|source| ReleaseError::Manifest { what, source })?;
    Ok(HelmRevision {
        namespace,
        name: release.name,
        version: release.version,
        status: release.info.map(|i| i.status).unwrap_or_default(),
        objects,
    })
}

/// A fetched release Secret, given its `type` and its `data.release` once the API's base64 is
/// undone: the release, or why it cannot be read (not Helm's type, no release, or
/// [`release_from_secret`]'s reasons).
pub fn stored_release(
    namespace: &str,
    secret: &str,
    secret_type: Option<&str>,
    release: Option<&[u8]>,
    limit: u64,
) -> Result<HelmRevision, ReleaseError> {
    if secret_type != Some(SECRET_TYPE) {
        return Err(ReleaseError::NotHelmsType {
            secret: secret.to_string(),
            secret_type: secret_type.unwrap_or_default().to_string(),
        });
    }
    let Some(helm_text) = release else {
        return Err(ReleaseError::NoRelease {
            secret: secret.to_string(),
        });
    };
    release_from_secret(namespace, secret, helm_text, limit)
}

/// A reader that fails with `FileTooLarge` past `left` bytes (a gzip bomb is cut there).
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // one byte more tells a release of exactly `left` bytes from a larger one
            if self.inner.read(&mut [0u8; 1])? > 0 {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            return Ok(0);
        }
        let max = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The most YAML nodes one manifest document may hold, estimated from above by its structural
/// characters (`,[]{}:-` and line breaks: every node but the first needs one). The YAML parser
/// holds every event of a document at once, about 100 bytes each: a flow list of 15 million
/// items, 30 MB once decompressed, would take over a GiB. Real templates hold a few hundred.
pub const MAX_DOCUMENT_NODES: usize = 100_000;

/// The most aliases (`*`) one manifest document may hold: each replays its anchor's nodes, so
/// nested aliases multiply them (a "billion laughs").
pub const MAX_DOCUMENT_ALIASES: usize = 256;

/// The head of a manifest document: what a declaration reads; every other field is skipped as
/// it is parsed, never built.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<yaml_serde::Value>,
    #[serde(default)]
    kind: Option<yaml_serde::Value>,
    #[serde(default)]
    metadata: Option<MetaHead>,
}

#[derive(Deserialize)]
struct MetaHead {
    #[serde(default)]
    name: Option<yaml_serde::Value>,
    #[serde(default)]
    namespace: Option<yaml_serde::Value>,
}

/// The documents of a multi-document YAML text, split at the lines that start with `---` (a
/// document marker at column 0 ends any scalar, so no document holds one).
fn documents(manifest: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(manifest);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut at = 0;
        loop {
            match text[at..].find("\n---") {
                Some(i) => {
                    let marker = at + i + 1;
                    let after = text[marker + 3..].chars().next();
                    if after.is_none_or(|c| c == '\n' || c == '\r' || c == ' ' || c == '\t') {
                        rest = Some(&text[marker..]);
                        return Some(&text[..marker]);
                    }
                    at = marker;
                }
                None => {
                    rest = None;
                    return Some(text);
                }
            }
        }
    })
}

/// The objects of a rendered manifest (multi-document YAML) that can be templates; an object
/// without a namespace is in the release's namespace, where Helm creates it. A document whose
/// text does not hold `Template` cannot be of a template kind (every kind collected ends so) and
/// is not parsed. The others are parsed within bounds ([`MAX_DOCUMENT_NODES`],
/// [`MAX_DOCUMENT_ALIASES`], and the YAML parser's depth of 128), reading only their head; one
/// that exceeds them, or is not YAML, makes the release unreadable.
fn manifest_objects(manifest: &str, namespace: &str) -> Result<Vec<DeclaredObject>, ManifestError> {
    let mut out = Vec::new();
    for (i, text) in documents(manifest).enumerate() {
        if !text.contains("Template") {
            continue;
        }
        let nodes = text.bytes().filter(|b| b",[]{}:-\n".contains(b)).count();
        if nodes > MAX_DOCUMENT_NODES {
            return Err(ManifestError::TooManyNodes {
                document: i + 1,
                nodes,
            });
        }
        let aliases = text.bytes().filter(|b| *b == b'*').count();
        if aliases > MAX_DOCUMENT_ALIASES {
            return Err(ManifestError::TooManyAliases {
                document: i + 1,
                aliases,
            });
        }
        for document in yaml_serde::Deserializer::from_str(text) {
            let head =
                Option::<Head>::deserialize(document).map_err(|source| ManifestError::NotYaml {
                    document: i + 1,
                    source,
                })?;
            let Some(head) = head else { continue };
            let field = |v: &Option<yaml_serde::Value>| {
                v.as_ref()
                    .and_then(yaml_serde::Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let (name, ns) = head
                .metadata
                .as_ref()
                .map_or((String::new(), String::new()), |m| {
                    (field(&m.name), field(&m.namespace))
                });
            let kind = field(&head.kind);
            if kind.is_empty() || name.is_empty() {
                continue;
            }
            out.push(DeclaredObject {
                group: group_of(&field(&head.api_version)).to_string(),
                kind,
                namespace: if ns.is_empty() {
                    namespace.to_string()
                } else {
                    ns
                },
                name,
            });
        }
    }
    Ok(out)
}

/// What template-cleanup reads of a Flux HelmRelease: where helm-controller stores its release and
/// where the release renders (helm-controller v1.5.0 `api/v2/helmrelease_types.go:1480-1496`,
/// `GetReleaseNamespace`, `GetStorageNamespace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FluxHelmRelease {
    /// `status.storageNamespace` (where the current release is) and `spec.storageNamespace`
    /// (default: the HelmRelease's namespace): after the spec changes, the release stays where
    /// the status says until the next install.
    pub storage: Vec<String>,
    /// `spec.targetNamespace`, default: the HelmRelease's namespace.
    pub target: String,
}

/// A Flux HelmRelease as the API server returns it.
pub fn flux_helm_release(object: &Value) -> Result<FluxHelmRelease, ObjectError> {
    let what = format!("Flux HelmRelease {}", name_of(object));
    let text = |pointer: &'static str| match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ObjectError::NotAString {
            what: what.clone(),
            pointer,
            value: other.clone(),
        }),
    };
    let own = text("/metadata/namespace")?
        .ok_or_else(|| ObjectError::NoNamespace { what: what.clone() })?;
    let mut storage: Vec<String> = text("/status/storageNamespace")?.into_iter().collect();
    storage.push(text("/spec/storageNamespace")?.unwrap_or(own.clone()));
    storage.dedup();
    Ok(FluxHelmRelease {
        storage,
        target: text("/spec/targetNamespace")?.unwrap_or(own),
    })
}

/// The namespaces whose templates an unreadable release may declare: the one it is stored in
/// (the Helm CLI stores a release in its own namespace), and the target namespace of every Flux
/// HelmRelease stored there. Release names are not matched (helm-controller shortens long ones),
/// so one unreadable release in a shared storage namespace holds the templates of every
/// HelmRelease stored there, for as long as it cannot be read.
pub fn unreadable_namespaces(
    unreadable: &Unreadable,
    flux: &[FluxHelmRelease],
) -> BTreeSet<String> {
    let mut out = BTreeSet::from([unreadable.namespace.clone()]);
    for release in flux {
        if release.storage.contains(&unreadable.namespace) {
            out.insert(release.target.clone());
        }
    }
    out
}
