//! The host side of the policy's waPC calls: the Kubernetes lists and gets it makes, and its log
//! events, and `can_i`. Any other capability (OCI, DNS, crypto, Sigstore) is refused with the
//! texts kwctl's policy evaluator gives a call it does not know; this project's policy makes
//! none. The access check and the `Callback evaluation failure: ` prefix are the policy
//! evaluator's.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use kubewarden_policy_sdk::host_capabilities::kubernetes::CanIRequest;
use serde::{Deserialize, Serialize};

use crate::session::{CanI, KubeRequest, Replayer};

/// A Kubernetes resource type the policy may read (metadata.yml's `contextAwareResources`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

/// Answers Kubernetes calls live instead of from a session: the simulated API server of
/// `simulate` and `bench`. The `Err` text is the host's own, before the policy evaluator's prefix.
pub trait Responder: Send {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String>;
}

/// The lock of `mutex`, also after a panic elsewhere: the host state and the simulated API
/// servers are shared between the callback and the command that drives the policy.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Everything the host callback needs.
#[derive(Default)]
pub struct HostState {
    /// Kubernetes resources the policy may read.
    pub allow_list: BTreeSet<ContextAwareResource>,
    /// The session to replay; `None` when no session file was given.
    pub replayer: Option<Replayer>,
    /// Print every host call and the policy's debug log events on stderr.
    pub verbose: bool,
    /// Answers instead of the session when set; then failures and log events are printed only
    /// when `verbose` (a simulation makes thousands of calls, many failing on purpose).
    pub responder: Option<Box<dyn Responder>>,
    /// When set, every host call is appended to it, as bench-floor's module reads them.
    pub record: Option<Vec<u8>>,
}

impl HostState {
    /// The waPC host callback. The `Err` text is what the policy receives.
    pub fn host_call(
        &mut self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String> {
        fn parse<T: for<'de> Deserialize<'de>>(payload: &[u8]) -> Result<T, String> {
            serde_json::from_slice(payload).map_err(|e| e.to_string())
        }
        if let Some(record) = &mut self.record {
            bench_floor::record(record, [binding, namespace, operation], payload);
        }
        let loud = self.responder.is_none() || self.verbose;
        if binding != "kubewarden" {
            return Err(format!("unknown binding: {binding}"));
        }
        let request = match (namespace, operation) {
            ("tracing", "log") => {
                if loud {
                    log_policy_event(payload, self.verbose);
                }
                return Ok(Vec::new());
            }
            ("kubernetes", "list_resources_by_namespace") => {
                KubeRequest::KubernetesListResourceNamespace(parse(payload)?)
            }
            ("kubernetes", "list_resources_all") => {
                KubeRequest::KubernetesListResourceAll(parse(payload)?)
            }
            ("kubernetes", "get_resource") => KubeRequest::KubernetesGetResource(parse(payload)?),
            ("kubernetes", "can_i") => return self.can_i(parse(payload)?),
            ("tracing" | "kubernetes" | "oci" | "net" | "crypto", _) => {
                return Err(format!("unknown operation: {operation}"));
            }
            _ => return Err(format!("unknown namespace: {namespace}")),
        };
        let (api_version, kind) = request.resource();
        let resource = ContextAwareResource {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        };
        if !self.allow_list.contains(&resource) {
            if loud {
                eprintln!(
                    "ERROR testhost: Policy tried to access a Kubernetes resource it doesn't have access to resource_requested={api_version}/{kind}"
                );
            }
            // the access check's text reaches the policy bare, without the callback prefix
            return Err(format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
            ));
        }
        if self.verbose {
            eprintln!("DEBUG testhost: host call request={request:?}");
        }
        let result = match (self.responder.as_mut(), self.replayer.as_mut()) {
            (Some(responder), _) => responder.respond(&request),
            (None, Some(replayer)) => replayer.respond(&request),
            // kwctl without a session and without a cluster connection
            (None, None) => Err("kube::Client was not initialized properly".to_string()),
        };
        result.map_err(|e| {
            if loud {
                eprintln!("ERROR testhost: callback evaluation failed error={e:?}");
            }
            format!("Callback evaluation failure: {e}")
        })
    }

    /// `can_i` has no `contextAwareResources` check (policy-evaluator `runtimes/callback.rs`
    /// @v1.36.0-beta.1). A session replays it; the simulated API servers enforce no RBAC, so
    /// there every question is allowed.
    fn can_i(&mut self, request: CanIRequest) -> Result<Vec<u8>, String> {
        let request = CanI::KubernetesCanI {
            request: request.subject_access_review,
            disable_cache: request.disable_cache,
        };
        let result = match (&self.responder, self.replayer.as_mut()) {
            (Some(_), _) => Ok(br#"{"allowed":true}"#.to_vec()),
            (None, Some(replayer)) => replayer.respond_can_i(&request),
            (None, None) => Err("kube::Client was not initialized properly".to_string()),
        };
        result.map_err(|e| format!("Callback evaluation failure: {e}"))
    }
}

/// A log event sent by the policy (`kubewarden/tracing/log`).
#[derive(Deserialize)]
struct PolicyLogEntry {
    level: String,
    message: Option<String>,
    #[serde(flatten)]
    data: serde_json::Map<String, serde_json::Value>,
}

/// Prints a policy log event on stderr; like kwctl's default level, debug and trace events only
/// in verbose mode. A log call never fails.
fn log_policy_event(payload: &[u8], verbose: bool) {
    let Ok(entry) = serde_json::from_slice::<PolicyLogEntry>(payload) else {
        let payload = String::from_utf8_lossy(payload);
        eprintln!("ERROR testhost: Cannot log event payload={payload:?}");
        return;
    };
    let level = entry.level.to_uppercase();
    if verbose || !matches!(level.as_str(), "TRACE" | "DEBUG") {
        let data = serde_json::Value::Object(entry.data);
        let message = entry.message.unwrap_or_default();
        eprintln!("{level:>5} policy_log: {message} data={data}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = r#"
- type: Exchange
  request: "!KubernetesListResourceAll\napi_version: v1\nkind: Namespace\nlabel_selector: null\nfield_selector: null\nfield_masks: null\n"
  response:
    type: Success
    payload: '{"items":[]}'
"#;

    const LIST_NS: &[u8] = br#"{"api_version":"v1","kind":"Namespace","label_selector":null,"field_selector":null,"field_masks":null}"#;

    /// Replay through the compiled policy is checked by e2e.bats; the replay's texts by
    /// session.rs.
    #[test]
    fn calls_the_policy_does_not_make_are_refused_like_kwctl() {
        let mut st = HostState {
            allow_list: [ContextAwareResource {
                api_version: "v1".to_string(),
                kind: "Namespace".to_string(),
            }]
            .into(),
            replayer: Some(Replayer::from_yaml_str(SESSION, "test.yml").unwrap()),
            ..Default::default()
        };
        for (binding, namespace, operation, payload, text) in [
            ("kubewarden", "oci", "v1/manifest_digest", &b"{}"[..], "unknown operation: v1/manifest_digest"),
            ("kubewarden", "net", "v1/dns_lookup_host", b"{}", "unknown operation: v1/dns_lookup_host"),
            ("kubewarden", "nope", "x", b"{}", "unknown namespace: nope"),
            ("other", "kubernetes", "x", b"", "unknown binding: other"),
            ("kubewarden", "kubernetes", "list_resources_all", b"{}", "missing field `api_version` at line 1 column 2"),
            ("kubewarden", "kubernetes", "get_resource", br#"{"api_version":"apps/v1","kind":"Deployment","name":"x","namespace":null,"disable_cache":false,"field_masks":null}"#,
                "Policy has not been granted access to Kubernetes apps/v1/Deployment resources. The violation has been reported."),
        ] {
            assert_eq!(st.host_call(binding, namespace, operation, payload).unwrap_err(), text);
        }
        // logging never fails, even with garbage; none of the above consumed the exchange
        assert!(
            st.host_call("kubewarden", "tracing", "log", b"garbage")
                .unwrap()
                .is_empty()
        );
        assert_eq!(st.replayer.as_ref().unwrap().leftovers().len(), 1);
        let payload = st.host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS);
        assert_eq!(payload.unwrap(), br#"{"items":[]}"#);
        // kwctl without a session and without a cluster
        st.replayer = None;
        assert_eq!(
            st.host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS)
                .unwrap_err(),
            "Callback evaluation failure: kube::Client was not initialized properly"
        );
    }
}
