//! The policy's typed requests to the host: [`list`], [`list_all`], [`get`] and the others add
//! the field masks, decode the answer into the one object view and turn a host error into a
//! [`Failure`].

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    ResourceAttributes, SubjectAccessReview,
};

use std::collections::BTreeSet;

use crate::host::{Host, classify};
use crate::list_reader::{Kinded, read_list};
use guard::capi::Object;
use guard::catalogue::Resource;
use guard::error::{Failure, Lookup, LookupError, ScanTarget};

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

fn failed(lookup: Lookup, text: &str) -> LookupError {
    LookupError {
        lookup,
        failure: classify(text),
        detail: first_line(text),
    }
}

fn unreadable(lookup: Lookup, detail: String) -> LookupError {
    LookupError {
        lookup,
        failure: Failure::Unreadable,
        detail,
    }
}

/// Whether an answer holds objects of the kind asked for (an answer without a kind passes).
fn kind_problem(found: &str, wanted: &str) -> Option<String> {
    (!found.is_empty() && found != wanted)
        .then(|| format!("the answer holds a {found} where a {wanted} was asked for"))
}

/// A list answer must say it is a list of the kind (or not say) and hold only objects of it;
/// `each` reads every item as it is decoded.
fn items<T: Kinded, U>(
    lookup: Lookup,
    kind: &str,
    answer: Result<Vec<u8>, String>,
    each: impl FnMut(T) -> U,
) -> Result<Vec<U>, LookupError> {
    let bytes = answer.map_err(|text| failed(lookup.clone(), &text))?;
    let list = read_list(&bytes, kind, each)
        .map_err(|e| unreadable(lookup.clone(), format!("the answer cannot be read: {e}")))?;
    let problem = kind_problem(
        list.kind.as_deref().unwrap_or_default(),
        &format!("{kind}List"),
    )
    .or_else(|| list.stray.and_then(|found| kind_problem(&found, kind)));
    match problem {
        Some(problem) => Err(unreadable(lookup, problem)),
        None => Ok(list.items),
    }
}

/// Lists `resource` at `version` in `namespace`, keeping only `masks`, with no selectors: each
/// distinct selector costs a permanent watch in the policy server. `each` reads every object as
/// it is decoded.
pub fn list<U>(
    host: &dyn Host,
    resource: &'static Resource,
    masks: BTreeSet<String>,
    (version, namespace): (&str, &str),
    each: impl FnMut(Object) -> U,
) -> Result<Vec<U>, LookupError> {
    let request = ListResourcesByNamespaceRequest {
        api_version: resource.api_version(version),
        kind: resource.kind.to_string(),
        namespace: namespace.to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(masks),
    };
    let answer = host.list_resources_by_namespace(&request);
    let lookup = Lookup::List {
        api_version: request.api_version,
        resource,
        namespace: request.namespace,
    };
    items(lookup, resource.kind, answer, each)
}

/// The part of a SubjectAccessReview's status the policy reads (k8s-openapi
/// `SubjectAccessReviewStatus`, camelCase on the wire).
#[derive(serde::Deserialize)]
struct AccessReview {
    allowed: bool,
    #[serde(default)]
    reason: Option<String>,
}

/// The `can_i` question before a scan's list: may `user`, a service account, list `plural` of
/// `api_version`'s group in `namespace`? The groups are those Kubernetes gives every service
/// account, so that a binding to them counts too. The policy server caches the answer for 5 s
/// (policy-evaluator `callback_handler/kubernetes.rs` `can_i_cached`@v1.36.0-beta.1).
pub fn can_i_list(user: &str, api_version: &str, plural: &str, namespace: &str) -> CanIRequest {
    let account_namespace = user.split(':').nth(2).unwrap_or_default();
    CanIRequest {
        subject_access_review: SubjectAccessReview {
            groups: Some(vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{account_namespace}"),
                "system:authenticated".to_string(),
            ]),
            resource_attributes: ResourceAttributes {
                group: Some(guard::capi::group_of(api_version).to_string()),
                name: None,
                namespace: Some(namespace.to_string()),
                resource: plural.to_string(),
                subresource: None,
                verb: "list".to_string(),
                version: None,
            },
            user: user.to_string(),
        },
        disable_cache: false,
    }
}

/// Asks the host whether the policy server may list a kind before the scan lists it: a list the
/// API server refuses never returns to the policy (the host's reflector retries it, and the
/// guest waits inside the host call, where the evaluation timeout cannot interrupt it), so it
/// would hold a policy-server worker until the API server's webhook timeout and a thread until
/// the RBAC is fixed (docs/operations.md, measured live). A refusal, or a question
/// the host cannot answer, fails the scan at once (closed), naming the RBAC rule to add.
pub fn may_list(
    host: &dyn Host,
    user: &str,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: &str,
) -> Result<(), LookupError> {
    let request = can_i_list(user, api_version, plural, namespace);
    let lookup = Lookup::Scan(Box::new(ScanTarget {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        plural: plural.to_string(),
        namespace: namespace.to_string(),
    }));
    let group = guard::capi::group_of(api_version);
    let bytes = host.can_i(&request).map_err(|text| match classify(&text) {
        Failure::CapabilityDenied => failed(lookup.clone(), &text),
        // The SubjectAccessReview itself failed (no `create` on subjectaccessreviews, the API
        // server): the hint of a refusal applies, with the host's words.
        _ => LookupError {
            lookup: lookup.clone(),
            failure: Failure::NotPermitted,
            detail: format!(
                "the host could not ask whether {user} may list {plural}.{group}: {}",
                first_line(&text)
            ),
        },
    })?;
    let review: AccessReview = serde_json::from_slice(&bytes).map_err(|e| {
        unreadable(
            lookup.clone(),
            format!("the SubjectAccessReview answer cannot be read: {e}"),
        )
    })?;
    if review.allowed {
        return Ok(());
    }
    let reason = review
        .reason
        .filter(|r| !r.is_empty())
        .map(|r| format!(" ({})", first_line(&r)))
        .unwrap_or_default();
    Err(LookupError {
        lookup,
        failure: Failure::NotPermitted,
        detail: format!(
            "{user} may not list {plural}.{group} in namespace {namespace}, says a SubjectAccessReview{reason}"
        ),
    })
}

/// An item of a list across namespaces, kept as its text: its namespace, which [`Object`] does
/// not keep, is read from it beside the object. Its kind is checked once it is decoded.
#[derive(serde::Deserialize)]
#[serde(transparent)]
struct Whole(Box<serde_json::value::RawValue>);

impl Kinded for Whole {
    fn kind(&self) -> &str {
        ""
    }
}

/// The namespace of a listed object, and nothing else of it.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct InNamespace {
    metadata: NamespaceOf,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct NamespaceOf {
    #[serde(deserialize_with = "guard::metadata::nullable")]
    namespace: String,
}

/// Lists `resource` at `version` in every namespace, keeping `masks` and each object's
/// namespace, for a kind whose references may name a template in another namespace. `each` reads
/// every object with its namespace. Such lists are of MachineDeployments, MachineSets and control
/// planes, a few per Cluster: reading each item's text twice costs little there, and decodes it
/// with the same code as every other list (no second decoder in the module).
pub fn list_across_namespaces<U>(
    host: &dyn Host,
    resource: &'static Resource,
    mut masks: BTreeSet<String>,
    version: &str,
    mut each: impl FnMut(Object, String) -> U,
) -> Result<Vec<U>, LookupError> {
    masks.insert("metadata.namespace".to_string());
    let request = ListAllResourcesRequest {
        api_version: resource.api_version(version),
        kind: resource.kind.to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(masks),
    };
    let answer = host.list_all_resources(&request);
    let lookup = Lookup::ListAll {
        api_version: request.api_version,
        resource,
    };
    let texts = items(lookup.clone(), resource.kind, answer, |item: Whole| item.0)?;
    let unreadable_item = |detail: String| unreadable(lookup.clone(), detail);
    texts
        .into_iter()
        .map(|text| {
            let bytes = text.get().as_bytes();
            let read = |e: serde_json::Error| format!("the answer cannot be read: {e}");
            let object: Object =
                serde_json::from_slice(bytes).map_err(|e| unreadable_item(read(e)))?;
            let at: InNamespace =
                serde_json::from_slice(bytes).map_err(|e| unreadable_item(read(e)))?;
            if let Some(problem) = kind_problem(&object.kind, resource.kind) {
                return Err(unreadable_item(problem));
            }
            Ok(each(object, at.metadata.namespace))
        })
        .collect()
}

/// Lists a kind the catalogue does not know whole (`api_version`, `kind` and `plural` from its
/// CRD) in `namespace`, keeping `masks` (the scan's, and a known kind's own reads).
pub fn list_scanned(
    host: &dyn Host,
    api_version: String,
    kind: &str,
    plural: &str,
    masks: BTreeSet<String>,
    namespace: &str,
) -> Result<Vec<Object>, LookupError> {
    let request = ListResourcesByNamespaceRequest {
        api_version,
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(masks),
    };
    let answer = host.list_resources_by_namespace(&request);
    let lookup = Lookup::Scan(Box::new(ScanTarget {
        api_version: request.api_version,
        kind: request.kind,
        plural: plural.to_string(),
        namespace: request.namespace,
    }));
    items(lookup, kind, answer, |object| object)
}

/// Lists `resource` cluster-wide (the CRDs), keeping only its masks, each item decoded into `T`
/// (a view that reads no more than the caller needs).
pub fn list_all<T: Kinded>(
    host: &dyn Host,
    resource: &'static Resource,
    version: &str,
) -> Result<Vec<T>, LookupError> {
    let request = ListAllResourcesRequest {
        api_version: resource.api_version(version),
        kind: resource.kind.to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(guard::catalogue::masks_of(resource)),
    };
    let answer = host.list_all_resources(&request);
    let lookup = Lookup::ListAll {
        api_version: request.api_version,
        resource,
    };
    items(lookup, resource.kind, answer, |item| item)
}

/// Whether a read may be answered from the policy server's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Cached,
    /// Straight from the API server: for an object that may have been created a moment ago.
    Direct,
}

/// One object to read.
#[derive(Debug, Clone)]
pub struct Get<'a> {
    pub resource: &'static Resource,
    pub masks: BTreeSet<String>,
    pub version: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub read: Read,
}

/// Gets one object, keeping only the masks; `Ok(None)` when it does not exist.
pub fn get(host: &dyn Host, get: Get<'_>) -> Result<Option<Object>, LookupError> {
    let request = GetResourceRequest {
        api_version: get.resource.api_version(get.version),
        kind: get.resource.kind.to_string(),
        name: get.name.to_string(),
        namespace: Some(get.namespace.to_string()),
        disable_cache: get.read == Read::Direct,
        field_masks: Some(get.masks),
    };
    let result = host.get_resource(&request);
    let lookup = Lookup::Get {
        api_version: request.api_version,
        resource: get.resource,
        namespace: get.namespace.to_string(),
        name: request.name,
    };
    let bytes = match result {
        Ok(bytes) => bytes,
        Err(text) => {
            return match classify(&text) {
                Failure::NotFound => Ok(None),
                _ => Err(failed(lookup, &text)),
            };
        }
    };
    let object: Object = serde_json::from_slice(&bytes)
        .map_err(|e| unreadable(lookup.clone(), format!("the answer cannot be read: {e}")))?;
    match kind_problem(&object.kind, get.resource.kind) {
        Some(problem) => Err(unreadable(lookup, problem)),
        None => Ok(Some(object)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeHost;
    use guard::capi::Object;
    use guard::catalogue::{CLUSTER, REFERRERS, cluster_kind};
    use rstest::rstest;

    const V2: &str = "cluster.x-k8s.io/v1beta2";

    fn machine_sets() -> &'static Resource {
        &REFERRERS[1].resource
    }

    fn list_at_v2(host: &FakeHost) -> Result<Vec<Object>, LookupError> {
        let at = ("v1beta2", "ns");
        list(host, machine_sets(), REFERRERS[1].masks(), at, |object| {
            object
        })
    }

    fn list_machine_sets(answer: &str) -> Result<Vec<Object>, LookupError> {
        list_at_v2(&FakeHost::new().answer_list(V2, "MachineSet", answer))
    }

    /// What each get of a Cluster in these tests asks for.
    fn get_cluster<'a>(name: &'a str, read: Read) -> Get<'a> {
        Get {
            resource: &CLUSTER,
            masks: cluster_kind().masks(),
            version: "v1beta2",
            namespace: "ns",
            name,
            read,
        }
    }

    #[test]
    fn list_sends_the_catalogue_masks_and_no_selectors() {
        let host = FakeHost::new().answer_list(
            V2,
            "MachineSet",
            r#"{"apiVersion":"host.x-k8s.io/v1beta2","kind":"MachineSetList","items":[{"kind":"MachineSet","metadata":{"name":"a"}}]}"#,
        );
        let listed = list_at_v2(&host).unwrap();
        assert_eq!(listed[0].metadata.name, "a");
        assert_eq!(
            host.calls(),
            vec!["list cluster.x-k8s.io/v1beta2 MachineSet ns"]
        );
        // The FakeHost asserts no selectors; the masks are the catalogue's, written out.
        assert_eq!(
            host.sent_masks(0),
            [
                "metadata.annotations",
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
                "spec.replicas",
                "spec.template.spec.bootstrap.configRef",
                "spec.template.spec.infrastructureRef",
                "status.replicas"
            ]
        );
    }

    #[test]
    fn a_scan_sends_the_scan_masks_and_names_the_kind_it_lists() {
        let host = FakeHost::new().fail_list(
            "controlplane.cluster.x-k8s.io/v1beta3",
            "FooControlPlane",
            "Policy has not been granted access to Kubernetes controlplane.cluster.x-k8s.io/v1beta3/FooControlPlane resources. The violation has been reported.",
        );
        let error = list_scanned(
            &host,
            "controlplane.cluster.x-k8s.io/v1beta3".into(),
            "FooControlPlane",
            "foocontrolplanes",
            guard::catalogue::SCAN_MASKS
                .iter()
                .map(|m| m.to_string())
                .collect(),
            "ns",
        )
        .unwrap_err();
        assert_eq!(error.failure, Failure::AccessDenied);
        assert_eq!(
            (error.lookup.kind(), error.lookup.plural()),
            ("FooControlPlane", "foocontrolplanes")
        );
        assert_eq!(host.sent_masks(0), guard::catalogue::SCAN_MASKS);
    }

    #[rstest]
    #[case::no_items(
        r#"{"kind":"MachineSetList"}"#,
        "the answer cannot be read: missing field `items`"
    )]
    #[case::null_items(
        r#"{"kind":"MachineSetList","items":null}"#,
        "the answer cannot be read: invalid type: null, expected a sequence"
    )]
    #[case::other_list_kind(
        r#"{"kind":"MachineDeploymentList","items":[]}"#,
        "the answer holds a MachineDeploymentList where a MachineSetList was asked for"
    )]
    #[case::item_of_other_kind(r#"{"kind":"MachineSetList","items":[{"kind":"MachineSet","metadata":{"name":"a"}},{"kind":"Machine","metadata":{"name":"b"}}]}"#, "the answer holds a Machine where a MachineSet was asked for")]
    #[case::wrong_type(
        r#"{"items":[{"metadata":{"name":1}}]}"#,
        "the answer cannot be read: invalid type: integer `1`"
    )]
    #[case::not_json("<html>", "the answer cannot be read: expected value")]
    fn an_answer_that_is_not_the_list_asked_for_is_unreadable(
        #[case] answer: &str,
        #[case] detail: &str,
    ) {
        let error = list_machine_sets(answer).unwrap_err();
        assert_eq!(error.failure, Failure::Unreadable);
        assert!(error.detail.starts_with(detail), "{}", error.detail);
    }

    #[test]
    fn an_empty_list_is_empty() {
        assert_eq!(
            list_machine_sets(r#"{"kind":"MachineSetList","items":[]}"#),
            Ok(vec![])
        );
    }

    #[test]
    fn a_failed_list_keeps_the_first_line_of_the_host_text() {
        let host = FakeHost::new().fail_list(
            V2,
            "MachineSet",
            "Callback evaluation failure: boom\n\nCaused by:\n  deeper",
        );
        let error = list_at_v2(&host).unwrap_err();
        assert_eq!(error.failure, Failure::Other);
        assert_eq!(error.detail, "Callback evaluation failure: boom");
    }

    #[test]
    fn a_missing_object_is_none_and_a_cached_read_says_so() {
        let host = FakeHost::new().fail_get(
            V2,
            "Cluster",
            "edge-a",
            "Callback evaluation failure: Cannot find cluster.x-k8s.io/v1beta2/Cluster named 'edge-a' inside of namespace 'Some(\"ns\")'",
        );
        assert_eq!(get(&host, get_cluster("edge-a", Read::Cached)), Ok(None));
        assert_eq!(
            host.calls(),
            vec!["get cluster.x-k8s.io/v1beta2 Cluster ns/edge-a cache=true"]
        );
        assert_eq!(host.masks(), vec![Some(cluster_kind().masks())]);
    }

    #[rstest]
    #[case::denied(
        "Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta2/Cluster resources. The violation has been reported.",
        Failure::AccessDenied
    )]
    #[case::not_served(
        "Callback evaluation failure: Cannot find resource cluster.x-k8s.io/v1beta2/Cluster",
        Failure::Other
    )]
    fn a_failed_get_is_an_error(#[case] text: &str, #[case] failure: Failure) {
        let host = FakeHost::new().fail_get(V2, "Cluster", "c", text);
        let error = get(&host, get_cluster("c", Read::Direct)).unwrap_err();
        assert_eq!(error.failure, failure);
        assert_eq!(
            host.calls()[0],
            "get cluster.x-k8s.io/v1beta2 Cluster ns/c cache=false"
        );
    }

    #[test]
    fn a_get_answer_of_another_kind_is_unreadable() {
        let host = FakeHost::new().answer_get(
            V2,
            "Cluster",
            "c",
            r#"{"kind":"Secret","metadata":{"name":"c"}}"#,
        );
        let error = get(&host, get_cluster("c", Read::Cached)).unwrap_err();
        assert_eq!(error.failure, Failure::Unreadable);
    }
}
