//! Host I/O: the only module that talks to the Kubernetes capabilities of the Kubewarden host,
//! and how a failed call failed.
//!
//! [`Host`] is deliberately raw (the SDK's request types in, JSON bytes or the host's error text
//! out) so that tests drive the very requests the policy server and `kwctl` replay see, field
//! masks included, through an in-memory fake. The typed requests over it are in
//! [`crate::requests`].

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};

use guard::error::Failure;

pub trait Host {
    fn list_resources_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String>;

    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String>;

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String>;

    /// A SubjectAccessReview through the host (`can_i`); the answer is its status.
    fn can_i(&self, request: &CanIRequest) -> Result<Vec<u8>, String>;
}

/// The Kubewarden host, reached through waPC.
pub struct WapcHost;

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

impl Host for WapcHost {
    fn list_resources_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        call("list_resources_by_namespace", request)
    }

    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        call("list_resources_all", request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        call("get_resource", request)
    }

    fn can_i(&self, request: &CanIRequest) -> Result<Vec<u8>, String> {
        call("can_i", request)
    }
}

/// Writes an info event to the policy server's log, in the form the SDK's slog drain sends
/// (`kubewarden`/`tracing`/`log`, a JSON object with `level` and `message`). The drain itself
/// would add slog and its formatting machinery, 16 KB of a module that must stay within 300 KiB.
/// Logging is best effort: a host that refuses the event changes no answer.
/// Outside wasm (native tests) there is no host to log to, and the event is dropped.
pub fn log_info(message: &str) {
    let event = serde_json::json!({"level": "info", "message": message});
    if let Ok(payload) = serde_json::to_vec(&event) {
        #[cfg(target_arch = "wasm32")]
        let _ = wapc_guest::host_call("kubewarden", "tracing", "log", &payload);
        #[cfg(not(target_arch = "wasm32"))]
        drop(payload);
    }
}

/// How a failed host call failed, read from the host's error text. The host wraps failures as
/// `Callback evaluation failure: <Debug of the error>`, so the texts are matched anywhere in the
/// string, never at its start; the two access checks alone arrive bare. Which kinds and versions
/// exist is never read from these texts: the CRDs say it (`lookups.rs`).
///
/// Both denials begin "Policy has not been granted access to": the `contextAwareResources` one
/// goes on with "Kubernetes <apiVersion>/<Kind> resources", the host-capability one (Kubewarden
/// 1.35.0 and later) with "the '<namespace>/<operation>' host capability" (policy-evaluator
/// `crates/policy-evaluator/src/runtimes/callback.rs:44`@v1.36.0-beta.1, `host_capability_denied`
/// and the `kubernetes` arms of `host_callback`).
pub fn classify(text: &str) -> Failure {
    if text.contains("has not been granted access to the '") && text.contains("host capability") {
        Failure::CapabilityDenied
    } else if text.contains("has not been granted access to Kubernetes") {
        Failure::AccessDenied
    } else if text.contains("Cannot find ") && text.contains(" named '") {
        Failure::NotFound
    } else {
        Failure::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    // Texts exactly as the policy server / kwctl hand them to the guest.
    // Which kinds are served is read from the CRDs, never from these texts.
    #[case::kind_missing_from_served_group(
        "Callback evaluation failure: Cannot find resource controlplane.cluster.x-k8s.io/v1beta1/RKE2ControlPlane",
        Failure::Other
    )]
    #[case::group_version_not_served(
        "Callback evaluation failure: error finding resource controlplane.cluster.x-k8s.io/v1beta2 / RKE2ControlPlane: ApiError: 404 page not found\n: Failed to parse error data (Status { status: Some(Failure), code: 404, message: \"404 page not found\\n\", metadata: None, reason: \"Failed to parse error data\", details: None })",
        Failure::Other
    )]
    #[case::discovery_timeout(
        "Callback evaluation failure: error finding resource cluster.x-k8s.io/v1beta1 / MachineSet: HyperError: operation timed out",
        Failure::Other
    )]
    #[case::a_404_elsewhere_is_not_not_served(
        "Callback evaluation failure: ApiError: proxy answered 404 for machinesets",
        Failure::Other
    )]
    #[case::object_missing(
        "Callback evaluation failure: Cannot find cluster.x-k8s.io/v1beta1/Cluster named 'edge-a' inside of namespace 'Some(\"edge-sites\")'",
        Failure::NotFound
    )]
    #[case::not_granted(
        "Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineSet resources. The violation has been reported.",
        Failure::AccessDenied
    )]
    // Kubewarden 1.35.0 and later: policy-evaluator `crates/policy-evaluator/src/runtimes/
    // callback.rs:44`@v1.36.0-beta.1. It begins like the contextAwareResources denial and is
    // classified apart.
    #[case::capability_not_granted(
        "Policy has not been granted access to the 'kubernetes/list_resources_all' host capability. The violation has been reported.",
        Failure::CapabilityDenied
    )]
    #[case::capability_not_granted_on_get(
        "Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported.",
        Failure::CapabilityDenied
    )]
    // the anyhow Debug of a kube 3.1 `Error::Api` (kube-client 3.1.0 error.rs: "ApiError: {0} ({0:?})")
    #[case::rbac_on_get(
        "Callback evaluation failure: ApiError: clusters.cluster.x-k8s.io \"edge-a\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot get resource \"clusters\" in API group \"cluster.x-k8s.io\" in the namespace \"edge-sites\": Forbidden (Status { status: Some(Failure), code: 403, message: \"clusters.cluster.x-k8s.io \\\"edge-a\\\" is forbidden: User \\\"system:serviceaccount:kubewarden:policy-server-default\\\" cannot get resource \\\"clusters\\\" in API group \\\"cluster.x-k8s.io\\\" in the namespace \\\"edge-sites\\\"\", metadata: Some(ListMeta { continue_: None, remaining_item_count: None, resource_version: None, self_link: None }), reason: \"Forbidden\", details: Some(StatusDetails { name: \"edge-a\", group: \"cluster.x-k8s.io\", kind: \"clusters\", uid: \"\", causes: [], retry_after_seconds: 0 }) })\n\nCaused by:\n    clusters.cluster.x-k8s.io \"edge-a\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot get resource \"clusters\" in API group \"cluster.x-k8s.io\" in the namespace \"edge-sites\": Forbidden",
        Failure::Other
    )]
    #[case::replay_mismatch(
        "Callback evaluation failure: Replay error: unexpected request. Was expecting X, got Y instead",
        Failure::Other
    )]
    #[case::with_backtrace(
        "Callback evaluation failure: Cannot find a/v1/K named 'n' inside of namespace 'Some(\"ns\")'\n\nStack backtrace:\n   0: ...",
        Failure::NotFound
    )]
    fn host_error_texts(#[case] text: &str, #[case] failure: Failure) {
        assert_eq!(classify(text), failure);
    }
}
