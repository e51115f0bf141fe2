//! Every call to the API server: the guard policy, discovery, paged lists and the DELETEs. Each
//! call is bounded by `--request-timeout`; reads are retried with backoff ([`retrying_reads`]); a
//! failed answer is read from its HTTP status and `Status` body, never from a log.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResourceList, ObjectMeta};
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Preconditions, PropagationPolicy,
};
use kube::client::Body;
use kube::client::retry::RetryPolicy;
use serde_json::Value;
use template_cleanup_core::ServedKind;
use template_cleanup_core::answer::{Details, ErrorStatus};
use template_cleanup_core::preflight::Served;
use template_cleanup_core::select::ListedTemplate;
use tower::BoxError;
use tower::retry::{Policy, RetryLayer};
use tower::timeout::TimeoutLayer;

/// Items per page of a metadata-only list; longer lists follow `continue`.
const PAGE: u32 = 500;

/// Items per page of a list of whole objects (deploy tools' sources, MachineDeployments): a
/// Kustomization's inventory or an Application's resources can be large, and a page is held
/// whole while it is decoded.
const FULL_PAGE: u32 = 100;

/// Retries reads: kube-rs's [`RetryPolicy`] (exponential backoff with jitter from 500 ms to 5 s,
/// three retries, on 429, 503 and 504: kube-rs 5.0.0 `kube-client/src/client/retry.rs`), and, as that
/// policy leaves them out, up to three more on a 500 or 502 and on an attempt that got no answer
/// within `--request-timeout` ([`per_attempt`]), after 0.5, 1 and 2 s. A DELETE is never sent
/// twice: its answer decides, and a DELETE sent again after a 504 could report the first one's
/// deletion as "already gone". This is the client's only retry layer ([`client`] leaves out
/// kube's own, which retries every method).
#[derive(Clone)]
pub struct Reads {
    kube: RetryPolicy,
    /// Retries spent on 500, 502 and timeouts.
    more: u32,
}

/// The most retries of a read on 500, 502 or a timeout.
const MORE: u32 = 3;

/// Whether an error is an attempt that ran out of time ([`per_attempt`]).
fn elapsed(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<tower::timeout::error::Elapsed>() {
            return true;
        }
        cause = e.source();
    }
    false
}

impl<Res> Policy<http::Request<Body>, http::Response<Res>, BoxError> for Reads {
    type Future =
        <RetryPolicy as Policy<http::Request<Body>, http::Response<Res>, BoxError>>::Future;

    fn retry(
        &mut self,
        request: &mut http::Request<Body>,
        result: &mut Result<http::Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        if request.method() != http::Method::GET {
            return None;
        }
        let transient = match result {
            Ok(response) => matches!(response.status().as_u16(), 500 | 502),
            Err(error) => elapsed(error.as_ref()),
        };
        if !transient {
            return self.kube.retry(request, result);
        }
        if self.more == MORE {
            return None;
        }
        self.more += 1;
        Some(tokio::time::sleep(Duration::from_millis(250 << self.more)))
    }

    fn clone_request(&mut self, request: &http::Request<Body>) -> Option<http::Request<Body>> {
        if request.method() == http::Method::GET {
            <RetryPolicy as Policy<http::Request<Body>, http::Response<Res>, BoxError>>::clone_request(&mut self.kube, request)
        } else {
            None
        }
    }
}

/// The client of a pass, from the kubeconfig or in-cluster `config`: kube's own stack without
/// its retry layer, each attempt bounded by `timeout` ([`per_attempt`]) and reads retried
/// ([`retrying_reads`]), behind a buffer because retrying clones the service.
///
/// `config.default_retry` is turned off: while it is on, `ClientBuilder::try_from` adds kube's
/// default retry layer, `RetryPolicy::server_retry()` (up to 15 retries on 429, 503 and 504 of
/// any method, backoff up to 1,000 s: kube-rs 5.0.0 `kube-client/src/client/builder.rs`,
/// `make_generic_builder`), which would send a DELETE again.
pub fn client(mut config: kube::Config, timeout: Duration) -> Result<Client, kube::Error> {
    config.connect_timeout = Some(timeout);
    config.default_retry = false;
    let builder = kube::client::ClientBuilder::try_from(config)?;
    Ok(builder
        .with_layer(&tower::buffer::BufferLayer::new(64))
        .with_layer(&per_attempt(timeout))
        .with_layer(&retrying_reads())
        .build())
}

/// The layer that retries reads, for the client's service stack, above [`per_attempt`].
pub fn retrying_reads() -> RetryLayer<Reads> {
    RetryLayer::new(Reads {
        kube: RetryPolicy::default(),
        more: 0,
    })
}

/// The layer that bounds each attempt of a request by `--request-timeout`.
pub fn per_attempt(timeout: Duration) -> TimeoutLayer {
    TimeoutLayer::new(timeout)
}

/// A call that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The API server answered with an error status.
    #[error("{} {}: {}", .0.code, .0.reason, .0.message)]
    Status(ErrorStatus),
    /// No answer (timeout, connection) or one that cannot be read, as kube-rs describes it.
    #[error("{0}")]
    Other(String),
}

/// Why [`Cluster::list_each`] stopped: the API server's answer, or the caller's error on an item.
#[derive(Debug)]
pub enum ListError<E> {
    Call(CallError),
    Item(E),
}

impl<E> From<CallError> for ListError<E> {
    fn from(e: CallError) -> Self {
        ListError::Call(e)
    }
}

impl CallError {
    pub fn code(&self) -> Option<u16> {
        match self {
            CallError::Status(r) => Some(r.code),
            CallError::Other(_) => None,
        }
    }
}

fn from_kube(e: kube::Error) -> CallError {
    match e {
        kube::Error::Api(status) => CallError::Status(ErrorStatus {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
            causes: status
                .details
                .as_ref()
                .map(|d| d.causes.iter().map(|c| c.message.clone()).collect())
                .unwrap_or_default(),
            details: status.details.as_ref().map(|d| {
                Box::new(Details {
                    kind: d.kind.clone(),
                    name: d.name.clone(),
                })
            }),
        }),
        other => CallError::Other(other.to_string()),
    }
}

pub struct Cluster {
    client: Client,
    timeout: Duration,
}

impl Cluster {
    pub fn new(client: Client, timeout: Duration) -> Self {
        Self { client, timeout }
    }

    pub fn default_namespace(&self) -> &str {
        self.client.default_namespace()
    }

    async fn call<T>(
        &self,
        what: &str,
        future: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, CallError> {
        // each attempt is bounded by the client's per_attempt layer
        match future.await {
            Ok(value) => Ok(value),
            Err(kube::Error::Service(e)) if elapsed(e.as_ref()) => Err(CallError::Other(format!(
                "{what}: no answer within {}s (--request-timeout)",
                self.timeout.as_secs()
            ))),
            Err(e) => Err(from_kube(e)),
        }
    }

    /// Who the API server says this client is: a SelfSubjectReview (`authentication.k8s.io/v1`,
    /// GA since Kubernetes 1.28), the username it returns.
    pub async fn who_am_i(&self) -> Result<String, CallError> {
        use k8s_openapi::api::authentication::v1::SelfSubjectReview;
        let api: Api<SelfSubjectReview> = Api::all(self.client.clone());
        let review = self
            .call(
                "create selfsubjectreviews",
                api.create(
                    &kube::api::PostParams::default(),
                    &SelfSubjectReview::default(),
                ),
            )
            .await?;
        review
            .status
            .and_then(|s| s.user_info)
            .and_then(|u| u.username)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                CallError::Other("the SelfSubjectReview came back without a username".into())
            })
    }

    /// A cluster-scoped object by name; `Ok(None)` when the API server says 404.
    pub async fn get_cluster_object(
        &self,
        resource: &ApiResource,
        name: &str,
    ) -> Result<Option<Value>, CallError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), resource);
        match self
            .call(&format!("get {} {name}", resource.plural), api.get(name))
            .await
        {
            Ok(object) => to_json(&object).map(Some),
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A namespaced object by name; `Ok(None)` when the API server says 404.
    pub async fn get(
        &self,
        kind: &ServedKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, CallError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &api_resource(kind));
        let what = format!("get {} {namespace}/{name}", kind.resource());
        match self.call(&what, api.get(name)).await {
            Ok(object) => to_json(&object).map(Some),
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The resources of `groups` the API server serves, every served version (GET /apis, then
    /// GET /apis/{group}/{version}). A group it does not serve is left out.
    pub async fn discover(&self, groups: &[String]) -> Result<Vec<Served>, CallError> {
        let served = self
            .call("discovery", self.client.list_api_groups())
            .await?;
        let mut out = Vec::new();
        for group in served.groups.iter().filter(|g| groups.contains(&g.name)) {
            let preferred = group.preferred_version.as_ref().map(|v| v.version.clone());
            for version in &group.versions {
                let list: APIResourceList = self
                    .call(
                        &format!("discovery of {}", version.group_version),
                        self.client.list_api_group_resources(&version.group_version),
                    )
                    .await?;
                for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
                    out.push(Served {
                        kind: ServedKind {
                            group: group.name.clone(),
                            version: version.version.clone(),
                            kind: r.kind.clone(),
                            plural: r.name.clone(),
                        },
                        namespaced: r.namespaced,
                        preferred: preferred.as_deref() == Some(version.version.as_str()),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Every object of `kind` with `selector` (empty: all) in `namespaces` (`None`: all
    /// namespaces), handed to `each` one at a time, page by page, following `continue`: no page is
    /// kept once read, so a pass holds only what `each` keeps. `metadata_only`: the API server
    /// sends each object's metadata alone (`PartialObjectMetadataList`), and `each` gets
    /// `{"metadata": ...}`. Returns how many there were; the first error of `each` stops the list
    /// and is returned as it is.
    pub async fn list_each<E>(
        &self,
        kind: &ServedKind,
        namespaces: Option<&[String]>,
        selector: &str,
        metadata_only: bool,
        mut each: impl FnMut(Value) -> Result<(), E>,
    ) -> Result<usize, ListError<E>> {
        let resource = api_resource(kind);
        let apis: Vec<Api<DynamicObject>> = match namespaces {
            None => vec![Api::all_with(self.client.clone(), &resource)],
            Some(list) => list
                .iter()
                .map(|ns| Api::namespaced_with(self.client.clone(), ns, &resource))
                .collect(),
        };
        let what = format!("list {}", kind.resource());
        let mut count = 0;
        for api in apis {
            let mut token: Option<String> = None;
            loop {
                let mut params =
                    ListParams::default().limit(if metadata_only { PAGE } else { FULL_PAGE });
                if !selector.is_empty() {
                    params = params.labels(selector);
                }
                if let Some(token) = &token {
                    params = params.continue_token(token);
                }
                let next = if metadata_only {
                    let page = self.call(&what, api.list_metadata(&params)).await?;
                    count += page.items.len();
                    for item in page.items {
                        let metadata = serde_json::to_value(&item.metadata).map_err(|e| {
                            CallError::Other(format!(
                                "cannot read an object the API server returned: {e}"
                            ))
                        })?;
                        each(serde_json::json!({ "metadata": metadata }))
                            .map_err(ListError::Item)?;
                    }
                    page.metadata.continue_
                } else {
                    let page = self.call(&what, api.list(&params)).await?;
                    count += page.items.len();
                    for item in page.items {
                        each(to_json(&item)?).map_err(ListError::Item)?;
                    }
                    page.metadata.continue_
                };
                token = next.filter(|t| !t.is_empty());
                if token.is_none() {
                    break;
                }
            }
        }
        Ok(count)
    }

    /// One DELETE of a listed template: background propagation, preconditions on uid and
    /// resourceVersion, a server-side dry run when asked. Never a grace period, never a finalizer
    /// change. `Ok(true)`: 2xx, and finalizers are pending (the answer is the object, with
    /// `metadata.deletionTimestamp` set); `Ok(false)`: 2xx, gone.
    pub async fn delete(
        &self,
        template: &ListedTemplate,
        dry_run: bool,
    ) -> Result<bool, CallError> {
        self.delete_object(
            &template.kind,
            &template.namespace,
            &template.name,
            Preconditions {
                uid: Some(template.uid.clone()),
                resource_version: Some(template.resource_version.clone()),
            },
            dry_run,
        )
        .await
    }

    /// The probe's DELETE: a server-side dry run (`dryRun=All`), with a precondition on the uid it
    /// read.
    pub async fn probe_delete(
        &self,
        kind: &ServedKind,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<bool, CallError> {
        let preconditions = Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        };
        self.delete_object(kind, namespace, name, preconditions, true)
            .await
    }

    async fn delete_object(
        &self,
        kind: &ServedKind,
        namespace: &str,
        name: &str,
        preconditions: Preconditions,
        dry_run: bool,
    ) -> Result<bool, CallError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &api_resource(kind));
        let params = DeleteParams {
            dry_run,
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(preconditions),
            ..DeleteParams::default()
        };
        let what = format!("delete {} {namespace}/{name}", kind.resource());
        let answer = self.call(&what, api.delete(name, &params)).await?;
        Ok(answer
            .left()
            .is_some_and(|object| object.metadata.deletion_timestamp.is_some()))
    }
}

/// Helm's release storage (`template-cleanup/src/helm.rs`): Secrets as metadata only, and one by
/// name.
impl Cluster {
    /// The metadata of every Secret matching `selector` in `namespace` (`None`: every namespace),
    /// handed to `each` page by page, following `continue`: the answers carry no Secret data
    /// (`PartialObjectMetadataList`), and no page is held once read. Returns how many there were.
    pub async fn list_secret_metadata(
        &self,
        namespace: Option<&str>,
        selector: &str,
        mut each: impl FnMut(ObjectMeta),
    ) -> Result<usize, CallError> {
        let api: Api<Secret> = match namespace {
            None => Api::all(self.client.clone()),
            Some(ns) => Api::namespaced(self.client.clone(), ns),
        };
        let mut count = 0;
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(PAGE).labels(selector);
            if let Some(token) = &token {
                params = params.continue_token(token);
            }
            let page = self
                .call("list secrets (metadata)", api.list_metadata(&params))
                .await?;
            count += page.items.len();
            for item in page.items {
                each(item.metadata);
            }
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(count);
            }
        }
    }

    /// One Secret by name; `Ok(None)` when the API server says 404.
    pub async fn get_secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Secret>, CallError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        match self
            .call(&format!("get secret {namespace}/{name}"), api.get(name))
            .await
        {
            Ok(secret) => Ok(Some(secret)),
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

pub fn api_resource(kind: &ServedKind) -> ApiResource {
    ApiResource {
        group: kind.group.clone(),
        version: kind.version.clone(),
        api_version: kind.api_version(),
        kind: kind.kind.clone(),
        plural: kind.plural.clone(),
    }
}

fn to_json(object: &DynamicObject) -> Result<Value, CallError> {
    serde_json::to_value(object).map_err(|e| {
        CallError::Other(format!(
            "cannot read an object the API server returned: {e}"
        ))
    })
}

/// The only writes besides the DELETEs: Events (`crate::events`) and OpenReports Reports
/// (`crate::openreports`). None is retried.
impl Cluster {
    /// A merge PATCH of the Event `name` in `namespace`; the Event as it is afterwards. `{}`
    /// changes nothing, and reads it: the job may create and patch Events, not get them.
    pub async fn patch_event(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<k8s_openapi::api::events::v1::Event, CallError> {
        let api: Api<k8s_openapi::api::events::v1::Event> =
            Api::namespaced(self.client.clone(), namespace);
        let what = format!("patch events.events.k8s.io {namespace}/{name}");
        let params = kube::api::PatchParams::default();
        self.call(
            &what,
            api.patch(name, &params, &kube::api::Patch::Merge(patch)),
        )
        .await
    }

    /// Creates `event` in `namespace`.
    pub async fn create_event(
        &self,
        namespace: &str,
        event: &k8s_openapi::api::events::v1::Event,
    ) -> Result<(), CallError> {
        let api: Api<k8s_openapi::api::events::v1::Event> =
            Api::namespaced(self.client.clone(), namespace);
        let what = format!("create events.events.k8s.io in {namespace}");
        let params = kube::api::PostParams::default();
        self.call(&what, api.create(&params, event)).await.map(drop)
    }

    /// Server-side apply of `object` (field manager `template-cleanup`, forced): created when
    /// missing, its fields replaced when not.
    pub async fn apply(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
        object: &Value,
    ) -> Result<(), CallError> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, resource);
        let what = format!(
            "apply {}.{} {namespace}/{name}",
            resource.plural, resource.group
        );
        let params = kube::api::PatchParams::apply("template-cleanup").force();
        self.call(
            &what,
            api.patch(name, &params, &kube::api::Patch::Apply(object)),
        )
        .await
        .map(drop)
    }
}
