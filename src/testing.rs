//! Test helpers: fixtures from `test_data/` and an in-memory [`Cluster`].

use crate::catalogue::{ReferrerKind, REFERRERS};
use crate::cluster::Cluster;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListResourcesByNamespaceRequest,
};
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// Reads `test_data/objects/<path>` into `T`.
pub fn fixture<T: DeserializeOwned>(path: &str) -> T {
    let file = format!("{}/test_data/objects/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The catalogue entry of a referrer kind, by kind name.
pub fn referrer_kind(name: &str) -> &'static ReferrerKind {
    REFERRERS
        .iter()
        .find(|k| k.kind() == name)
        .unwrap_or_else(|| panic!("{name} is not in the catalogue"))
}

/// Wraps objects into a list answer as the host sends it.
pub fn list_of(api_version: &str, kind: &str, items: &[serde_json::Value]) -> String {
    serde_json::json!({"apiVersion": api_version, "kind": format!("{kind}List"), "items": items})
        .to_string()
}

type Key = (&'static str, String, String, String);

/// Answers host calls from a table and records every call; a call with no answer fails with a
/// text that names it, so a test that expected other calls fails loudly.
#[derive(Default)]
pub struct FakeCluster {
    answers: BTreeMap<Key, Result<String, String>>,
    /// A version the simulated release does not serve: calls at it with no answer of their own
    /// get the host's not-served text.
    unserved: Option<&'static str>,
    calls: RefCell<Vec<String>>,
}

fn masks(masks: &Option<BTreeSet<String>>) -> String {
    let masks: Vec<&str> = masks.iter().flatten().map(String::as_str).collect();
    format!("[{}]", masks.join(", "))
}

impl FakeCluster {
    pub fn new() -> Self {
        Self::default()
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

    pub fn fail_list(self, api_version: &str, kind: &str, error: &str) -> Self {
        self.with(
            ("list", api_version.into(), kind.into(), String::new()),
            Err(error.into()),
        )
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

    /// A release that serves only v1beta1 (Cluster API before 1.11).
    pub fn v1beta1_only() -> Self {
        FakeCluster {
            unserved: Some("v1beta2"),
            ..Self::default()
        }
    }

    /// A release that serves only v1beta2 (Cluster API after v1beta1 is dropped).
    pub fn v1beta2_only() -> Self {
        FakeCluster {
            unserved: Some("v1beta1"),
            ..Self::default()
        }
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    fn answer(&self, key: Key, call: String) -> Result<Vec<u8>, String> {
        self.calls.borrow_mut().push(call.clone());
        match self.answers.get(&key) {
            Some(Ok(json)) => Ok(json.clone().into_bytes()),
            Some(Err(error)) => Err(error.clone()),
            None => match self.unserved {
                Some(version) if key.1.ends_with(&format!("/{version}")) => Err(format!(
                    "Callback evaluation failure: Cannot find resource {}/{}",
                    key.1, key.2
                )),
                _ => Err(format!("FakeCluster has no answer for: {call}")),
            },
        }
    }
}

impl Cluster for FakeCluster {
    fn list_resources_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        assert!(r.label_selector.is_none() && r.field_selector.is_none());
        let call = format!(
            "list {} {} {} masks={}",
            r.api_version,
            r.kind,
            r.namespace,
            masks(&r.field_masks)
        );
        self.answer(
            ("list", r.api_version.clone(), r.kind.clone(), String::new()),
            call,
        )
    }

    fn get_resource(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let call = format!(
            "get {} {} {}/{} cache={} masks={}",
            r.api_version,
            r.kind,
            r.namespace.as_deref().unwrap_or("-"),
            r.name,
            !r.disable_cache,
            masks(&r.field_masks)
        );
        self.answer(
            ("get", r.api_version.clone(), r.kind.clone(), r.name.clone()),
            call,
        )
    }
}
