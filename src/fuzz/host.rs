//! The fuzz host: answers every host call with the next answer of the case, as the policy
//! server or kwctl would word it, and records each call as a kwctl session exchange.

use super::*;

/// How the host answers one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Answer {
    /// The fixture objects of the kind asked for (and the keeper, if any).
    Good,
    Empty,
    /// A thousand objects.
    Large,
    NotServed,
    GroupVersion404,
    NotFound,
    Denied,
    Forbidden,
    Timeout,
    NotJson,
    WrongListKind,
    NoItems,
    NullItems,
    ItemsOfOtherKind,
    /// Good items and one whose name is a number.
    MixedBadItem,
}

impl Answer {
    pub(super) const ALL: [Answer; 15] = [
        Answer::Good,
        Answer::Empty,
        Answer::Large,
        Answer::NotServed,
        Answer::GroupVersion404,
        Answer::NotFound,
        Answer::Denied,
        Answer::Forbidden,
        Answer::Timeout,
        Answer::NotJson,
        Answer::WrongListKind,
        Answer::NoItems,
        Answer::NullItems,
        Answer::ItemsOfOtherKind,
        Answer::MixedBadItem,
    ];

    /// An answer the policy cannot use: it must never be taken for "nothing refers to it".
    /// Which kinds exist comes from the CRD list, so a not-served text is a failure like any
    /// other; a not-found answer to a get is a legitimate "none".
    pub(super) fn is_failure(self) -> bool {
        !matches!(
            self,
            Answer::Good | Answer::Empty | Answer::Large | Answer::NotFound
        )
    }
}

/// Answers every call with the next answer of the case, records the calls and whether any
/// answer was a failure.
pub(super) struct FuzzHost<'a> {
    case: &'a Case,
    next: Cell<usize>,
    pub(super) calls: RefCell<Vec<String>>,
    pub(super) failed: Cell<bool>,
    /// Each call as a session exchange (kwctl's replay format), for the hostile corpus.
    pub(super) exchanges: RefCell<Vec<Value>>,
}

/// A host call as kwctl's session files name it (serde's external tag becomes the YAML tag, so
/// the variants keep kwctl's names).
#[derive(Serialize)]
#[allow(clippy::enum_variant_names)]
pub(super) enum SessionRequest<'a> {
    KubernetesListResourceAll(&'a ListAllResourcesRequest),
    KubernetesListResourceNamespace(&'a ListResourcesByNamespaceRequest),
    KubernetesGetResource(&'a GetResourceRequest),
    KubernetesCanI {
        request: &'a SubjectAccessReview,
        disable_cache: bool,
    },
}

pub(super) fn exchange(request: &SessionRequest<'_>, answer: &Result<Vec<u8>, String>) -> Value {
    let response = match answer {
        Ok(bytes) => json!({"type": "Success", "payload": String::from_utf8_lossy(bytes)}),
        Err(message) => json!({"type": "Error", "message": message}),
    };
    json!({"type": "Exchange", "request": yaml_serde::to_string(request).expect("YAML"), "response": response})
}

impl<'a> FuzzHost<'a> {
    pub(super) fn new(case: &'a Case) -> Self {
        FuzzHost {
            case,
            next: Cell::new(0),
            calls: RefCell::new(Vec::new()),
            failed: Cell::new(false),
            exchanges: RefCell::new(Vec::new()),
        }
    }

    pub(super) fn answer(
        &self,
        call: String,
        api_version: &str,
        kind: &str,
        name: Option<&str>,
    ) -> Result<Vec<u8>, String> {
        let i = self.next.get();
        self.next.set(i + 1);
        self.calls.borrow_mut().push(call);
        let mut answer = self.case.answers.get(i).copied().unwrap_or(Answer::Good);
        // The host's access check: only metadata.yml's kinds at the catalogue's versions, and
        // the case's extra CRDs when the operator granted them (can_i has no such check).
        let listed = catalogue::resources_read()
            .any(|r| r.kind == kind && r.versions.iter().any(|v| r.api_version(v) == api_version));
        if !(listed || self.case.granted || kind == "SubjectAccessReview") {
            answer = Answer::Denied;
        }
        if answer.is_failure() {
            self.failed.set(true);
        }
        let items = |count: usize| -> Vec<Value> {
            if kind == CRD.kind {
                // Every kind of the catalogue is installed, and the case's extra CRDs (one of a
                // catalogue kind replaces the catalogue's); with an empty answer, only the
                // keeper's (a keeper exists, so its CRD does).
                let keeper = self.case.keeper.as_ref().map(|k| k.kind.as_str());
                let extra = |kind: &str| self.case.crds.iter().find(|c| c.kind == kind);
                let catalogue_crds = catalogue::resources_read()
                    .filter(|r| r.kind != CRD.kind && extra(r.kind).is_none())
                    .map(|r| {
                        let versions: Vec<(String, bool)> =
                            r.versions.iter().map(|v| (v.to_string(), true)).collect();
                        (r.group.to_string(), r.kind.to_string(), versions)
                    });
                let extras = self
                    .case
                    .crds
                    .iter()
                    .map(|c| (c.group.clone(), c.kind.clone(), c.versions.clone()));
                return catalogue_crds
                    .chain(extras)
                    .filter(|(_, k, _)| count > 0 || keeper == Some(k.as_str()))
                    .map(|(group, kind, versions)| {
                        let versions: Vec<(&str, bool)> =
                            versions.iter().map(|(v, s)| (v.as_str(), *s)).collect();
                        let plural = catalogue::plural_of(&kind).to_lowercase();
                        crate::testing::crd_object(&group, &kind, &plural, &versions)
                    })
                    .collect();
            }
            let mut items: Vec<Value> = objects()
                .iter()
                .filter(|o| o["kind"] == kind)
                .cloned()
                .cycle()
                .take(count)
                .collect();
            if let Some(keeper) = self.case.keeper.as_ref().filter(|k| k.kind == kind) {
                items.push(keeper.object.clone());
            }
            items
        };
        let list = |items: Vec<Value>| json!({"apiVersion": api_version, "kind": format!("{kind}List"), "items": items});
        let text = |t: String| Err(t);
        match answer {
            Answer::Good | Answer::Empty | Answer::Large => {
                let count = match answer {
                    Answer::Good => 2,
                    Answer::Empty => 0,
                    _ => 1000,
                };
                match name {
                    None => Ok(list(items(count)).to_string().into_bytes()),
                    Some(name) => match items(1).into_iter().next() {
                        Some(mut object) => {
                            object["metadata"]["name"] = json!(name);
                            if kind == "Cluster" && self.case.cluster_deleting {
                                object["metadata"]["deletionTimestamp"] =
                                    json!("2026-12-01T00:00:00Z");
                            }
                            Ok(object.to_string().into_bytes())
                        }
                        None => text(format!(
                            "Callback evaluation failure: Cannot find {api_version}/{kind} named '{name}' inside of namespace 'Some(\"ns\")'"
                        )),
                    },
                }
            }
            Answer::NotServed => text(format!(
                "Callback evaluation failure: Cannot find resource {api_version}/{kind}"
            )),
            // The host's text when the API server answers 404 for a group version, as kwctl
            // 1.36.0-beta.1 gave it live.
            Answer::GroupVersion404 => text(format!(
                "Callback evaluation failure: error finding resource {api_version} / {kind}: ApiError: 404 page not found\n: Failed to parse error data (Status {{ status: Some(Failure), code: 404, message: \"404 page not found\\n\", metadata: None, reason: \"Failed to parse error data\", details: None }})"
            )),
            Answer::NotFound => text(format!(
                "Callback evaluation failure: Cannot find {api_version}/{kind} named '{}' inside of namespace 'Some(\"ns\")'",
                name.unwrap_or("x")
            )),
            Answer::Denied => text(format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
            )),
            Answer::Forbidden => text(format!(
                "Callback evaluation failure: ApiError: {kind} \"x\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot get resource: Forbidden (Status {{ status: Some(Failure), code: 403, metadata: None, reason: \"Forbidden\", details: None }})\n\nCaused by:\n    0: ApiError: forbidden"
            )),
            Answer::Timeout => {
                text("Callback evaluation failure: HyperError: operation timed out".to_string())
            }
            Answer::NotJson => Ok(b"<html>502 Bad Gateway</html>".to_vec()),
            Answer::WrongListKind => Ok(json!({"kind": "SecretList", "items": []})
                .to_string()
                .into_bytes()),
            Answer::NoItems => Ok(json!({"kind": format!("{kind}List")})
                .to_string()
                .into_bytes()),
            Answer::NullItems => Ok(json!({"kind": format!("{kind}List"), "items": null})
                .to_string()
                .into_bytes()),
            Answer::ItemsOfOtherKind => match name {
                None => Ok(
                    list(vec![json!({"kind": "Secret", "metadata": {"name": "s"}})])
                        .to_string()
                        .into_bytes(),
                ),
                Some(_) => Ok(json!({"kind": "Secret", "metadata": {"name": "s"}})
                    .to_string()
                    .into_bytes()),
            },
            Answer::MixedBadItem => {
                let mut items = items(2);
                items.push(json!({"kind": kind, "metadata": {"name": 7}}));
                match name {
                    None => Ok(list(items).to_string().into_bytes()),
                    Some(_) => Ok(json!({"kind": kind, "metadata": {"name": 7}})
                        .to_string()
                        .into_bytes()),
                }
            }
        }
    }
}

impl Host for FuzzHost<'_> {
    /// The next answer of the case: a good one allows, an empty one refuses; a failing one is
    /// the same failure a list would get, its bytes (not JSON, or no review) passed on as they
    /// came, so that the policy must read them as no answer.
    fn can_i(&self, r: &CanIRequest) -> Result<Vec<u8>, String> {
        let a = &r.subject_access_review.resource_attributes;
        let call = format!("can-i {} {} {:?}", a.verb, a.resource, a.namespace);
        let answer = match self.answer(call, "authorization.k8s.io/v1", "SubjectAccessReview", None)
        {
            Ok(bytes) => {
                let i = self.next.get() - 1;
                match self.case.answers.get(i).copied().unwrap_or(Answer::Good) {
                    failing if failing.is_failure() => Ok(bytes),
                    answer => {
                        let allowed = answer != Answer::Empty;
                        let reason = if allowed {
                            ""
                        } else {
                            "no RBAC policy matched"
                        };
                        Ok(json!({"allowed": allowed, "reason": reason})
                            .to_string()
                            .into_bytes())
                    }
                }
            }
            Err(e) => Err(e),
        };
        self.exchanges.borrow_mut().push(exchange(
            &SessionRequest::KubernetesCanI {
                request: &r.subject_access_review,
                disable_cache: r.disable_cache,
            },
            &answer,
        ));
        answer
    }

    fn list_all_resources(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let call = format!("list-all {} {} {:?}", r.api_version, r.kind, r.field_masks);
        let answer = self.answer(call, &r.api_version, &r.kind, None);
        self.exchanges.borrow_mut().push(exchange(
            &SessionRequest::KubernetesListResourceAll(r),
            &answer,
        ));
        answer
    }

    fn list_resources_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        let call = format!(
            "list {} {} {} {:?}",
            r.api_version, r.kind, r.namespace, r.field_masks
        );
        let answer = self.answer(call, &r.api_version, &r.kind, None);
        self.exchanges.borrow_mut().push(exchange(
            &SessionRequest::KubernetesListResourceNamespace(r),
            &answer,
        ));
        answer
    }

    fn get_resource(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let call = format!(
            "get {} {} {:?}/{} {}",
            r.api_version, r.kind, r.namespace, r.name, r.disable_cache
        );
        let answer = self.answer(call, &r.api_version, &r.kind, Some(&r.name));
        self.exchanges
            .borrow_mut()
            .push(exchange(&SessionRequest::KubernetesGetResource(r), &answer));
        answer
    }
}
