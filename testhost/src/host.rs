//! The host side of the policy's waPC calls: the Kubernetes lists and gets it makes and its log
//! events. Every other capability (OCI, DNS, crypto, `can_i`, Sigstore) is refused with the
//! texts kwctl's policy evaluator gives a call it does not know; this project's policy makes none.
//! The access check and the `Callback evaluation failure: ` prefix are the policy evaluator's.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::metadata::ContextAwareResource;
use crate::session::{KubeRequest, Replayer};

/// Answers Kubernetes calls live instead of from a session: the API servers of `simulate` and
/// `bench-compare`. The `Err` text is the host's own, before the policy evaluator's prefix.
pub trait Responder: Send {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String>;
}

/// Everything the host callback needs.
#[derive(Default)]
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

/// A log event sent by the policy (`kubewarden/tracing/log`).
#[derive(Deserialize)]
struct PolicyLogEntry {
    level: String,
    message: Option<String>,
    #[serde(flatten)]
    data: serde_json::Map<String, serde_json::Value>,
}

impl HostState {
    fn check_access(&self, api_version: &str, kind: &str) -> Result<(), String> {
        let resource = ContextAwareResource {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        };
        if self.allow_list.contains(&resource) {
            return Ok(());
        }
        if self.responder.is_none() || self.verbose {
            eprintln!(
                "ERROR testhost: Policy tried to access a Kubernetes resource it doesn't have access to resource_requested={api_version}/{kind} resources_allowed={:?}",
                self.allow_list
            );
        }
        // the access check's text reaches the policy bare, without the callback prefix
        Err(format!(
            "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
        ))
    }

    fn send(&mut self, request: KubeRequest) -> Result<Vec<u8>, String> {
        if self.verbose {
            eprintln!("DEBUG testhost: host call request={request:?}");
        }
        let quiet = self.responder.is_some() && !self.verbose;
        let result = match (self.responder.as_mut(), self.replayer.as_mut()) {
            (Some(responder), _) => responder.respond(&request),
            (None, Some(replayer)) => replayer.respond(&request),
            // kwctl without a session and without a cluster connection
            (None, None) => Err("kube::Client was not initialized properly".to_string()),
        };
        result.map_err(|e| {
            if !quiet {
                eprintln!("ERROR testhost: callback evaluation failed error={e:?}");
            }
            format!("Callback evaluation failure: {e}")
        })
    }

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
        if binding != "kubewarden" {
            return Err(format!("unknown binding: {binding}"));
        }
        let request = match (namespace, operation) {
            ("tracing", "log") => {
                if self.responder.is_none() || self.verbose {
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
            ("tracing" | "kubernetes" | "oci" | "net" | "crypto", _) => {
                return Err(format!("unknown operation: {operation}"))
            }
            _ => return Err(format!("unknown namespace: {namespace}")),
        };
        let (api_version, kind) = match &request {
            KubeRequest::KubernetesListResourceNamespace(r) => (&r.api_version, &r.kind),
            KubeRequest::KubernetesListResourceAll(r) => (&r.api_version, &r.kind),
            KubeRequest::KubernetesGetResource(r) => (&r.api_version, &r.kind),
        };
        self.check_access(api_version, kind)?;
        self.send(request)
    }
}

/// Prints a policy log event on stderr; like kwctl's default level, debug and trace events only
/// in verbose mode.
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
        "TRACE" | "DEBUG" if !verbose => return,
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
            ..Default::default()
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
    fn allowed_calls_are_replayed_and_errors_prefixed() {
        let mut st = state(&[("v1", "Namespace")], Some(SESSION));
        let call = |st: &mut HostState| {
            st.host_call("kubewarden", "kubernetes", "list_resources_all", LIST_NS)
        };
        assert_eq!(call(&mut st).unwrap(), br#"{"items":[]}"#);
        assert_eq!(
            call(&mut st).unwrap_err(),
            "Callback evaluation failure: boom"
        );
        assert_eq!(
            call(&mut st).unwrap_err(),
            "Callback evaluation failure: the list of recorded responses is empty"
        );
        let mut st = state(&[("v1", "Namespace")], None);
        assert_eq!(
            call(&mut st).unwrap_err(),
            "Callback evaluation failure: kube::Client was not initialized properly"
        );
    }

    #[test]
    fn denied_resources_get_the_bare_text_and_consume_nothing() {
        let mut st = state(&[("apps/v1", "Deployment")], Some(SESSION));
        for (op, payload) in [
            ("list_resources_all", LIST_NS),
            ("list_resources_by_namespace", br#"{"api_version":"v1","kind":"Namespace","namespace":"x","label_selector":null,"field_selector":null,"field_masks":null}"#),
            ("get_resource", br#"{"api_version":"v1","kind":"Namespace","name":"x","namespace":null,"disable_cache":false,"field_masks":null}"#),
        ] {
            assert_eq!(
                st.host_call("kubewarden", "kubernetes", op, payload).unwrap_err(),
                "Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported."
            );
        }
        assert_eq!(st.replayer.as_ref().unwrap().leftovers().len(), 2);
    }

    #[test]
    fn other_capabilities_are_refused_like_unknown_calls() {
        let mut st = state(&[("v1", "Namespace")], Some(SESSION));
        for (namespace, operation, text) in [
            ("kubernetes", "can_i", "unknown operation: can_i"),
            (
                "oci",
                "v1/manifest_digest",
                "unknown operation: v1/manifest_digest",
            ),
            (
                "net",
                "v1/dns_lookup_host",
                "unknown operation: v1/dns_lookup_host",
            ),
            (
                "crypto",
                "v1/is_certificate_trusted",
                "unknown operation: v1/is_certificate_trusted",
            ),
            ("nope", "x", "unknown namespace: nope"),
        ] {
            assert_eq!(
                st.host_call("kubewarden", namespace, operation, b"{}")
                    .unwrap_err(),
                text
            );
        }
        assert_eq!(
            st.host_call("other", "kubernetes", "x", b"").unwrap_err(),
            "unknown binding: other"
        );
        assert_eq!(
            st.host_call("kubewarden", "kubernetes", "list_resources_all", b"{}")
                .unwrap_err(),
            "missing field `api_version` at line 1 column 2"
        );
        // logging never fails, even with garbage
        assert!(st
            .host_call("kubewarden", "tracing", "log", b"garbage")
            .unwrap()
            .is_empty());
        assert_eq!(st.replayer.as_ref().unwrap().leftovers().len(), 2);
    }
}
