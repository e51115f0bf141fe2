//! What the deploy tools still declare. A template a deploy tool declares is not retired, even
//! if nothing references it yet: it may have been rendered a moment before the MachineDeployment
//! that will point at it (Sylva's collector deleted such a Metal3DataTemplate and hung an upgrade,
//! sylva-core issue 2820). Each reader takes an object as the API server returns it, as JSON.

use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use crate::{group_of, ObjectRef};

/// Every object some deploy tool declares, with the first source that declares it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared(BTreeMap<ObjectRef, String>);

impl Declared {
    pub fn insert(&mut self, object: ObjectRef, source: &str) {
        self.0.entry(object).or_insert_with(|| source.to_string());
    }

    /// The source that declares `object` (`Flux Kustomization flux-system/sites`, ...).
    pub fn by(&self, object: &ObjectRef) -> Option<&str> {
        self.0.get(object).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn name_of(object: &Value) -> String {
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
pub fn flux_kustomization(object: &Value) -> Result<Vec<ObjectRef>, String> {
    let what = format!("Flux Kustomization {}", name_of(object));
    let Some(entries) = object.pointer("/status/inventory/entries") else {
        return Ok(Vec::new());
    };
    let entries = entries
        .as_array()
        .ok_or_else(|| format!("{what}: status.inventory.entries is not a list."))?;
    entries
        .iter()
        .map(|entry| {
            let id = entry
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{what}: an inventory entry has no id: {entry}."))?;
            let bad =
                || format!("{what}: inventory id {id:?} is not <namespace>_<name>_<group>_<Kind>.");
            let mut back = id.rsplitn(3, '_');
            let (kind, group, rest) = (back.next(), back.next(), back.next());
            let (Some(kind), Some(group), Some(rest)) = (kind, group, rest) else {
                return Err(bad());
            };
            let (namespace, name) = rest.split_once('_').ok_or_else(bad)?;
            if kind.is_empty() || name.is_empty() {
                return Err(bad());
            }
            Ok(ObjectRef {
                group: group.to_string(),
                kind: kind.to_string(),
                namespace: namespace.to_string(),
                name: name.replace("__", ":"),
            })
        })
        .collect()
}

/// An Argo CD Application's `status.resources[]`: `group`, `version`, `kind`, `namespace`,
/// `name` (argo-cd v3.5.1 `pkg/apis/application/v1alpha1/types.go`, `ResourceStatus`, whose
/// `RequiresPruning` is at :2248). An entry with `requiresPruning: true` is one Argo CD manages but
/// no longer renders: `controller/state.go` sets it as `targetObj == nil && liveObj != nil &&
/// isSelfReferencedObj` (v3.5.1). Argo CD lists it while it exists, but no longer declares it.
pub fn argo_application(object: &Value) -> Result<Vec<ObjectRef>, String> {
    let what = format!("Argo CD Application {}", name_of(object));
    let Some(resources) = object.pointer("/status/resources") else {
        return Ok(Vec::new());
    };
    let resources = resources
        .as_array()
        .ok_or_else(|| format!("{what}: status.resources is not a list."))?;
    resources
        .iter()
        .filter(|r| r.get("requiresPruning") != Some(&Value::Bool(true)))
        .map(|r| {
            let field = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("").to_string();
            let (kind, name) = (field("kind"), field("name"));
            if kind.is_empty() || name.is_empty() {
                return Err(format!(
                    "{what}: a status.resources entry has no kind or name: {r}."
                ));
            }
            Ok(ObjectRef {
                group: field("group"),
                kind,
                namespace: field("namespace"),
                name,
            })
        })
        .collect()
}

/// The namespaces where Flux helm-controller keeps a HelmRelease's release Secrets: its
/// `status.storageNamespace` (where the current release is stored) and its `spec.storageNamespace`,
/// which defaults to the HelmRelease's own namespace (helm-controller v1.5.0
/// `api/v2/helmrelease_types.go:95-101` and `:1236-1242`, `GetStorageNamespace`), usually
/// `flux-system` rather than the namespace the templates are rendered in. Both are read: after
/// `spec.storageNamespace` changes, the release stays where the status says until the next
/// install.
pub fn flux_helm_storage_namespaces(object: &Value) -> Result<Vec<String>, String> {
    let what = format!("Flux HelmRelease {}", name_of(object));
    let text = |pointer: &str| match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "{what}: {pointer} holds {other}, which is not a string."
        )),
    };
    let own =
        text("/metadata/namespace")?.ok_or_else(|| format!("{what} has no metadata.namespace."))?;
    let mut out: Vec<String> = text("/status/storageNamespace")?.into_iter().collect();
    out.push(text("/spec/storageNamespace")?.unwrap_or(own));
    out.dedup();
    Ok(out)
}

/// One revision of a Helm release, read from its storage Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmRevision {
    pub namespace: String,
    pub name: String,
    pub version: i64,
    pub status: String,
    pub objects: Vec<ObjectRef>,
}

/// The part of Helm's release JSON the clean-up reads (helm `pkg/release/release.go`,
/// `pkg/release/info.go`, v3.17; the same fields in Helm 4's `pkg/release/v1`).
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

/// A Helm storage Secret (`sh.helm.release.v1.<release>.v<revision>`, type `helm.sh/release.v1`)
/// as the API server shows it: `data.release` is base64 (the API's encoding of Secret data) of
/// Helm's own base64 of the gzipped release JSON (helm `pkg/storage/driver/util.go`,
/// `encodeRelease`/`decodeRelease`, v3.17: releases stored before compression are not gzipped,
/// and Helm checks the gzip magic bytes, as this does). `Ok(None)` for a Secret of another type.
pub fn helm_release_secret(secret: &Value) -> Result<Option<HelmRevision>, String> {
    if secret.get("type").and_then(Value::as_str) != Some("helm.sh/release.v1") {
        return Ok(None);
    }
    let what = format!("Helm release Secret {}", name_of(secret));
    let data = secret
        .pointer("/data/release")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{what} has no data.release."))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let helm_text = b64
        .decode(data)
        .map_err(|e| format!("{what}: data.release is not base64 ({e})."))?;
    let mut bytes = b64
        .decode(&helm_text)
        .map_err(|e| format!("{what}: the release is not Helm's base64 ({e})."))?;
    if bytes.starts_with(&GZIP_MAGIC) {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut json)
            .map_err(|e| format!("{what}: the release does not gunzip ({e})."))?;
        bytes = json;
    }
    let release: Release = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{what}: the release is not Helm's release JSON ({e})."))?;
    let namespace = if release.namespace.is_empty() {
        secret
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    } else {
        release.namespace
    };
    let objects =
        manifest_objects(&release.manifest, &namespace).map_err(|e| format!("{what}: {e}"))?;
    Ok(Some(HelmRevision {
        namespace,
        name: release.name,
        version: release.version,
        status: release.info.map(|i| i.status).unwrap_or_default(),
        objects,
    }))
}

/// The objects of a rendered manifest (multi-document YAML); an object without a namespace is in
/// the release's namespace, where Helm creates it.
fn manifest_objects(manifest: &str, namespace: &str) -> Result<Vec<ObjectRef>, String> {
    let mut out = Vec::new();
    for (i, document) in yaml_serde::Deserializer::from_str(manifest).enumerate() {
        let value = Value::deserialize(document)
            .map_err(|e| format!("manifest document #{} is not YAML ({e}).", i + 1))?;
        let field = |p: &str| value.pointer(p).and_then(Value::as_str).unwrap_or("");
        if value.is_null() || field("/kind").is_empty() || field("/metadata/name").is_empty() {
            continue;
        }
        let ns = match field("/metadata/namespace") {
            "" => namespace,
            ns => ns,
        };
        out.push(ObjectRef {
            group: group_of(field("/apiVersion")).to_string(),
            kind: field("/kind").to_string(),
            namespace: ns.to_string(),
            name: field("/metadata/name").to_string(),
        });
    }
    Ok(out)
}

/// The revisions that still declare their objects: of each release, its newest revision (a
/// `pending-upgrade` or `failed` one may already have created its new templates, and a rollback
/// or retry returns to it) and every `deployed` one (the current release, helm
/// `pkg/release/status.go`, v3.17; the same statuses in Helm 4's `pkg/release/common/status.go`,
/// v4.0.0 to v4.2.4). Superseded revisions and uninstalled releases declare nothing.
pub fn helm_current(revisions: &[HelmRevision]) -> Vec<&HelmRevision> {
    let mut newest: BTreeMap<(&str, &str), &HelmRevision> = BTreeMap::new();
    for r in revisions {
        let slot = newest.entry((&r.namespace, &r.name)).or_insert(r);
        if r.version > slot.version {
            *slot = r;
        }
    }
    revisions
        .iter()
        .filter(|r| {
            let is_newest = newest
                .get(&(r.namespace.as_str(), r.name.as_str()))
                .is_some_and(|n| n.version == r.version);
            r.status == "deployed"
                || (is_newest
                    && !matches!(
                        r.status.as_str(),
                        "uninstalled" | "uninstalling" | "superseded"
                    ))
        })
        .collect()
}
