//! Test helpers: list answers and an in-memory [`Host`] that behaves like the
//! policy server: it answers the CRD list from the kinds it has installed, applies the field
//! masks of every call (outside `apiVersion`, `kind` and `metadata`, lists transparent) and fails
//! loudly on a call it has no answer for.

use crate::host::Host;
use guard::catalogue::CRD;
use guard::testing::{USUAL, get_masked, masked, resource_named};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// A CustomResourceDefinition as the host's CRD list holds it: the tests' one builder (the fake
/// host and the fuzzer answer the CRD list with it).
pub fn crd_object(group: &str, kind: &str, plural: &str, versions: &[(&str, bool)]) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "versions": versions.iter().map(|(v, served)| json!({"name": v, "served": served})).collect::<Vec<_>>(),
        },
    })
}

/// Wraps objects into a list answer as the host sends it.
pub fn list_of(api_version: &str, kind: &str, items: &[Value]) -> String {
    json!({"apiVersion": api_version, "kind": format!("{kind}List"), "items": items}).to_string()
}

/// The host's answer: a list's items as the reflector keeps them ([`masked`]); a get's object
/// pruned to its masks ([`get_masked`]). An answer of another shape is sent as it is.
fn masked_answer(json: &str, masks: &Option<BTreeSet<String>>, get: bool) -> String {
    let masks = masks.clone().unwrap_or_default();
    match serde_json::from_str::<Value>(json) {
        Ok(object) if get && object.is_object() => get_masked(&object, &masks).to_string(),
        Ok(mut list) if !get => {
            let Some(Value::Array(items)) = list.get_mut("items") else {
                return json.to_string();
            };
            for item in items.iter_mut() {
                *item = masked(item, &masks);
            }
            list.to_string()
        }
        _ => json.to_string(),
    }
}

#[test]
fn the_fake_host_masks_as_the_golden_vectors_say() {
    let vectors: Value =
        serde_json::from_str(include_str!("../test_data/field-masks/vectors.json")).unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    for case in cases {
        let masks: Option<BTreeSet<String>> =
            serde_json::from_value(case["masks"].clone()).unwrap();
        let object = case["object"].to_string();
        let got: Value = if case["call"] == "list" {
            let list = json!({"kind": "List", "items": [case["object"]]}).to_string();
            let answer: Value = serde_json::from_str(&masked_answer(&list, &masks, false)).unwrap();
            answer["items"][0].clone()
        } else {
            serde_json::from_str(&masked_answer(&object, &masks, true)).unwrap()
        };
        assert_eq!(got, case["expected"], "{}", case["name"]);
    }
}

type Key = (&'static str, String, String, String);

/// Answers host calls from a table and records every call; a call with no answer fails with a
/// text that names it, so a test that expected other calls fails loudly.
pub struct FakeHost {
    answers: BTreeMap<Key, Result<String, String>>,
    /// The installed kinds and their CRDs' versions (name, served): the answer to the CRD list.
    installed: BTreeMap<(String, String, String), Vec<(String, bool)>>,
    /// Every call, with the field masks it sent.
    calls: RefCell<Vec<(String, Option<BTreeSet<String>>)>>,
}

impl Default for FakeHost {
    fn default() -> Self {
        Self::serving(&["v1beta2", "v1beta1"])
    }
}

impl FakeHost {
    /// The usual kinds, served at both versions (Cluster API 1.11 and newer).
    pub fn new() -> Self {
        Self::default()
    }

    /// The usual kinds, served at `versions` only.
    pub fn serving(versions: &[&str]) -> Self {
        let mut host = FakeHost {
            answers: BTreeMap::new(),
            installed: BTreeMap::new(),
            calls: RefCell::new(vec![]),
        };
        for kind in USUAL {
            host = host.install(kind, versions);
        }
        host
    }

    /// A release that serves only v1beta1 (Cluster API before 1.11).
    pub fn v1beta1_only() -> Self {
        Self::serving(&["v1beta1"])
    }

    /// Installs `kind` (a catalogue kind) with a CRD serving `versions`.
    pub fn install(self, kind: &str, versions: &[&str]) -> Self {
        let r = resource_named(kind);
        let versions: Vec<(&str, bool)> = versions.iter().map(|v| (*v, true)).collect();
        self.install_crd(r.group, r.kind, r.plural, &versions)
    }

    /// Installs any CRD: its group, kind, plural and versions (name, served).
    pub fn install_crd(
        mut self,
        group: &str,
        kind: &str,
        plural: &str,
        versions: &[(&str, bool)],
    ) -> Self {
        self.installed.insert(
            (group.into(), kind.into(), plural.into()),
            versions.iter().map(|(v, s)| (v.to_string(), *s)).collect(),
        );
        self
    }

    /// Removes the CRD of `kind`.
    pub fn uninstall(mut self, kind: &str) -> Self {
        let r = resource_named(kind);
        self.installed
            .remove(&(r.group.into(), r.kind.into(), r.plural.into()));
        self
    }

    fn with(mut self, key: Key, answer: Result<String, String>) -> Self {
        self.answers.insert(key, answer);
        self
    }

    pub fn answer_list(self, api_version: &str, kind: &str, json: &str) -> Self {
        self.with(
            ("list", api_version.into(), kind.into(), String::new()),
            Ok(json.into()),
        )
    }

    /// Answers the list of `kind` across namespaces (`list_all_resources`).
    pub fn answer_list_all(self, api_version: &str, kind: &str, json: &str) -> Self {
        self.with(
            ("list-all", api_version.into(), kind.into(), String::new()),
            Ok(json.into()),
        )
    }

    pub fn fail_list(self, api_version: &str, kind: &str, error: &str) -> Self {
        self.with(
            ("list", api_version.into(), kind.into(), String::new()),
            Err(error.into()),
        )
    }

    /// Answers the CRD list with `answer` instead of the installed kinds.
    pub fn answer_crds(self, answer: Result<&str, &str>) -> Self {
        let key = (
            "list-all",
            CRD.api_version("v1"),
            CRD.kind.into(),
            String::new(),
        );
        self.with(key, answer.map(str::to_string).map_err(str::to_string))
    }

    pub fn answer_get(self, api_version: &str, kind: &str, name: &str, json: &str) -> Self {
        self.with(
            ("get", api_version.into(), kind.into(), name.into()),
            Ok(json.into()),
        )
    }

    pub fn fail_get(self, api_version: &str, kind: &str, name: &str, error: &str) -> Self {
        self.with(
            ("get", api_version.into(), kind.into(), name.into()),
            Err(error.into()),
        )
    }

    /// Answers `can_i` for `plural` of `group` (the SubjectAccessReview status, or an error).
    pub fn answer_can_i(self, group: &str, plural: &str, answer: Result<&str, &str>) -> Self {
        self.with(
            (
                "can-i",
                format!("{group}/{plural}"),
                String::new(),
                String::new(),
            ),
            answer.map(str::to_string).map_err(str::to_string),
        )
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().iter().map(|(c, _)| c.clone()).collect()
    }

    /// The field masks each call sent, in order.
    pub fn masks(&self) -> Vec<Option<BTreeSet<String>>> {
        self.calls.borrow().iter().map(|(_, m)| m.clone()).collect()
    }

    /// The field masks call `i` sent, sorted; none when it sent none.
    pub fn sent_masks(&self, i: usize) -> Vec<String> {
        self.masks()
            .get(i)
            .cloned()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .collect()
    }

    fn crd_list(&self) -> String {
        let items: Vec<Value> = self
            .installed
            .iter()
            .map(|((group, kind, plural), versions)| {
                let versions: Vec<(&str, bool)> =
                    versions.iter().map(|(v, s)| (v.as_str(), *s)).collect();
                crd_object(group, kind, plural, &versions)
            })
            .collect();
        list_of(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &items,
        )
    }

    fn answer(
        &self,
        key: Key,
        call: String,
        masks: &Option<BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        self.calls.borrow_mut().push((call.clone(), masks.clone()));
        // The host holds one namespace: a list across namespaces answers what its list answers.
        let namespaced = ("list", key.1.clone(), key.2.clone(), key.3.clone());
        let key = match key.0 {
            "list-all"
                if !self.answers.contains_key(&key) && self.answers.contains_key(&namespaced) =>
            {
                namespaced
            }
            _ => key,
        };
        match self.answers.get(&key) {
            Some(Ok(json)) => Ok(masked_answer(json, masks, key.0 == "get").into_bytes()),
            Some(Err(error)) => Err(error.clone()),
            None if key.0 == "list-all" && key.2 == CRD.kind => {
                Ok(masked_answer(&self.crd_list(), masks, false).into_bytes())
            }
            None => Err(format!("FakeHost has no answer for: {call}")),
        }
    }
}

impl Host for FakeHost {
    /// Allowed unless an answer is set for the group and plural (`answer_can_i`).
    fn can_i(&self, r: &CanIRequest) -> Result<Vec<u8>, String> {
        let a = &r.subject_access_review.resource_attributes;
        let target = format!("{}/{}", a.group.as_deref().unwrap_or_default(), a.resource);
        let call = format!(
            "can-i {} {target} {} as {}",
            a.verb,
            a.namespace.as_deref().unwrap_or("-"),
            r.subject_access_review.user
        );
        let key = ("can-i", target, String::new(), String::new());
        self.calls.borrow_mut().push((call, None));
        match self.answers.get(&key) {
            Some(Ok(json)) => Ok(json.clone().into_bytes()),
            Some(Err(error)) => Err(error.clone()),
            None => Ok(br#"{"allowed":true}"#.to_vec()),
        }
    }

    fn list_resources_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        assert!(r.label_selector.is_none() && r.field_selector.is_none());
        let call = format!("list {} {} {}", r.api_version, r.kind, r.namespace);
        self.answer(
            ("list", r.api_version.clone(), r.kind.clone(), String::new()),
            call,
            &r.field_masks,
        )
    }

    fn list_all_resources(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        assert!(r.label_selector.is_none() && r.field_selector.is_none());
        let call = format!("list-all {} {}", r.api_version, r.kind);
        self.answer(
            (
                "list-all",
                r.api_version.clone(),
                r.kind.clone(),
                String::new(),
            ),
            call,
            &r.field_masks,
        )
    }

    fn get_resource(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let call = format!(
            "get {} {} {}/{} cache={}",
            r.api_version,
            r.kind,
            r.namespace.as_deref().unwrap_or("-"),
            r.name,
            !r.disable_cache,
        );
        self.answer(
            ("get", r.api_version.clone(), r.kind.clone(), r.name.clone()),
            call,
            &r.field_masks,
        )
    }
}
