//! Host-capabilities session files and their strict, in-order replay.
//!
//! A session file is a YAML list of exchanges, as written by
//! `kwctl run --record-host-capabilities-interactions`:
//!
//! ```yaml
//! - type: Exchange
//!   request: |
//!     !KubernetesListResourceAll
//!     api_version: v1
//!     kind: Namespace
//!     label_selector: null
//!     field_selector: null
//!     field_masks: null
//!   response:
//!     type: Success
//!     payload: '{"apiVersion":"v1","kind":"NamespaceList","items":[]}'
//! ```
//!
//! `request` is itself a YAML document (a string) holding a tagged
//! request.  Exchanges are consumed strictly in order: every request made by
//! the policy must be equal to the next recorded one.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

/// Parameters of a `can_i` (SubjectAccessReview) request, as sent by the
/// Kubewarden SDK.  Field names and order follow the SDK, so that the
/// `Debug` rendering used in replay error messages is the same as kwctl's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectAccessReview {
    pub groups: Option<Vec<String>>,
    pub resource_attributes: ResourceAttributes,
    pub user: String,
}

/// See [`SubjectAccessReview`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceAttributes {
    pub group: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub resource: String,
    pub subresource: Option<String>,
    pub verb: String,
    pub version: Option<String>,
}

/// A request made by the policy to the host.
///
/// The variant and field names, their order and their types follow the
/// request enum of kwctl's policy evaluator, because:
/// * session files name the variant in a YAML tag (`!KubernetesGetResource`);
/// * equality decides whether a recorded exchange matches;
/// * the derived `Debug` text is part of the replay mismatch error.
///
/// The signature-verification, certificate and internal variants are not
/// produced by testhost (the host calls that would produce them are not
/// supported), so their content is kept as opaque YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CallbackRequestType {
    OciManifestDigest {
        image: String,
    },
    OciManifest {
        image: String,
    },
    OciManifestAndConfig {
        image: String,
    },
    SigstorePubKeyVerify(serde_yaml::Value),
    SigstoreKeylessVerify(serde_yaml::Value),
    SigstoreKeylessPrefixVerify(serde_yaml::Value),
    SigstoreGithubActionsVerify(serde_yaml::Value),
    SigstoreCertificateVerify(serde_yaml::Value),
    DNSLookupHost {
        host: String,
    },
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResourcePluralName {
        api_version: String,
        kind: String,
    },
    HasKubernetesListResourceAllResultChangedSinceInstant(serde_yaml::Value),
    KubernetesCanI {
        request: SubjectAccessReview,
        disable_cache: bool,
    },
    CryptoIsCertificateTrusted(serde_yaml::Value),
}

/// The recorded answer of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    Success { payload: String },
    Error { message: String },
}

/// One entry of a session file, as stored on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub struct Exchange {
    pub request: String,
    pub response: Response,
}

/// An exchange whose request has been parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedExchange {
    pub request: CallbackRequestType,
    pub response: Response,
}

/// Replays a session: hands out the recorded responses in order.
#[derive(Debug, Default, Clone)]
pub struct Replayer {
    exchanges: VecDeque<RecordedExchange>,
}

impl Replayer {
    /// Parses the contents of a session file.  `origin` names the file in
    /// error messages.
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
                let request: CallbackRequestType = serde_yaml::from_str(&exchange.request)
                    .map_err(|e| {
                        anyhow!(
                            "cannot parse the request of exchange #{} of host capabilities \
                             interactions file {origin}: {e}",
                            idx + 1
                        )
                    })?;
                Ok(RecordedExchange {
                    request,
                    response: exchange.response,
                })
            })
            .collect::<Result<VecDeque<_>>>()?;

        Ok(Self { exchanges })
    }

    /// Reads and parses a session file.
    pub fn load(path: &Path) -> Result<Self> {
        let contents = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot open host capabilities interactions file {}",
                path.display()
            )
        })?;
        Self::from_yaml_str(&contents, &path.display().to_string())
    }

    /// Answers a request of the policy with the next recorded exchange.
    ///
    /// On failure the error text is the one kwctl produces (before the
    /// policy evaluator adds its `Callback evaluation failure: ` prefix).
    /// The recorded exchange is consumed even when it does not match, as
    /// kwctl does.
    pub fn respond(&mut self, request: &CallbackRequestType) -> Result<Vec<u8>, String> {
        let Some(exchange) = self.exchanges.pop_front() else {
            return Err("the list of recorded responses is empty".to_string());
        };
        if exchange.request != *request {
            return Err(format!(
                "Replay error: unexpected request. Was expecting {:?}, got {:?} instead",
                exchange.request, request
            ));
        }
        match exchange.response {
            Response::Success { payload } => Ok(payload.into_bytes()),
            Response::Error { message } => Err(message),
        }
    }

    /// The exchanges that have not been replayed yet.
    pub fn leftovers(&self) -> &VecDeque<RecordedExchange> {
        &self.exchanges
    }
}

/// Renders a request the way kwctl stores it inside of a session file.
#[cfg(test)]
pub fn request_to_yaml(request: &CallbackRequestType) -> Result<String> {
    Ok(serde_yaml::to_string(request)?)
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

    fn list_all(label_selector: &str) -> CallbackRequestType {
        CallbackRequestType::KubernetesListResourceAll {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string(),
            label_selector: Some(label_selector.to_string()),
            field_selector: None,
            field_masks: None,
        }
    }

    fn get_service(masks: &[&str]) -> CallbackRequestType {
        CallbackRequestType::KubernetesGetResource {
            api_version: "v1".to_string(),
            kind: "Service".to_string(),
            name: "api-auth-service".to_string(),
            namespace: Some("customer-1".to_string()),
            disable_cache: false,
            field_masks: Some(masks.iter().map(|m| m.to_string()).collect()),
        }
    }

    #[test]
    fn parses_good_session() {
        let replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        assert_eq!(replayer.leftovers().len(), 2);
        assert_eq!(
            replayer.leftovers()[0].request,
            list_all("customer-id=1234")
        );
        assert_eq!(
            replayer.leftovers()[1].response,
            Response::Error {
                message: "services \"api-auth-service\" not found".to_string()
            }
        );
    }

    #[test]
    fn parses_empty_list() {
        let replayer = Replayer::from_yaml_str("[]\n", "empty.yml").unwrap();
        assert!(replayer.leftovers().is_empty());
        // an empty file is an empty list too
        let replayer = Replayer::from_yaml_str("", "empty.yml").unwrap();
        assert!(replayer.leftovers().is_empty());
    }

    #[test]
    fn type_keys_are_not_checked() {
        // as with kwctl: `type: Exchange` is written, but not required
        let contents = "- request: \"!DNSLookupHost\\nhost: example.com\\n\"\n  response:\n    type: Success\n    payload: '[]'\n";
        let replayer = Replayer::from_yaml_str(contents, "t.yml").unwrap();
        assert_eq!(
            replayer.leftovers()[0].request,
            CallbackRequestType::DNSLookupHost {
                host: "example.com".to_string()
            }
        );
    }

    #[test]
    fn malformed_yaml_gives_readable_error() {
        let err = Replayer::from_yaml_str("- type: Exchange\n  request: [unclosed\n", "bad.yml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.yml"), "{err}");
        assert!(
            err.contains("cannot parse host capabilities interactions file"),
            "{err}"
        );
    }

    #[test]
    fn wrong_shape_gives_readable_error() {
        let err = Replayer::from_yaml_str("request: foo\n", "shape.yml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("shape.yml"), "{err}");

        let err = Replayer::from_yaml_str(
            "- type: Exchange\n  request: x\n  response:\n    type: Maybe\n",
            "shape2.yml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("shape2.yml"), "{err}");
    }

    #[test]
    fn malformed_request_names_exchange() {
        let contents = "- type: Exchange\n  request: \"!NoSuchRequest\\nfoo: bar\\n\"\n  response:\n    type: Success\n    payload: '{}'\n";
        let err = Replayer::from_yaml_str(contents, "req.yml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("exchange #1"), "{err}");
        assert!(err.contains("req.yml"), "{err}");
    }

    #[test]
    fn missing_file_gives_readable_error() {
        let err = Replayer::load(Path::new("/nonexistent/session.yml")).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("/nonexistent/session.yml"), "{text}");
    }

    #[test]
    fn replays_in_order() {
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        let payload = replayer.respond(&list_all("customer-id=1234")).unwrap();
        assert_eq!(
            String::from_utf8(payload).unwrap(),
            r#"{"apiVersion":"v1","kind":"NamespaceList","items":[]}"#
        );
        // recorded errors are handed back verbatim
        let err = replayer
            .respond(&get_service(&["metadata.name", "metadata.labels"]))
            .unwrap_err();
        assert_eq!(err, "services \"api-auth-service\" not found");
        assert!(replayer.leftovers().is_empty());
    }

    #[test]
    fn mismatch_has_kwctl_text_and_consumes_exchange() {
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        let err = replayer.respond(&list_all("customer-id=42")).unwrap_err();
        assert_eq!(
            err,
            "Replay error: unexpected request. Was expecting KubernetesListResourceAll { \
             api_version: \"v1\", kind: \"Namespace\", label_selector: Some(\"customer-id=1234\"), \
             field_selector: None, field_masks: None }, got KubernetesListResourceAll { \
             api_version: \"v1\", kind: \"Namespace\", label_selector: Some(\"customer-id=42\"), \
             field_selector: None, field_masks: None } instead"
        );
        assert_eq!(replayer.leftovers().len(), 1);
    }

    #[test]
    fn out_of_order_is_a_mismatch() {
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        let err = replayer
            .respond(&get_service(&["metadata.name", "metadata.labels"]))
            .unwrap_err();
        assert!(
            err.starts_with(
                "Replay error: unexpected request. Was expecting KubernetesListResourceAll"
            ),
            "{err}"
        );
    }

    #[test]
    fn empty_list_text() {
        let mut replayer = Replayer::default();
        let err = replayer.respond(&list_all("a=b")).unwrap_err();
        assert_eq!(err, "the list of recorded responses is empty");
    }

    #[test]
    fn field_masks_compare_as_sets() {
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        replayer.respond(&list_all("customer-id=1234")).unwrap();
        // recorded as [metadata.labels, metadata.name]; requested in another
        // order and with a duplicate: still the same set
        let err = replayer
            .respond(&get_service(&[
                "metadata.name",
                "metadata.labels",
                "metadata.name",
            ]))
            .unwrap_err();
        assert_eq!(err, "services \"api-auth-service\" not found");

        // a different set does not match
        let mut replayer = Replayer::from_yaml_str(GOOD, "good.yml").unwrap();
        replayer.respond(&list_all("customer-id=1234")).unwrap();
        let err = replayer
            .respond(&get_service(&["metadata.name"]))
            .unwrap_err();
        assert!(
            err.starts_with("Replay error: unexpected request."),
            "{err}"
        );
        assert!(
            err.contains("field_masks: Some({\"metadata.labels\", \"metadata.name\"})"),
            "{err}"
        );
    }

    #[test]
    fn field_masks_none_differs_from_empty_set() {
        let with_empty = CallbackRequestType::KubernetesListResourceAll {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string(),
            label_selector: None,
            field_selector: None,
            field_masks: Some(BTreeSet::new()),
        };
        let with_none = CallbackRequestType::KubernetesListResourceAll {
            api_version: "v1".to_string(),
            kind: "Namespace".to_string(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        };
        assert_ne!(with_empty, with_none);
    }

    #[test]
    fn request_yaml_roundtrip_and_can_i() {
        let req = CallbackRequestType::KubernetesCanI {
            request: SubjectAccessReview {
                groups: None,
                resource_attributes: ResourceAttributes {
                    group: Some(String::new()),
                    namespace: Some("kube-system".to_string()),
                    resource: "pods".to_string(),
                    verb: "create".to_string(),
                    ..Default::default()
                },
                user: "system:serviceaccount:ns:default".to_string(),
            },
            disable_cache: false,
        };
        let yaml = request_to_yaml(&req).unwrap();
        assert!(yaml.starts_with("!KubernetesCanI\n"), "{yaml}");
        let back: CallbackRequestType = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, req);
    }

    #[test]
    fn opaque_variants_parse() {
        let contents = "- type: Exchange\n  request: \"!SigstorePubKeyVerify\\nimage: busybox\\npub_keys: []\\nannotations: null\\n\"\n  response:\n    type: Error\n    message: nope\n";
        let replayer = Replayer::from_yaml_str(contents, "sig.yml").unwrap();
        assert!(matches!(
            replayer.leftovers()[0].request,
            CallbackRequestType::SigstorePubKeyVerify(_)
        ));
    }
}
