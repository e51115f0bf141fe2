//! kwctl's session files (`--replay-host-capabilities-interactions`): a YAML list of exchanges,
//! each a request (a string holding YAML with a tag such as `!KubernetesListResourceAll`) and the
//! recorded answer, replayed strictly in order and matched exactly. Only the Kubernetes requests
//! the policy makes (lists, gets, `can_i`) are read; any other kind of request does not parse.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReview,
};
use serde::{Deserialize, Serialize};

/// A Kubernetes host call, tagged with kwctl's names. The SDK's request types are what the guest
/// sends, so the session compares exactly what the policy asked (field masks as sets).
#[derive(Serialize, Deserialize)]
#[allow(clippy::enum_variant_names)] // kwctl's tags
pub enum KubeRequest {
    KubernetesListResourceNamespace(ListResourcesByNamespaceRequest),
    KubernetesListResourceAll(ListAllResourcesRequest),
    KubernetesGetResource(GetResourceRequest),
}

impl KubeRequest {
    /// The apiVersion and kind asked for.
    pub fn resource(&self) -> (&str, &str) {
        match self {
            KubeRequest::KubernetesListResourceNamespace(r) => (&r.api_version, &r.kind),
            KubeRequest::KubernetesListResourceAll(r) => (&r.api_version, &r.kind),
            KubeRequest::KubernetesGetResource(r) => (&r.api_version, &r.kind),
        }
    }
}

impl PartialEq for KubeRequest {
    fn eq(&self, other: &Self) -> bool {
        // the SDK's types derive no PartialEq; their serialized forms compare every field
        serde_json::to_value(self).ok() == serde_json::to_value(other).ok()
    }
}

/// kwctl's text: `KubernetesListResourceAll { api_version: "v1", ... }` (mismatches show it).
impl std::fmt::Debug for KubeRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tag, inner) = match self {
            KubeRequest::KubernetesListResourceNamespace(r) => {
                ("KubernetesListResourceNamespace", format!("{r:?}"))
            }
            KubeRequest::KubernetesListResourceAll(r) => {
                ("KubernetesListResourceAll", format!("{r:?}"))
            }
            KubeRequest::KubernetesGetResource(r) => ("KubernetesGetResource", format!("{r:?}")),
        };
        // the SDK type's name is replaced by kwctl's variant name
        let fields = inner.split_once(' ').map_or("", |(_, fields)| fields);
        write!(f, "{tag} {fields}")
    }
}

/// A `can_i` call as kwctl records it (policy-evaluator `callback_requests.rs`
/// `KubernetesCanI`@v1.36.0-beta.1); kept apart from [`KubeRequest`], which names a resource.
#[derive(Debug, PartialEq, Deserialize)]
pub enum CanI {
    KubernetesCanI {
        request: SubjectAccessReview,
        disable_cache: bool,
    },
}

/// A recorded request of either kind, shown as kwctl shows it.
pub enum Recorded {
    Kube(KubeRequest),
    CanI(CanI),
}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recorded::Kube(r) => r.fmt(f),
            Recorded::CanI(r) => r.fmt(f),
        }
    }
}

/// The recorded answer of the host.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Response {
    Success { payload: String },
    Error { message: String },
}

/// One entry of a session file, as stored on disk (`type: Exchange` is written, not required).
#[derive(Deserialize)]
struct Exchange {
    request: String,
    response: Response,
}

/// Replays a session: hands out the recorded responses in order.
#[derive(Debug, Default)]
pub struct Replayer {
    exchanges: Vec<(Recorded, Response)>,
    next: usize,
}

impl Replayer {
    /// Parses the contents of a session file; `origin` names it in error messages.
    pub fn from_yaml_str(contents: &str, origin: &str) -> Result<Self> {
        let raw: Vec<Exchange> = serde_yaml::from_str(contents).map_err(|e| {
            anyhow!(
                "cannot parse host capabilities interactions file {origin}: {e} \
                 (expected a YAML list of `{{type: Exchange, request: <string>, response: \
                 {{type: Success, payload: <string>}} | {{type: Error, message: <string>}}}}`)"
            )
        })?;
        let exchanges = raw
            .into_iter()
            .enumerate()
            .map(|(idx, exchange)| {
                let text = &exchange.request;
                let request = if text.trim_start().starts_with("!KubernetesCanI") {
                    serde_yaml::from_str(text).map(Recorded::CanI)
                } else {
                    serde_yaml::from_str(text).map(Recorded::Kube)
                };
                let request = request.map_err(|e| {
                    anyhow!(
                        "cannot parse the request of exchange #{} of host capabilities \
                         interactions file {origin}: {e} (testhost replays Kubernetes list, get \
                         and can_i requests only)",
                        idx + 1
                    )
                })?;
                Ok((request, exchange.response))
            })
            .collect::<Result<_>>()?;
        Ok(Self { exchanges, next: 0 })
    }

    pub fn load(path: &Path) -> Result<Self> {
        let origin = path.display().to_string();
        let contents = std::fs::read_to_string(path)
            .with_context(|| format!("cannot open host capabilities interactions file {origin}"))?;
        Self::from_yaml_str(&contents, &origin)
    }

    /// Answers with the next recorded exchange; the error text is kwctl's (before the policy
    /// evaluator's `Callback evaluation failure: ` prefix). The exchange is consumed even when it
    /// does not match, as kwctl does.
    pub fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        self.replay(|r| matches!(r, Recorded::Kube(k) if k == request), request)
    }

    /// Answers a `can_i` call with the next recorded exchange, as [`Replayer::respond`].
    pub fn respond_can_i(&mut self, request: &CanI) -> Result<Vec<u8>, String> {
        self.replay(|r| matches!(r, Recorded::CanI(c) if c == request), request)
    }

    fn replay(
        &mut self,
        is: impl Fn(&Recorded) -> bool,
        request: &dyn std::fmt::Debug,
    ) -> Result<Vec<u8>, String> {
        let Some((expected, response)) = self.exchanges.get(self.next) else {
            return Err("the list of recorded responses is empty".to_string());
        };
        self.next += 1;
        if !is(expected) {
            return Err(format!(
                "Replay error: unexpected request. Was expecting {expected:?}, got {request:?} instead"
            ));
        }
        match response {
            Response::Success { payload } => Ok(payload.clone().into_bytes()),
            Response::Error { message } => Err(message.clone()),
        }
    }

    /// The requests not replayed yet.
    pub fn leftovers(&self) -> Vec<&Recorded> {
        self.exchanges[self.next.min(self.exchanges.len())..]
            .iter()
            .map(|(request, _)| request)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"---
- type: Exchange
  request: |
    !KubernetesListResourceAll
    api_version: v1
    kind: Namespace
    label_selector: customer-id=1234
    field_selector: null
    field_masks: null
  response:
    type: Success
    payload: '{"apiVersion":"v1","kind":"NamespaceList","items":[]}'
- type: Exchange
  request: "!KubernetesGetResource\napi_version: v1\nkind: Service\nname: api-auth-service\nnamespace: customer-1\ndisable_cache: false\nfield_masks:\n- metadata.labels\n- metadata.name\n"
  response:
    type: Error
    message: services "api-auth-service" not found
"#;

    fn list_all(label_selector: &str) -> KubeRequest {
        KubeRequest::KubernetesListResourceAll(ListAllResourcesRequest {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string(),
            label_selector: Some(label_selector.to_string()),
            field_selector: None,
            field_masks: None,
        })
    }

    fn get_service(masks: &[&str]) -> KubeRequest {
        KubeRequest::KubernetesGetResource(GetResourceRequest {
            api_version: "v1".to_string(),
            kind: "Service".to_string(),
            name: "api-auth-service".to_string(),
            namespace: Some("customer-1".to_string()),
            disable_cache: false,
            field_masks: Some(masks.iter().map(|m| m.to_string()).collect()),
        })
    }

    #[test]
    fn replays_in_order_with_recorded_errors_verbatim() {
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        assert_eq!(replayer.leftovers().len(), 2);
        let payload = replayer.respond(&list_all("customer-id=1234")).unwrap();
        assert_eq!(
            String::from_utf8(payload).unwrap(),
            r#"{"apiVersion":"v1","kind":"NamespaceList","items":[]}"#
        );
        // masks compare as sets: another order and a duplicate are the same request
        let reordered = get_service(&["metadata.name", "metadata.labels", "metadata.name"]);
        let err = replayer.respond(&reordered).unwrap_err();
        assert_eq!(err, "services \"api-auth-service\" not found");
        assert!(replayer.leftovers().is_empty());
        assert_eq!(
            replayer.respond(&list_all("a=b")).unwrap_err(),
            "the list of recorded responses is empty"
        );
    }

    #[test]
    fn a_mismatch_is_kwctls_error_and_consumes_the_exchange() {
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        let name_only = get_service(&["metadata.name"]);
        let err = replayer.respond(&name_only).unwrap_err();
        assert!(
            err.starts_with(
                "Replay error: unexpected request. Was expecting KubernetesListResourceAll"
            ),
            "{err}"
        );
        assert_eq!(replayer.leftovers().len(), 1);
        // a different mask set does not match
        let err = replayer.respond(&name_only).unwrap_err();
        assert!(err.contains("Replay error: unexpected request."), "{err}");
    }

    #[test]
    fn empty_files_and_sessions_without_masks_parse() {
        for empty in ["[]\n", ""] {
            let replayer = Replayer::from_yaml_str(empty, "e.yml").unwrap();
            assert!(replayer.leftovers().is_empty(), "{empty:?}");
        }
        // kwctl 1.32 and older wrote no field_masks: absent means none
        let old = "- request: \"!KubernetesListResourceNamespace\\napi_version: v1\\nkind: Pod\\nnamespace: a\\nlabel_selector: null\\nfield_selector: null\\n\"\n  response:\n    type: Success\n    payload: '{}'\n";
        let replayer = Replayer::from_yaml_str(old, "old.yml").unwrap();
        assert!(matches!(
            replayer.leftovers()[0],
            Recorded::Kube(KubeRequest::KubernetesListResourceNamespace(r)) if r.field_masks.is_none()
        ));
    }

    /// kwctl records `can_i` with the SubjectAccessReview it asked; the answer is its status.
    #[test]
    fn can_i_is_replayed() {
        let session = "- request: \"!KubernetesCanI\\nrequest:\\n  groups: null\\n  resource_attributes:\\n    group: g\\n    name: null\\n    namespace: ns\\n    resource: foos\\n    subresource: null\\n    verb: list\\n    version: null\\n  user: u\\ndisable_cache: false\\n\"\n  response:\n    type: Success\n    payload: '{\"allowed\":false}'\n";
        let mut replayer = Replayer::from_yaml_str(session, "can-i.yml").unwrap();
        let attributes = kubewarden_policy_sdk::host_capabilities::kubernetes::ResourceAttributes {
            group: Some("g".into()),
            namespace: Some("ns".into()),
            resource: "foos".into(),
            verb: "list".into(),
            ..Default::default()
        };
        let request = SubjectAccessReview {
            groups: None,
            resource_attributes: attributes,
            user: "u".into(),
        };
        let asked = CanI::KubernetesCanI {
            request,
            disable_cache: false,
        };
        assert_eq!(
            replayer.respond_can_i(&asked).unwrap(),
            br#"{"allowed":false}"#
        );
    }

    #[test]
    fn bad_files_name_the_file_and_the_exchange() {
        let err = Replayer::from_yaml_str("- request: [unclosed\n", "bad.yml").unwrap_err();
        assert!(err.to_string().contains("bad.yml"), "{err}");
        let other = "- request: \"!DNSLookupHost\\nhost: example.com\\n\"\n  response:\n    type: Success\n    payload: '[]'\n";
        let err = Replayer::from_yaml_str(other, "dns.yml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("exchange #1") && err.contains("dns.yml"),
            "{err}"
        );
        let err = Replayer::load(Path::new("/nonexistent/session.yml")).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/session.yml"));
    }
}
