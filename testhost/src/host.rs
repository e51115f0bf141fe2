//! Host side of the waPC host calls a Kubewarden policy makes.
//!
//! The dispatch, the access check and the error texts seen by the policy
//! follow kwctl's policy evaluator; the answers come from a replayed
//! session (see [`crate::session`]).

use std::collections::BTreeSet;

use serde::Deserialize;

// The guest sends the SDK's request types; reading them with the same types keeps the test host
// on the policy's wire format.
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};

use crate::metadata::ContextAwareResource;
use crate::session::{CallbackRequestType, Replayer, SubjectAccessReview};

/// Payload of `kubewarden/kubernetes/can_i`.
#[derive(Debug, Deserialize)]
struct CanIRequest {
    subject_access_review: SubjectAccessReview,
    disable_cache: bool,
}

/// A log event sent by the policy (`kubewarden/tracing/log`).
#[derive(Debug, Deserialize)]
struct PolicyLogEntry {
    level: String,
    message: Option<String>,
    #[serde(flatten)]
    data: serde_json::Map<String, serde_json::Value>,
}

/// Answers host calls live instead of from a recorded session: the lifecycle simulation's API
/// server (see `crate::simulate`). The `Err` text is the host's own, before the policy
/// evaluator's `Callback evaluation failure: ` prefix.
pub trait Responder: Send {
    fn respond(&mut self, request: &CallbackRequestType) -> Result<Vec<u8>, String>;
}

impl std::fmt::Debug for dyn Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

/// Everything the host callback needs.
#[derive(Debug, Default)]
pub struct HostState {
    /// Kubernetes resources the policy may read.
    pub allow_list: BTreeSet<ContextAwareResource>,
    /// The session to replay; `None` when no session file was given.
    pub replayer: Option<Replayer>,
    /// Print every host call on stderr.
    pub verbose: bool,
    /// Answers instead of the session when set; its failures and the policy's log lines are
    /// printed only with `verbose` (a simulation makes thousands of calls, many failing on purpose).
    pub responder: Option<Box<dyn Responder>>,
}

/// Text returned to the policy when it asks for a resource type it has not
/// been granted (same text as kwctl).
pub fn access_denied_message(api_version: &str, kind: &str) -> String {
    format!(
        "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
    )
}

impl HostState {
    pub fn can_access_kubernetes_resource(&self, api_version: &str, kind: &str) -> bool {
        self.allow_list.contains(&ContextAwareResource {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        })
    }

    fn check_access(&self, api_version: &str, kind: &str) -> Result<(), String> {
        if self.can_access_kubernetes_resource(api_version, kind) {
            Ok(())
        } else {
            eprintln!(
                "ERROR testhost: Policy tried to access a Kubernetes resource it doesn't have access to resource_requested={api_version}/{kind} resources_allowed={:?}",
                self.allow_list
            );
            Err(access_denied_message(api_version, kind))
        }
    }

    /// Answers a request through the session, adding the prefix kwctl's
    /// policy evaluator puts in front of every failed callback.
    fn send(&mut self, request: CallbackRequestType) -> Result<Vec<u8>, String> {
        if self.verbose {
            eprintln!("DEBUG testhost: host call request={request:?}");
        }
        if let Some(responder) = self.responder.as_mut() {
            let verbose = self.verbose;
            return responder.respond(&request).map_err(|e| {
                if verbose {
                    eprintln!("ERROR testhost: callback evaluation failed error={e:?}");
                }
                format!("Callback evaluation failure: {e}")
            });
        }
        let result = match self.replayer.as_mut() {
            Some(replayer) => replayer.respond(&request),
            // kwctl without a session and without a cluster connection
            None if is_kubernetes(&request) => {
                Err("kube::Client was not initialized properly".to_string())
            }
            None => Err("testhost: no host capabilities session to answer from \
                 (run with --replay-host-capabilities-interactions FILE)"
                .to_string()),
        };
        result.map_err(|e| {
            eprintln!("ERROR testhost: callback evaluation failed error={e:?}");
            format!("Callback evaluation failure: {e}")
        })
    }

    /// The waPC host callback.  The `Err` text is what the policy receives.
    pub fn host_call(
        &mut self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String> {
        if binding != "kubewarden" {
            return Err(format!("unknown binding: {binding}"));
        }
        let json_err = |e: serde_json::Error| e.to_string();

        match namespace {
            "tracing" => match operation {
                "log" => {
                    if self.responder.is_none() || self.verbose {
                        log_policy_event(payload, self.verbose);
                    }
                    Ok(Vec::new())
                }
                _ => Err(format!("unknown operation: {operation}")),
            },
            "kubernetes" => match operation {
                "list_resources_by_namespace" => {
                    let req: ListResourcesByNamespaceRequest =
                        serde_json::from_slice(payload).map_err(json_err)?;
                    self.check_access(&req.api_version, &req.kind)?;
                    self.send(CallbackRequestType::KubernetesListResourceNamespace {
                        api_version: req.api_version,
                        kind: req.kind,
                        namespace: req.namespace,
                        label_selector: req.label_selector,
                        field_selector: req.field_selector,
                        field_masks: req.field_masks,
                    })
                }
                "list_resources_all" => {
                    let req: ListAllResourcesRequest =
                        serde_json::from_slice(payload).map_err(json_err)?;
                    self.check_access(&req.api_version, &req.kind)?;
                    self.send(CallbackRequestType::KubernetesListResourceAll {
                        api_version: req.api_version,
                        kind: req.kind,
                        label_selector: req.label_selector,
                        field_selector: req.field_selector,
                        field_masks: req.field_masks,
                    })
                }
                "get_resource" => {
                    let req: GetResourceRequest =
                        serde_json::from_slice(payload).map_err(json_err)?;
                    self.check_access(&req.api_version, &req.kind)?;
                    self.send(CallbackRequestType::KubernetesGetResource {
                        api_version: req.api_version,
                        kind: req.kind,
                        name: req.name,
                        namespace: req.namespace,
                        disable_cache: req.disable_cache,
                        field_masks: req.field_masks,
                    })
                }
                "can_i" => {
                    let req: CanIRequest = serde_json::from_slice(payload).map_err(json_err)?;
                    self.send(CallbackRequestType::KubernetesCanI {
                        request: req.subject_access_review,
                        disable_cache: req.disable_cache,
                    })
                }
                _ => Err(format!("unknown operation: {operation}")),
            },
            "oci" => match operation {
                "v1/manifest_digest" => {
                    let image: String = serde_json::from_slice(payload).map_err(json_err)?;
                    self.send(CallbackRequestType::OciManifestDigest { image })
                }
                "v1/oci_manifest" => {
                    let image: String = serde_json::from_slice(payload).map_err(json_err)?;
                    self.send(CallbackRequestType::OciManifest { image })
                }
                "v1/oci_manifest_config" => {
                    let image: String = serde_json::from_slice(payload).map_err(json_err)?;
                    self.send(CallbackRequestType::OciManifestAndConfig { image })
                }
                "v1/verify" | "v2/verify" => Err(unsupported(namespace, operation)),
                _ => Err(format!("unknown operation: {operation}")),
            },
            "net" => match operation {
                "v1/dns_lookup_host" => {
                    let host: String = serde_json::from_slice(payload).map_err(json_err)?;
                    self.send(CallbackRequestType::DNSLookupHost { host })
                }
                _ => Err(format!("unknown operation: {operation}")),
            },
            "crypto" => match operation {
                "v1/is_certificate_trusted" => Err(unsupported(namespace, operation)),
                _ => Err(format!("unknown operation: {operation}")),
            },
            _ => Err(format!("unknown namespace: {namespace}")),
        }
    }
}

fn is_kubernetes(request: &CallbackRequestType) -> bool {
    matches!(
        request,
        CallbackRequestType::KubernetesListResourceNamespace { .. }
            | CallbackRequestType::KubernetesListResourceAll { .. }
            | CallbackRequestType::KubernetesGetResource { .. }
            | CallbackRequestType::KubernetesGetResourcePluralName { .. }
            | CallbackRequestType::KubernetesCanI { .. }
    )
}

fn unsupported(namespace: &str, operation: &str) -> String {
    format!("testhost: the host capability {namespace}/{operation} is not supported")
}

/// Prints a policy log event on stderr.  Like kwctl's default log level,
/// debug and trace events are shown only in verbose mode.
fn log_policy_event(payload: &[u8], verbose: bool) {
    let entry: PolicyLogEntry = match serde_json::from_slice(payload) {
        Ok(entry) => entry,
        Err(e) => {
            eprintln!(
                "ERROR testhost: Cannot log event payload={:?} error={e}",
                String::from_utf8_lossy(payload)
            );
            return;
        }
    };
    let level = match entry.level.to_uppercase().as_str() {
        "TRACE" => "TRACE",
        "DEBUG" => "DEBUG",
        "INFO" => "INFO",
        "WARNING" => "WARN",
        "ERROR" => "ERROR",
        _ => {
            eprintln!(
                "ERROR testhost: Cannot log event payload={:?} error=unknown log level {}",
                String::from_utf8_lossy(payload),
                entry.level
            );
            return;
        }
    };
    if !verbose && (level == "TRACE" || level == "DEBUG") {
        return;
    }
    let data = serde_json::Value::Object(entry.data);
    eprintln!(
        "{level:>5} policy_log: {} data={data}",
        entry.message.unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(allowed: &[(&str, &str)], session: Option<&str>) -> HostState {
        HostState {
            allow_list: allowed
                .iter()
                .map(|(a, k)| ContextAwareResource {
                    api_version: a.to_string(),
                    kind: k.to_string(),
                })
                .collect(),
            replayer: session.map(|s| Replayer::from_yaml_str(s, "test.yml").unwrap()),
            verbose: false,
            responder: None,
        }
    }

    const SESSION: &str = r#"
- type: Exchange
  request: "!KubernetesListResourceAll\napi_version: v1\nkind: Namespace\nlabel_selector: null\nfield_selector: null\nfield_masks: null\n"
  response:
    type: Success
    payload: '{"items":[]}'
- type: Exchange
  request: "!KubernetesListResourceAll\napi_version: v1\nkind: Namespace\nlabel_selector: null\nfield_selector: null\nfield_masks: null\n"
  response:
    type: Error
    message: boom
"#;

    const LIST_NS: &[u8] = br#"{"api_version":"v1","kind":"Namespace","label_selector":null,"field_selector":null,"field_masks":null}"#;

    #[test]
    fn allowed_resource_is_replayed() {
        let mut st = state(&[("v1", "Namespace")], Some(SESSION));
        let out = st
            .host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS)
            .unwrap();
        assert_eq!(out, br#"{"items":[]}"#);
        // recorded error: prefixed like kwctl does
        let err = st
            .host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS)
            .unwrap_err();
        assert_eq!(err, "Callback evaluation failure: boom");
        // nothing left
        let err = st
            .host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS)
            .unwrap_err();
        assert_eq!(
            err,
            "Callback evaluation failure: the list of recorded responses is empty"
        );
    }

    #[test]
    fn denied_resource_gets_bare_text_and_consumes_nothing() {
        let mut st = state(&[("apps/v1", "Deployment")], Some(SESSION));
        for op in [
            "list_resources_all",
            "list_resources_by_namespace",
            "get_resource",
        ] {
            let payload: &[u8] = match op {
                "list_resources_by_namespace" => br#"{"api_version":"v1","kind":"Namespace","namespace":"x","label_selector":null,"field_selector":null,"field_masks":null}"#,
                "get_resource" => br#"{"api_version":"v1","kind":"Namespace","name":"x","namespace":null,"disable_cache":false,"field_masks":null}"#,
                _ => LIST_NS,
            };
            let err = st
                .host_call("kubewarden", "kubernetes", op, payload)
                .unwrap_err();
            assert_eq!(
                err,
                "Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported."
            );
        }
        assert_eq!(st.replayer.as_ref().unwrap().leftovers().len(), 2);
    }

    #[test]
    fn allow_check_is_exact() {
        let st = state(&[("apps/v1", "Deployment")], None);
        assert!(st.can_access_kubernetes_resource("apps/v1", "Deployment"));
        assert!(!st.can_access_kubernetes_resource("apps/v1beta1", "Deployment"));
        assert!(!st.can_access_kubernetes_resource("apps/v1", "deployment"));
        assert!(!st.can_access_kubernetes_resource("v1", "Deployment"));
    }

    #[test]
    fn can_i_is_not_gated_by_allow_list() {
        let session = r#"
- type: Exchange
  request: "!KubernetesCanI\nrequest:\n  groups: null\n  resource_attributes:\n    group: ''\n    name: null\n    namespace: kube-system\n    resource: pods\n    subresource: null\n    verb: create\n    version: null\n  user: system:serviceaccount:ns:default\ndisable_cache: false\n"
  response:
    type: Success
    payload: '{"allowed":false}'
"#;
        let mut st = state(&[], Some(session));
        let payload = br#"{"subject_access_review":{"groups":null,"resource_attributes":{"group":"","name":null,"namespace":"kube-system","resource":"pods","subresource":null,"verb":"create","version":null},"user":"system:serviceaccount:ns:default"},"disable_cache":false}"#;
        let out = st
            .host_call("kubewarden", "kubernetes", "can_i", payload)
            .unwrap();
        assert_eq!(out, br#"{"allowed":false}"#);
    }

    #[test]
    fn bad_payloads_and_names() {
        let mut st = state(&[("v1", "Namespace")], Some(SESSION));
        let err = st
            .host_call("kubewarden", "kubernetes", "list_resources_all", b"{}")
            .unwrap_err();
        assert_eq!(err, "missing field `api_version` at line 1 column 2");
        assert_eq!(
            st.host_call("other", "kubernetes", "x", b"").unwrap_err(),
            "unknown binding: other"
        );
        assert_eq!(
            st.host_call("kubewarden", "nope", "x", b"").unwrap_err(),
            "unknown namespace: nope"
        );
        assert_eq!(
            st.host_call("kubewarden", "kubernetes", "x", b"")
                .unwrap_err(),
            "unknown operation: x"
        );
        // logging never fails, even with garbage
        assert_eq!(
            st.host_call("kubewarden", "tracing", "log", b"garbage")
                .unwrap(),
            Vec::<u8>::new()
        );
    }

    #[test]
    fn no_session_is_an_error_for_the_policy() {
        let mut st = state(&[("v1", "Namespace")], None);
        let err = st
            .host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS)
            .unwrap_err();
        assert_eq!(
            err,
            "Callback evaluation failure: kube::Client was not initialized properly"
        );
        let err = st
            .host_call(
                "kubewarden",
                "net",
                "v1/dns_lookup_host",
                br#""example.com""#,
            )
            .unwrap_err();
        assert!(
            err.starts_with("Callback evaluation failure: testhost: "),
            "{err}"
        );
    }
}
