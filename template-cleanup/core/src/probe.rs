//! The live probe: before the first DELETE, a server-side dry-run DELETE (`dryRun=All`) of a
//! template the guard is sure to keep must come back as the guard's refusal. The policy's status
//! is what Kubewarden wants; only an answer proves that the pods the webhook calls run the policy
//! in protect mode with rules that cover the template (a validating webhook with
//! `sideEffects: None` is called on dry-run requests, and the guard answers them as real ones).
//!
//! A template the guard is sure to keep: one a MachineDeployment that is not being deleted names
//! in `spec.template.spec.infrastructureRef` or `spec.template.spec.bootstrap.configRef` (row 1
//! of docs/design.md's decision table; not a MachineSet, which the guard lets go once scaled to
//! zero), that is not itself being deleted, carries no `clusterctl.cluster.x-k8s.io/delete-for-move`
//! annotation (row 5: accepted before any lookup), and whose owning Clusters are all live (row 6:
//! the referrers of Clusters being deleted no longer count).

use serde_json::Value;

use crate::answer::{classify, Refused, TemplateOutcome};
use crate::group_of;

/// A template a MachineDeployment names: group, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Named {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// The templates a MachineDeployment names, in the v1beta1 shape (`apiVersion`, `kind`, `name`)
/// or the v1beta2 one (`apiGroup`, `kind`, `name`), at the same paths in both (cluster-api
/// v1.14.0 `api/core/v1beta1/machine_types.go` and `api/core/v1beta2/machine_types.go`,
/// `MachineSpec`); none for one being deleted. A referrer and its templates share a namespace.
pub fn named_by_machine_deployment(md: &Value) -> Vec<Named> {
    if md
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Vec::new();
    }
    let namespace = md
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::new();
    for path in [
        "/spec/template/spec/infrastructureRef",
        "/spec/template/spec/bootstrap/configRef",
    ] {
        let Some(r) = md.pointer(path) else { continue };
        let field = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("");
        let group = if r.get("apiGroup").is_some() {
            field("apiGroup")
        } else {
            group_of(field("apiVersion"))
        };
        if field("kind").is_empty() || field("name").is_empty() || namespace.is_empty() {
            continue;
        }
        out.push(Named {
            group: group.to_string(),
            kind: field("kind").to_string(),
            namespace: namespace.to_string(),
            name: field("name").to_string(),
        });
    }
    out
}

/// The annotation `clusterctl move` writes before each delete, which the guard accepts at once.
const DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";

/// Why a template, as read, is no proof (`None`: it is one): being deleted, or marked for move.
pub fn not_a_proof(template: &Value) -> Option<&'static str> {
    if template
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Some("it is being deleted");
    }
    if template
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DELETE_FOR_MOVE))
        .is_some()
    {
        return Some("clusterctl move is deleting it");
    }
    None
}

/// The names of the Clusters (`cluster.x-k8s.io`) that own a template.
pub fn owning_clusters(template: &Value) -> Vec<String> {
    template
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Cluster")
                && o.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| group_of(v) == "cluster.x-k8s.io")
        })
        .filter_map(|o| o.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// What the answer to the probe's dry-run DELETE means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The guard refused: it judges. Its text.
    Judged(String),
    /// The template went or changed meanwhile: read it again, or try another.
    Moved,
    /// Anything else: the guard does not judge as its objects say. What came back.
    NotJudged(String),
}

/// Reads the answer to the probe's dry-run DELETE (`None`: 2xx, the DELETE would have gone
/// through).
pub fn judge(guard: &str, answer: Option<&Refused>) -> Probe {
    match classify(guard, answer) {
        TemplateOutcome::KeptByGuard(text) => Probe::Judged(text),
        TemplateOutcome::Gone | TemplateOutcome::Changed(_) => Probe::Moved,
        TemplateOutcome::Deleted | TemplateOutcome::DeletionStarted => Probe::NotJudged(
            "2xx: the DELETE would have gone through, so the pods that answer do not refuse it (monitor mode, an older configuration, or rules that miss it)".to_string(),
        ),
        TemplateOutcome::Failed(text) => Probe::NotJudged(text),
        TemplateOutcome::Left(_) | TemplateOutcome::NotTried => {
            Probe::NotJudged("no answer".to_string())
        }
    }
}
