//! Host I/O: the only module that talks to the Kubewarden host.
//!
//! [`Cluster`] is deliberately raw (the SDK's request types in, JSON bytes or the host's error
//! text out) so that tests drive the very requests the policy server and `kwctl` replay see,
//! field masks included, through an in-memory fake.

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListResourcesByNamespaceRequest,
};
use kubewarden_policy_sdk::wapc_guest;
use serde::de::DeserializeOwned;
use std::collections::BTreeSet;
use std::fmt;

use crate::capi::List;

pub trait Cluster {
    fn list_resources_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String>;
    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String>;
}

/// The Kubewarden host, reached through waPC.
pub struct Host;

fn call(operation: &str, request: &impl serde::Serialize) -> Result<Vec<u8>, String> {
    let payload = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| {
        // waPC wraps the host's text as "Host error: <text>"; keep the host's own words.
        let text = e.to_string();
        match text.strip_prefix("Host error: ") {
            Some(host_text) => host_text.to_string(),
            None => text,
        }
    })
}

impl Cluster for Host {
    fn list_resources_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        call("list_resources_by_namespace", request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        call("get_resource", request)
    }
}

/// How a failed host call failed, read from the host's error text. The host wraps failures as
/// `Callback evaluation failure: <Debug of the error>`, so the texts are matched anywhere in the
/// string, never at its start; the access check alone arrives bare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The kind is missing from a served group/version (`Cannot find resource <gv>/<Kind>`), or
    /// the group/version is not served at all (`error finding resource <gv> / <Kind>: ...404...`).
    NotServed,
    /// `get_resource` found no such object.
    NotFound,
    /// The kind is not in the policy's `contextAwareResources`.
    AccessDenied,
    /// Anything else: RBAC, timeouts, an answer that cannot be read.
    Other,
}

pub fn classify(text: &str) -> Failure {
    if text.contains("has not been granted access to Kubernetes") {
        Failure::AccessDenied
    } else if text.contains("Cannot find resource ")
        || (text.contains("error finding resource ")
            && (text.contains("404") || text.contains("NotFound")))
    {
        Failure::NotServed
    } else if text.contains("Cannot find ") && text.contains(" named '") {
        Failure::NotFound
    } else {
        Failure::Other
    }
}

/// Keeps the host's text short and stable: its first line (a cause chain or a backtrace may
/// follow), at most 300 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    let mut short: String = line.chars().take(300).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

/// A lookup that did not give an answer the policy can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    /// What was looked up, e.g. `listing MachineSet objects (cluster.x-k8s.io/v1beta1) in
    /// namespace edge-sites`.
    pub lookup: String,
    pub api_version: String,
    pub kind: String,
    pub failure: Failure,
    pub detail: String,
}

impl LookupError {
    pub fn of_list(
        api_version: &str,
        kind: &str,
        namespace: &str,
        failure: Failure,
        detail: String,
    ) -> Self {
        LookupError {
            lookup: format!("listing {kind} objects ({api_version}) in namespace {namespace}"),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            failure,
            detail,
        }
    }

    pub fn of_get(
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        failure: Failure,
        detail: String,
    ) -> Self {
        LookupError {
            lookup: format!("getting {kind} {namespace}/{name} ({api_version})"),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            failure,
            detail,
        }
    }
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.lookup, self.detail)
    }
}

/// What a list gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Listed<T> {
    Items(Vec<T>),
    /// The API server does not serve this kind at this version.
    NotServed,
}

fn masks(fields: &[&str]) -> Option<BTreeSet<String>> {
    Some(fields.iter().map(|f| f.to_string()).collect())
}

/// Lists `kind` in `namespace`, keeping only metadata and the `fields` named (field masks), with
/// no selectors: each distinct selector costs a permanent watch in the policy server.
pub fn list<T: DeserializeOwned>(
    cluster: &dyn Cluster,
    api_version: &str,
    kind: &str,
    namespace: &str,
    fields: &[&str],
) -> Result<Listed<T>, LookupError> {
    let request = ListResourcesByNamespaceRequest {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: masks(fields),
    };
    let error =
        |failure, detail| LookupError::of_list(api_version, kind, namespace, failure, detail);
    match cluster.list_resources_by_namespace(&request) {
        Ok(bytes) => serde_json::from_slice::<List<T>>(&bytes)
            .map(|list| Listed::Items(list.items))
            .map_err(|e| error(Failure::Other, format!("the answer cannot be read: {e}"))),
        Err(text) => match classify(&text) {
            Failure::NotServed => Ok(Listed::NotServed),
            failure => Err(error(failure, first_line(&text))),
        },
    }
}

/// Gets one object; `Ok(None)` when it does not exist.
pub fn get<T: DeserializeOwned>(
    cluster: &dyn Cluster,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    disable_cache: bool,
    fields: &[&str],
) -> Result<Option<T>, LookupError> {
    let request = GetResourceRequest {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: Some(namespace.to_string()),
        disable_cache,
        field_masks: masks(fields),
    };
    let error =
        |failure, detail| LookupError::of_get(api_version, kind, namespace, name, failure, detail);
    match cluster.get_resource(&request) {
        Ok(bytes) => serde_json::from_slice::<T>(&bytes)
            .map(Some)
            .map_err(|e| error(Failure::Other, format!("the answer cannot be read: {e}"))),
        Err(text) => match classify(&text) {
            Failure::NotFound => Ok(None),
            failure => Err(error(failure, first_line(&text))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::MetadataOnly;
    use crate::testing::FakeCluster;
    use rstest::rstest;

    #[rstest]
    // Texts exactly as the policy server / kwctl hand them to the guest.
    #[case::kind_missing_from_served_group("Callback evaluation failure: Cannot find resource controlplane.cluster.x-k8s.io/v1beta1/RKE2ControlPlane", Failure::NotServed)]
    // kube-rs turns the API server's plain-text "404 page not found" into a Status with code 404.
    #[case::group_version_not_served("Callback evaluation failure: error finding resource controlplane.cluster.x-k8s.io/v1beta2 / RKE2ControlPlane: ApiError: 404 page not found\n: Failed to parse error data (Status { status: Some(Failure), code: 404, message: \"404 page not found\\n\", reason: \"Failed to parse error data\", details: None })", Failure::NotServed)]
    #[case::discovery_timeout("Callback evaluation failure: error finding resource cluster.x-k8s.io/v1beta1 / MachineSet: HyperError: operation timed out", Failure::Other)]
    #[case::object_missing("Callback evaluation failure: Cannot find cluster.x-k8s.io/v1beta1/Cluster named 'edge-a' inside of namespace 'Some(\"edge-sites\")'", Failure::NotFound)]
    #[case::not_granted("Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineSet resources. The violation has been reported.", Failure::AccessDenied)]
    #[case::rbac("Callback evaluation failure: ApiError: machinesets.cluster.x-k8s.io is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot list resource \"machinesets\" (ErrorResponse { code: 403 })", Failure::Other)]
    #[case::replay_mismatch("Callback evaluation failure: Replay error: unexpected request. Was expecting X, got Y instead", Failure::Other)]
    #[case::with_backtrace(
        "Callback evaluation failure: Cannot find resource a/v1/K\n\nStack backtrace:\n   0: ...",
        Failure::NotServed
    )]
    fn host_error_texts(#[case] text: &str, #[case] failure: Failure) {
        assert_eq!(classify(text), failure);
    }

    #[test]
    fn list_sends_masks_and_no_selectors() {
        let cluster = FakeCluster::new().answer_list(
            "cluster.x-k8s.io/v1beta1",
            "MachineSet",
            r#"{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachineSetList","items":[{"metadata":{"name":"a"}}]}"#,
        );
        let listed: Listed<MetadataOnly> = list(
            &cluster,
            "cluster.x-k8s.io/v1beta1",
            "MachineSet",
            "ns",
            &["spec.b", "spec.a"],
        )
        .unwrap();
        assert!(matches!(listed, Listed::Items(items) if items[0].metadata.name == "a"));
        assert_eq!(
            cluster.calls(),
            vec!["list cluster.x-k8s.io/v1beta1 MachineSet ns masks=[spec.a, spec.b]"]
        );
    }

    #[test]
    fn list_of_unserved_kind_is_not_an_error() {
        let cluster = FakeCluster::new().fail_list(
            "controlplane.cluster.x-k8s.io/v1beta1",
            "RKE2ControlPlane",
            "Callback evaluation failure: Cannot find resource controlplane.cluster.x-k8s.io/v1beta1/RKE2ControlPlane",
        );
        let listed: Listed<MetadataOnly> = list(
            &cluster,
            "controlplane.cluster.x-k8s.io/v1beta1",
            "RKE2ControlPlane",
            "ns",
            &[],
        )
        .unwrap();
        assert_eq!(listed, Listed::NotServed);
    }

    #[test]
    fn unreadable_list_is_an_error() {
        let cluster =
            FakeCluster::new().answer_list("v", "K", r#"{"items":[{"metadata":{"name":1}}]}"#);
        let err = list::<MetadataOnly>(&cluster, "v", "K", "ns", &[]).unwrap_err();
        assert_eq!(err.failure, Failure::Other);
        assert!(
            err.to_string()
                .starts_with("listing K objects (v) in namespace ns failed: the answer cannot be read: invalid type: integer `1`"),
            "{err}"
        );
    }

    #[test]
    fn list_with_a_null_spec_is_an_error_not_a_silent_accept() {
        let cluster = FakeCluster::new().answer_list(
            "v",
            "MachineSet",
            r#"{"items":[{"metadata":{"name":"ms"},"spec":null}]}"#,
        );
        let err = list::<crate::capi::MachineSetLike>(&cluster, "v", "MachineSet", "ns", &[])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "listing MachineSet objects (v) in namespace ns failed: the answer cannot be read: invalid type: null, expected struct MachineSetSpec at line 1 column 47"
        );
    }

    #[test]
    fn failed_list_keeps_the_first_line_of_the_host_text() {
        let cluster = FakeCluster::new().fail_list(
            "v",
            "K",
            "Callback evaluation failure: boom\n\nCaused by:\n  deeper",
        );
        let err = list::<MetadataOnly>(&cluster, "v", "K", "ns", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "listing K objects (v) in namespace ns failed: Callback evaluation failure: boom"
        );
    }

    #[test]
    fn get_of_missing_object_is_none() {
        let cluster = FakeCluster::new().fail_get(
            "cluster.x-k8s.io/v1beta1",
            "Cluster",
            "edge-a",
            "Callback evaluation failure: Cannot find cluster.x-k8s.io/v1beta1/Cluster named 'edge-a' inside of namespace 'Some(\"ns\")'",
        );
        let got: Option<MetadataOnly> = get(
            &cluster,
            "cluster.x-k8s.io/v1beta1",
            "Cluster",
            "ns",
            "edge-a",
            false,
            &[],
        )
        .unwrap();
        assert_eq!(got, None);
        assert_eq!(
            cluster.calls(),
            vec!["get cluster.x-k8s.io/v1beta1 Cluster ns/edge-a cache=true masks=[]"]
        );
    }

    #[test]
    fn get_that_is_denied_is_an_error() {
        let cluster = FakeCluster::new().fail_get(
            "v",
            "K",
            "n",
            "Policy has not been granted access to Kubernetes v/K resources. The violation has been reported.",
        );
        let err = get::<MetadataOnly>(&cluster, "v", "K", "ns", "n", true, &[]).unwrap_err();
        assert_eq!(err.failure, Failure::AccessDenied);
        assert_eq!(err.to_string(), "getting K ns/n (v) failed: Policy has not been granted access to Kubernetes v/K resources. The violation has been reported.");
    }
}
