//! The admission requests (test_data/requests/), settings (test_data/settings/) and host-call
//! sessions (test_data/sessions/) that e2e.bats replays, written from the objects in
//! test_data/objects/ with the guard's own catalogue: the field masks, groups, plurals and
//! versions are `guard::catalogue`'s, and list and get answers are masked by
//! `guard::testing::{masked, get_masked}`, the model of the policy server the unit tests use.
//!
//! Sessions follow kwctl's replay format: a YAML list of exchanges, replayed strictly in order and
//! matched exactly, so the masks must be the ones the policy sends. Every session that makes a
//! lookup starts with the cluster-wide CRD list.
//!
//! `cargo xtask check` names a committed file that is stale; `make cases` (`cargo xtask gen
//! cases`) rewrites them.

mod table;

use std::collections::{BTreeMap, BTreeSet};

use guard::catalogue::{self, CRD, Resource, masks_of, resources_read};
use guard::testing::{USUAL, get_masked, masked};
use serde_json::{Value, json};

use crate::derived::Derived;
use crate::root;

pub const NS: &str = "edge-sites";
pub const CAPI: &str = "cluster.x-k8s.io";
pub const CP: &str = "controlplane.cluster.x-k8s.io";
pub const INFRA: &str = "infrastructure.cluster.x-k8s.io";
pub const V1: &str = "v1beta1";
pub const V2: &str = "v1beta2";

/// One case: its request, the host calls it makes, in order, and its settings.
pub struct Case {
    pub request: Value,
    pub calls: Vec<Value>,
    pub settings: Value,
}

/// `test_data/objects/<path>`.
pub fn obj(path: &str) -> Value {
    let file = root().join("test_data/objects").join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn resource(kind: &str) -> &'static Resource {
    resources_read()
        .find(|r| r.kind == kind)
        .unwrap_or_else(|| panic!("{kind} is not a kind the policy reads"))
}

/// The masks the policy sends for `kind`, as the catalogue derives them.
pub fn masks(kind: &str) -> BTreeSet<String> {
    let resource = resource(kind);
    catalogue::referrer_of(resource).map_or_else(|| masks_of(resource), |r| r.masks())
}

fn api_version(kind: &str, version: &str) -> String {
    format!("{}/{version}", resource(kind).group)
}

fn yaml_list(items: &BTreeSet<String>) -> String {
    items.iter().map(|i| format!("- {i}\n")).collect()
}

fn exchange(request: String, response: Result<Value, &str>) -> Value {
    let response = match response {
        Ok(payload) => json!({"type": "Success", "payload": payload.to_string()}),
        Err(message) => json!({"type": "Error", "message": message}),
    };
    json!({"type": "Exchange", "request": request, "response": response})
}

/// One list of `kind` at `version`: in the template's namespace, or across namespaces where the
/// kind's controller follows the namespace a reference gives (then with `metadata.namespace`).
pub fn list_call(kind: &str, version: &str, items: &[Value], error: Option<&str>) -> Value {
    let across = catalogue::referrer_of(resource(kind))
        .is_some_and(|r| r.follows_reference_namespace_at.contains(&version));
    let av = api_version(kind, version);
    let mut masks = masks(kind);
    let request = if across {
        masks.insert("metadata.namespace".into());
        format!(
            "!KubernetesListResourceAll\napi_version: {av}\nkind: {kind}\nlabel_selector: null\nfield_selector: null\nfield_masks:\n{}",
            yaml_list(&masks)
        )
    } else {
        format!(
            "!KubernetesListResourceNamespace\napi_version: {av}\nkind: {kind}\nnamespace: {NS}\nlabel_selector: null\nfield_selector: null\nfield_masks:\n{}",
            yaml_list(&masks)
        )
    };
    if let Some(error) = error {
        return exchange(request, Err(error));
    }
    let items: Vec<Value> = items.iter().map(|i| masked(i, &masks)).collect();
    let payload = json!({"apiVersion": av, "kind": format!("{kind}List"),
        "metadata": {"resourceVersion": "4711"}, "items": items});
    exchange(request, Ok(payload))
}

/// One get of `kind` `name`: the object pruned to the masks, or the host's not-found text.
pub fn get_call(
    kind: &str,
    version: &str,
    name: &str,
    disable_cache: bool,
    found: Option<&Value>,
) -> Value {
    let av = api_version(kind, version);
    let masks = masks(kind);
    let request = format!(
        "!KubernetesGetResource\napi_version: {av}\nkind: {kind}\nname: {name}\nnamespace: {NS}\ndisable_cache: {disable_cache}\nfield_masks:\n{}",
        yaml_list(&masks)
    );
    match found {
        Some(found) => exchange(request, Ok(get_masked(found, &masks))),
        None => {
            let error = format!(
                "Cannot find {av}/{kind} named '{name}' inside of namespace 'Some(\"{NS}\")'"
            );
            exchange(request, Err(&error))
        }
    }
}

/// The versions a provider of `release` serves: v1beta2 releases serve v1beta1 too.
fn served(release: &str) -> Vec<&str> {
    if release == V2 {
        vec![V2, V1]
    } else {
        vec![release]
    }
}

/// What a CRD list holds beyond the usual kinds at a release.
#[derive(Default)]
pub struct Crds<'a> {
    /// Other installed kinds of the catalogue, and their release.
    pub also: &'a [(&'a str, &'a str)],
    /// Kinds whose CRD serves no version.
    pub unserved: &'a [&'a str],
    /// Usual kinds not installed.
    pub without: &'a [&'a str],
    /// CRDs of kinds the catalogue does not read: group, kind, version.
    pub others: &'a [(&'a str, &'a str, &'a str)],
    pub error: Option<&'a str>,
}

/// The CRD list: the usual kinds at `release`, and what `crds` adds.
pub fn crd_call(release: &str, crds: Crds) -> Value {
    let request = format!(
        "!KubernetesListResourceAll\napi_version: {}/v1\nkind: {}\nlabel_selector: null\nfield_selector: null\nfield_masks:\n{}",
        CRD.group,
        CRD.kind,
        yaml_list(&masks_of(&CRD))
    );
    if let Some(error) = crds.error {
        return exchange(request, Err(error));
    }
    let mut kinds: BTreeMap<&str, &str> = USUAL
        .iter()
        .filter(|k| !crds.without.contains(k))
        .map(|k| (*k, release))
        .collect();
    kinds.extend(crds.also.iter().copied());
    let mut items: Vec<Value> = kinds
        .iter()
        .map(|(kind, release)| {
            let r = resource(kind);
            let versions: Vec<Value> = served(release)
                .into_iter()
                .map(|v| json!({"name": v, "served": !crds.unserved.contains(kind)}))
                .collect();
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{}.{}", r.plural, r.group)},
                "spec": {"group": r.group, "names": {"kind": kind, "plural": r.plural}, "versions": versions}})
        })
        .collect();
    items.extend(crds.others.iter().map(|(group, kind, version)| {
        let plural = format!("{}s", kind.to_lowercase());
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": version, "served": true}]}})
    }));
    let payload = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinitionList",
        "metadata": {"resourceVersion": "4711"}, "items": items});
    exchange(request, Ok(payload))
}

/// One list, at the newest version the policy reads that the provider's `release` serves.
pub fn list_at(kind: &str, release: &str, items: &[Value]) -> Vec<Value> {
    let served = served(release);
    let version = resource(kind)
        .versions
        .iter()
        .find(|v| served.contains(v))
        .unwrap_or_else(|| panic!("{kind} is not read at {release}"));
    vec![list_call(kind, version, items, None)]
}

/// The can_i question before a scan's list, as kwctl records it (KubernetesCanI).
pub fn can_i_call(plural: &str, allowed: bool) -> Value {
    let request = format!(
        "!KubernetesCanI\nrequest:\n  groups:\n  - system:serviceaccounts\n  - system:serviceaccounts:kubewarden\n  - system:authenticated\n  resource_attributes:\n    group: {CP}\n    name: null\n    namespace: {NS}\n    resource: {plural}\n    subresource: null\n    verb: list\n    version: null\n  user: system:serviceaccount:kubewarden:policy-server\ndisable_cache: false\n"
    );
    let status = if allowed {
        json!({"allowed": true})
    } else {
        json!({"allowed": false, "reason": "no RBAC policy matched"})
    };
    exchange(request, Ok(status))
}

/// An AdmissionRequest of `operation` on `kind` `name` in the cases' namespace.
pub fn request(
    operation: &str,
    (group, kind, version): (&str, &str, &str),
    name: &str,
    object: Option<&Value>,
    old: Option<&Value>,
    dry_run: bool,
) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": plural});
    let options = if operation == "DELETE" {
        "DeleteOptions"
    } else {
        "CreateOptions"
    };
    json!({
        "uid": format!("e2e-{}-{name}", operation.to_lowercase()),
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": name, "namespace": NS, "operation": operation,
        "userInfo": {"username": "system:serviceaccount:flux-system:helm-controller",
                     "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": object, "oldObject": old, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
    })
}

fn gvk_of(o: &Value) -> (&str, &str, &str) {
    let (group, version) = o["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .unwrap_or(("", ""));
    (group, o["kind"].as_str().unwrap_or(""), version)
}

pub fn delete(o: &Value, dry_run: bool) -> Value {
    let name = o["metadata"]["name"].as_str().unwrap_or("");
    request("DELETE", gvk_of(o), name, None, Some(o), dry_run)
}

pub fn create(o: &Value) -> Value {
    let name = o["metadata"]["name"].as_str().unwrap_or("");
    request("CREATE", gvk_of(o), name, Some(o), None, false)
}

/// `o` with `metadata.<key>` set to `value`.
pub fn with_meta(o: &Value, key: &str, value: Value) -> Value {
    let mut o = o.clone();
    o["metadata"][key] = value;
    o
}

/// `o` with its top-level `key` replaced by `value`.
pub fn with(o: &Value, key: &str, value: Value) -> Value {
    let mut o = o.clone();
    o[key] = value;
    o
}

pub fn deleting(o: &Value) -> Value {
    with_meta(o, "deletionTimestamp", json!("2026-11-29T10:00:00Z"))
}

/// A session as kwctl reads it: request strings as literal blocks, payloads and messages as
/// single-quoted scalars.
fn session_yaml(calls: &[Value]) -> String {
    if calls.is_empty() {
        return "[]\n".into();
    }
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut out = String::new();
    for call in calls {
        let request = call["request"].as_str().unwrap_or_default();
        out += "- type: Exchange\n";
        if request.contains('\n') {
            out += "  request: |\n";
            for line in request.lines() {
                out += &format!("    {line}\n");
            }
        } else {
            out += &format!("  request: {}\n", quoted(request));
        }
        let response = &call["response"];
        out += &format!(
            "  response:\n    type: {}\n",
            response["type"].as_str().unwrap_or_default()
        );
        for key in ["payload", "message"] {
            if let Some(text) = response[key].as_str() {
                out += &format!("    {key}: {}\n", quoted(text));
            }
        }
    }
    out
}

/// The files of every case, under test_data/.
pub fn files() -> Vec<Derived> {
    let mut out = Vec::new();
    for (name, case) in table::cases() {
        let request = serde_json::to_string_pretty(&case.request).unwrap_or_default();
        let file = |path: String, text: String| Derived::File {
            path: format!("test_data/{path}"),
            text,
        };
        out.push(file(
            format!("requests/{name}.json"),
            format!("{request}\n"),
        ));
        out.push(file(
            format!("settings/{name}.json"),
            format!("{}\n", case.settings),
        ));
        out.push(file(
            format!("sessions/{name}.yml"),
            session_yaml(&case.calls),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's YAML reads back as the exchanges it was written from.
    #[test]
    fn a_session_reads_back_as_written() {
        let calls = vec![
            list_call("MachineSet", V2, &[], None),
            list_call("MachineSet", V1, &[], Some("it's refused")),
        ];
        let back: Value = yaml_serde::from_str(&session_yaml(&calls)).unwrap();
        assert_eq!(back, Value::Array(calls));
    }
}
