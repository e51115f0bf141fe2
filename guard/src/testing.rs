//! Test helpers shared by the guard's tests and the policy's: fixtures from the repository's
//! `test_data/`, the masks the policy server applies, and [`Memory`], the in-memory answer to the
//! [`Lookups`] port. Built for tests only (`cfg(test)` or the `testing` feature).

use crate::capi::{Object, Template, TemplateRef};
use crate::catalogue::{ReferrerKind, Resource, TemplateClass, resources_read};
use crate::decision::{Keeper, Referrer};
use crate::error::{Failure, Lookup, LookupError};
use crate::lookups::{ClusterState, Lookups, Scanned};
use crate::references::Candidate;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The kinds a Metal3 management cluster with kubeadm has installed: Cluster API, the kubeadm
/// control plane and Metal3 (the fake host's and the e2e.bats cases' cluster).
pub const USUAL: [&str; 8] = [
    "MachineDeployment",
    "MachineSet",
    "KubeadmControlPlane",
    "ClusterClass",
    "MachineHealthCheck",
    "Cluster",
    "Metal3Machine",
    "Metal3MachineTemplate",
];

/// Reads `test_data/objects/<path>` into `T`.
pub fn fixture<T: DeserializeOwned>(path: &str) -> T {
    let file = format!("{}/../test_data/objects/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The catalogue entry of a referrer kind, by kind name.
pub fn referrer_kind(name: &str) -> &'static ReferrerKind {
    crate::catalogue::referrer_named(name)
        .unwrap_or_else(|| panic!("{name} is not in the catalogue"))
}

/// A `nodeReuse: true` Metal3MachineTemplate `name` in `namespace`, owned by no Cluster.
pub fn metal3_template(name: &str, namespace: &str) -> Template {
    Template {
        reference: TemplateRef {
            group: "infrastructure.cluster.x-k8s.io".into(),
            kind: "Metal3MachineTemplate".into(),
            name: name.into(),
        },
        class: TemplateClass::Machine,
        namespace: namespace.into(),
        node_reuse: true,
        moving: false,
        cluster_owners: vec![],
    }
}

/// A referrer of the catalogue kind `kind`, in the template's namespace, naming it at `field`.
pub fn known_referrer(kind: &str, name: &str, field: &str) -> Referrer {
    Referrer {
        kind: Keeper::Known(referrer_kind(kind)),
        name: name.into(),
        namespace: None,
        fields: vec![field.to_string().into()],
        cluster: None,
    }
}

/// An object as the policy server's reflector keeps it for a list (kubewarden-controller
/// v1.36.0-beta.1, crates/policy-evaluator/src/callback_handler/kubernetes/reflector.rs,
/// `modify_object`): `managedFields` emptied, the `last-applied-configuration` annotation dropped,
/// the rest as for a get ([`get_masked`]). test_data/field-masks/vectors.json holds the cases,
/// checked live.
pub fn masked(object: &Value, masks: &BTreeSet<String>) -> Value {
    let mut out = get_masked(object, masks);
    if let Some(Value::Object(meta)) = out.get_mut("metadata") {
        meta.insert("managedFields".into(), json!([]));
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Value::Object(annotations) = annotations {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    out
}

/// An object as the policy server answers a get, cached or not (callback_handler.rs,
/// `KubernetesGetResource`): everything but `apiVersion`, `kind` and `metadata` pruned to the
/// masks (none: kept whole), a mask keeping its subtree, lists transparent (field_mask.rs);
/// metadata as the API server sent it.
pub fn get_masked(object: &Value, masks: &BTreeSet<String>) -> Value {
    fn prune(value: &mut Value, tree: &Map<String, Value>) {
        if tree.is_empty() {
            return;
        }
        match value {
            Value::Object(fields) => fields.retain(|k, v| match tree.get(k) {
                Some(Value::Object(sub)) => {
                    prune(v, sub);
                    true
                }
                _ => false,
            }),
            Value::Array(items) => items.iter_mut().for_each(|v| prune(v, tree)),
            _ => {}
        }
    }
    let mut tree = Map::new();
    for mask in masks {
        let mut node = &mut tree;
        for part in mask.split('.') {
            let entry = node
                .entry(part)
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(next) = entry else {
                unreachable!("mask tree nodes are objects")
            };
            node = next;
        }
    }
    if !tree.is_empty() {
        for keep in ["apiVersion", "kind", "metadata"] {
            tree.insert(keep.into(), Value::Object(Map::new()));
        }
    }
    let mut out = object.clone();
    prune(&mut out, &tree);
    out
}

pub fn resource_named(kind: &str) -> &'static Resource {
    resources_read()
        .find(|r| r.kind == kind)
        .unwrap_or_else(|| panic!("{kind} is not in the catalogue"))
}

/// Answers the [`Lookups`] trait from memory and records what was asked, in order: the fake for
/// the pure decision and mutation. A kind with no list set is installed and empty.
#[derive(Default)]
pub struct Memory {
    lists: BTreeMap<&'static str, Result<Vec<Candidate>, Failure>>,
    objects: BTreeMap<(&'static str, String), Result<Candidate, Failure>>,
    templates: BTreeMap<String, Result<Value, Failure>>,
    clusters: BTreeMap<String, Result<ClusterState, Failure>>,
    scans: Option<Result<Vec<Scanned>, Failure>>,
    pub asked: Vec<String>,
    /// The classes a scan was asked for, apart from `asked`.
    pub scanned_for: Vec<TemplateClass>,
}

/// A lookup error of `kind` (a catalogue kind) failing with `failure`.
pub fn lookup_error(kind: &str, failure: Failure) -> LookupError {
    lookup_error_at("x/v1beta2", kind, failure)
}

/// A failed list of `kind` at `api_version` in namespace `ns`, the host saying "boom".
pub fn lookup_error_at(api_version: &str, kind: &str, failure: Failure) -> LookupError {
    LookupError {
        lookup: Lookup::List {
            api_version: api_version.into(),
            resource: resource_named(kind),
            namespace: "ns".into(),
        },
        failure,
        detail: "boom".into(),
    }
}

impl Memory {
    pub fn with(mut self, kind: &'static str, candidates: Vec<Candidate>) -> Self {
        self.lists.insert(kind, Ok(candidates));
        self
    }

    pub fn failing(mut self, kind: &'static str, failure: Failure) -> Self {
        self.lists.insert(kind, Err(failure));
        self
    }

    pub fn cluster_is(mut self, name: &str, state: Result<ClusterState, Failure>) -> Self {
        self.clusters.insert(name.into(), state);
        self
    }

    pub fn object(mut self, kind: &'static str, candidate: Result<Candidate, Failure>) -> Self {
        let name = candidate
            .as_ref()
            .map(|c| c.name.clone())
            .unwrap_or_default();
        self.objects.insert((kind, name), candidate);
        self
    }

    pub fn template(mut self, name: &str, template: Result<Value, Failure>) -> Self {
        self.templates.insert(name.into(), template);
        self
    }

    /// What every scan answers: objects (JSON) by kind, or a failure.
    pub fn scanning(mut self, scans: Result<Vec<(&str, Vec<Value>)>, Failure>) -> Self {
        self.scans = Some(scans.map(|kinds| {
            kinds
                .into_iter()
                .map(|(kind, objects)| Scanned {
                    kind: kind.to_string(),
                    known: crate::catalogue::REFERRERS
                        .iter()
                        .find(|r| r.kind() == kind),
                    objects: objects
                        .into_iter()
                        .map(|o| serde_json::from_value(o).expect("an object"))
                        .collect(),
                })
                .collect()
        }));
        self
    }
}

impl Lookups for Memory {
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError> {
        self.asked.push(kind.kind().to_string());
        match self.lists.get(kind.kind()) {
            Some(Ok(list)) => Ok(list.clone()),
            Some(Err(failure)) => Err(lookup_error(kind.kind(), *failure)),
            None => Ok(vec![]),
        }
    }

    fn scanned(
        &mut self,
        class: TemplateClass,
        _node_reuse: bool,
    ) -> Result<Vec<Scanned>, LookupError> {
        self.scanned_for.push(class);
        match &self.scans {
            None => Ok(vec![]),
            Some(Ok(scans)) => Ok(scans.clone()),
            Some(Err(failure)) => Err(lookup_error("K3sControlPlane", *failure)),
        }
    }

    fn referrer(
        &mut self,
        kind: &'static ReferrerKind,
        name: &str,
    ) -> Result<Option<Candidate>, LookupError> {
        self.asked.push(format!("{} {name}", kind.kind()));
        let key = self
            .objects
            .keys()
            .find(|(k, n)| *k == kind.kind() && n == name)
            .cloned();
        match key.and_then(|key| self.objects.get(&key)) {
            Some(Ok(found)) => Ok(Some(found.clone())),
            Some(Err(failure)) => Err(lookup_error(kind.kind(), *failure)),
            None => Ok(None),
        }
    }

    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError> {
        self.asked.push(format!("Cluster {name}"));
        match self.clusters.get(name) {
            Some(Ok(state)) => Ok(*state),
            Some(Err(failure)) => Err(lookup_error("Cluster", *failure)),
            None => Ok(ClusterState::Gone),
        }
    }

    fn metal3_machine_template(&mut self, name: &str) -> Result<Option<Object>, LookupError> {
        self.asked.push(format!("Metal3MachineTemplate {name}"));
        match self.templates.get(name) {
            Some(Ok(found)) => Ok(Some(
                serde_json::from_value(found.clone()).expect("a template object"),
            )),
            Some(Err(failure)) => Err(lookup_error("Metal3MachineTemplate", *failure)),
            None => Ok(None),
        }
    }
}
