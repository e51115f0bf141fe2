//! What the API server model shares with the real host: lists as the policy server's reflectors
//! keep them, list answers, CRD objects, and the error texts kwctl 1.36's host gives for a kind, a
//! group/version or an object that does not exist.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

/// The policy's pluralizer (lower-case kind, "s"; "es" after "ss"), checked against the `plural`
/// of every kind in test_data/catalogue.json, which the policy's tests write; "ies" for a "y" after
/// a consonant, as the CRDs of kinds outside the catalogue name them (`clusteradmissionpolicies`).
pub fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    match lower.strip_suffix('y') {
        _ if lower.ends_with("ss") => format!("{lower}es"),
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{lower}s"),
    }
}

/// An object as the policy server's reflector keeps it for lists (kubewarden-controller
/// v1.36.0-beta.1, crates/policy-evaluator/src/callback_handler/kubernetes/reflector.rs,
/// `modify_object`): `managedFields` emptied, the `last-applied-configuration` annotation dropped,
/// the rest as for a get. test_data/field-masks/vectors.json has the cases, checked live.
pub fn apply_masks(object: &Value, masks: Option<&BTreeSet<String>>) -> Value {
    let mut out = apply_get_masks(object, masks);
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), json!([]));
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    out
}

/// An object as the policy server answers a get, cached or not (callback_handler.rs,
/// `KubernetesGetResource`): all but apiVersion, kind and metadata pruned as field_mask.rs does.
pub fn apply_get_masks(object: &Value, masks: Option<&BTreeSet<String>>) -> Value {
    #[derive(Default)]
    struct Tree(HashMap<String, Tree>);
    fn prune(value: &mut Value, tree: &Tree) {
        match value {
            _ if tree.0.is_empty() => {}
            Value::Object(map) => map.retain(|k, v| tree.0.get(k).map(|t| prune(v, t)).is_some()),
            Value::Array(items) => items.iter_mut().for_each(|v| prune(v, tree)),
            _ => {}
        }
    }
    let mut out = object.clone();
    let mut tree = Tree::default();
    for path in masks.into_iter().flatten().map(|mask| mask.split('.')) {
        path.fold(&mut tree, |t, part| t.0.entry(part.into()).or_default());
    }
    let kept = |key: &str| matches!(key, "apiVersion" | "kind" | "metadata");
    if let Some(map) = out.as_object_mut().filter(|_| !tree.0.is_empty()) {
        map.retain(|k, v| kept(k) || tree.0.get(k).map(|t| prune(v, t)).is_some());
    }
    out
}

/// A list answer: the host checks nothing but `kind: <Kind>List` and the items.
pub fn list_answer(
    api_version: &str,
    kind: &str,
    resource_version: &str,
    items: Vec<Value>,
) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": format!("{kind}List"),
        "metadata": {"resourceVersion": resource_version},
        "items": items,
    })
}

/// The short names a provider's CRD gives a kind (`spec.names.shortNames`), which kube-apiserver
/// serves in discovery and kubectl resolves (`kubectl delete m3mt`, as Sylva's
/// refresh-metal3machinetemplates runs it): CAPM3's
/// `config/crd/bases/infrastructure.cluster.x-k8s.io_metal3machinetemplates.yaml`.
pub fn short_names(kind: &str) -> &'static [&'static str] {
    match kind {
        "Metal3MachineTemplate" => &["m3mt"],
        _ => &[],
    }
}

pub const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
pub const CRD_KIND: &str = "CustomResourceDefinition";

/// The CRD of `kind` in `group`, served at `versions` (oldest first), as the API server returns
/// it (without the OpenAPI schemas masks drop anyway). The storage version is the newest one.
pub fn crd(group: &str, kind: &str, versions: &[&str]) -> Value {
    let storage = versions.last();
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"name": v, "served": true, "storage": Some(v) == storage}))
        .collect();
    let (plural, singular) = (plural(kind), kind.to_lowercase());
    json!({
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": singular},
            "scope": "Namespaced",
            "versions": versions,
        },
    })
}

/// Kubernetes version priority as a sort key: GA, beta, alpha, higher numbers first.
pub fn priority(version: &str) -> (u8, i64, i64) {
    let number = |s: &str| -s.parse::<i64>().unwrap_or(0);
    let rest = version.trim_start_matches('v');
    for (level, rank) in [("beta", 1), ("alpha", 2)] {
        if let Some((major, minor)) = rest.split_once(level) {
            return (rank, number(major), number(minor));
        }
    }
    (0, number(rest), 0)
}

/// A kind missing from a served group/version.
pub fn no_such_kind(api_version: &str, kind: &str) -> String {
    format!("Cannot find resource {api_version}/{kind}")
}

/// A group/version not served: discovery's plain-text 404 in kube 3.1's `Status` (kwctl 1.36).
pub fn no_such_group_version(api_version: &str, kind: &str) -> String {
    format!(
        "error finding resource {api_version} / {kind}: ApiError: 404 page not found\n: Failed to parse error data (Status {{ status: Some(Failure), code: 404, message: \"404 page not found\\n\", metadata: None, reason: \"Failed to parse error data\", details: None }})"
    )
}

/// A missing object on get (the namespace printed as a Rust Option, as the host does).
pub fn no_such_object(
    api_version: &str,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> String {
    format!("Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_match_the_policys_catalogue() {
        let catalogue: Value =
            serde_json::from_str(include_str!("../../../test_data/catalogue.json")).unwrap();
        let kinds = catalogue.as_object().unwrap();
        assert!(kinds.contains_key("ClusterClass"));
        for (kind, entry) in kinds {
            assert_eq!(plural(kind), entry["plural"], "{kind}");
        }
        assert_eq!(plural("ClusterAdmissionPolicy"), "clusteradmissionpolicies");
        assert_eq!(plural("Gateway"), "gateways");
    }

    #[test]
    fn lists_and_gets_are_masked_as_the_golden_vectors_say() {
        let vectors: Value =
            serde_json::from_str(include_str!("../../../test_data/field-masks/vectors.json"))
                .unwrap();
        let cases = vectors["cases"].as_array().unwrap();
        for case in cases {
            let masks: Option<BTreeSet<String>> =
                serde_json::from_value(case["masks"].clone()).unwrap();
            let got = match case["call"] == "list" {
                true => apply_masks(&case["object"], masks.as_ref()),
                false => apply_get_masks(&case["object"], masks.as_ref()),
            };
            assert_eq!(got, case["expected"], "{}", case["name"]);
        }
        assert!(cases.iter().filter(|c| c["call"] == "get").count() >= 2);
    }

    #[test]
    fn crd_objects_name_plural_group_and_served_versions() {
        let crd = crd("cluster.x-k8s.io", "ClusterClass", &["v1beta1", "v1beta2"]);
        // The masks the policy sends with its CRD list (its catalogue, as its tests write it).
        let catalogue: Value =
            serde_json::from_str(include_str!("../../../test_data/catalogue.json")).unwrap();
        let masks: BTreeSet<String> =
            serde_json::from_value(catalogue["CustomResourceDefinition"]["masks"].clone()).unwrap();
        assert_eq!(
            apply_masks(&crd, Some(&masks)),
            json!({"apiVersion": CRD_API_VERSION, "kind": CRD_KIND,
                "metadata": {"name": "clusterclasses.cluster.x-k8s.io", "annotations": {}, "managedFields": []},
                "spec": {"group": "cluster.x-k8s.io", "names": {"kind": "ClusterClass", "plural": "clusterclasses"},
                    "versions": [{"name": "v1beta1", "served": true}, {"name": "v1beta2", "served": true}]}})
        );
    }
}
