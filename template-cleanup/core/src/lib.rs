//! The decisions of `template-cleanup`, over plain data: no Kubernetes client, no async runtime,
//! so that the test host's simulation runs the same code as the shipped binary.
//!
//! - [`preflight`]: the pre-flight over the guard's ClusterAdmissionPolicy and its live webhook, and
//!   the kinds its rules make template-cleanup collect;
//! - [`probe`]: the live probe, a dry-run DELETE the guard must refuse;
//! - [`delete_decision`]: the guard's own decision over what the pass listed, which keeps a
//!   template from its DELETE and picks the probe's target;
//! - [`sources`]: the desired-state sources, one row each (group, kind, reader, RBAC);
//! - [`declared`]: what the deploy tools still declare (Flux Kustomizations, Argo CD
//!   Applications);
//! - [`helm`]: Helm's release storage, read through its labels, bounded;
//! - [`select`]: which templates are candidates for a DELETE;
//! - [`answer`]: what the API server's answer to that DELETE means.
//!
//! The binary (`template-cleanup/src`) reads the cluster, calls these functions, and sends the
//! DELETEs.

pub mod answer;
pub mod declared;
pub mod delete_decision;
pub mod helm;
pub mod preflight;
pub mod probe;
pub mod select;
pub mod sources;

use serde::Serialize;

/// The label deploy tools put on a template they retire (docs/deploy-tools.md).
pub const CLEANUP_LABEL: &str = "capi-template-guard.kubewarden.io/cleanup";
/// The value [`CLEANUP_LABEL`] must have.
pub const CLEANUP_VALUE: &str = "true";
/// The label of template copies made by the Cluster API topology controller, which deletes an old
/// control-plane template copy once, best effort, and never retries
/// (cluster-api `internal/controllers/topology/cluster/reconcile_state.go:425`@v1.13.0, moved to
/// `core/reconcilers/topology/cluster/reconcile_state.go:423`@v1.14.0).
pub const TOPOLOGY_OWNED_LABEL: &str = "topology.cluster.x-k8s.io/owned";

/// A namespaced kind as the API serves it: the version is the one template-cleanup lists and
/// deletes through.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ServedKind {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
}

impl ServedKind {
    /// `plural.group`, the name RBAC and kubectl use.
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

/// `group/version`, or `version` for the core group.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// An object as a deploy tool names it: by group and kind, never by version (a tool that
/// declares a template at v1beta1 declares the same object the API serves at v1beta2).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct DeclaredObject {
    pub group: String,
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for DeclaredObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        };
        write!(f, "{kind} {}/{}", self.namespace, self.name)
    }
}
