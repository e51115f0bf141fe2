//! Why a pass stops, typed. Each reason is a variant holding the facts it names; its `Display`
//! (thiserror's) is the sentence the report, the pass's Event and standard error show, and the
//! error underneath it, where there is one, is its `source` (as kube-rs's controller-rs types its
//! own). The pre-flight's [`Refusal`] stays typed up to the report.

use template_cleanup_core::declared::ObjectError;
use template_cleanup_core::delete_decision::UnreadableReferrer;
use template_cleanup_core::helm::ReleaseError;
use template_cleanup_core::preflight::Refusal;
use template_cleanup_core::select::Unidentified;
use thiserror::Error;

use crate::api::CallError;

/// Why a pass stops: before its first DELETE (nothing deleted, exit 2), or when the guard is
/// checked again during the pass and has changed.
#[derive(Debug, Error)]
pub enum Error {
    #[error("no Kubernetes configuration (kubeconfig or in-cluster): {source}.")]
    NoConfiguration {
        #[source]
        source: ConfigError,
    },
    #[error(
        "cannot ask the API server who this job is (a SelfSubjectReview, authentication.k8s.io/v1, Kubernetes 1.28 or later): {source}. Without it the pass cannot know which policy judges its DELETEs."
    )]
    WhoAmI {
        #[source]
        source: CallError,
    },
    #[error("cannot read the ClusterAdmissionPolicy {name}: {source}.")]
    ReadPolicy {
        name: String,
        #[source]
        source: CallError,
    },
    /// On a re-check; before the first DELETE it is the refusal of the check that the
    /// webhook is installed.
    #[error("cannot read the ValidatingWebhookConfiguration {configuration}: {source}.")]
    ReadWebhook {
        configuration: String,
        #[source]
        source: CallError,
    },
    /// The pre-flight refused.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(
        "the ValidatingWebhookConfiguration {configuration} now sends DELETEs to the guard by other rules, namespaceSelector or matchConditions than when the pass began."
    )]
    WebhookChanged { configuration: String },
    #[error("cannot discover the API groups of the guard's rules: {source}.")]
    Discover {
        #[source]
        source: CallError,
    },
    #[error(transparent)]
    Sources(#[from] SourceError),
    #[error("cannot list {resource}: {source}.")]
    ListTemplates {
        resource: String,
        #[source]
        source: CallError,
    },
    #[error(transparent)]
    Unidentified(#[from] Unidentified),
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

/// Why the client could not be configured.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error(transparent)]
    Infer(#[from] kube::config::InferConfigError),
    #[error(transparent)]
    Client(#[from] kube::Error),
}

/// Why a deploy tool's desired state cannot be read (`crate::sources`, `crate::helm`).
#[derive(Debug, Error)]
pub enum SourceError {
    /// One of its objects is not as the tool writes it.
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("cannot read {name} (installed, {api_version}): {source}.")]
    List {
        name: &'static str,
        api_version: String,
        #[source]
        source: CallError,
    },
    /// `place`: `every namespace` or `namespace <name>`.
    #[error("cannot read Helm's release Secrets in {place}: {source}.")]
    HelmSecrets {
        place: String,
        #[source]
        source: CallError,
    },
    #[error("cannot read Helm's release Secret {namespace}/{name}: {source}.")]
    HelmSecret {
        namespace: String,
        name: String,
        #[source]
        source: CallError,
    },
}

/// Why a current Helm revision, listed, cannot be read: its release counts as unreadable, and
/// the pass goes on.
#[derive(Debug, Error)]
pub enum RevisionError {
    #[error(
        "its Secret {secret} was deleted after it was listed, by an upgrade or Helm's history limit; the next pass reads the release again"
    )]
    Deleted { secret: String },
    #[error(transparent)]
    Release(#[from] ReleaseError),
}

/// Why the live probe proved nothing, and the pass stops (`crate::probe`). `what` names the
/// target (`metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use`).
#[derive(Debug, Error)]
pub enum ProbeError {
    #[error(
        "the probe cannot list {resource}: {source}. The job needs list on {resource} (examples/cleanup/component/cleanup.yaml)."
    )]
    List {
        resource: String,
        #[source]
        source: CallError,
    },
    /// The deployed guard fails its own list of them the same way.
    #[error("the probe cannot read the referrers as the guard reads them: {source}.")]
    Referrers {
        #[source]
        source: UnreadableReferrer,
    },
    #[error("the probe cannot read {what}: {source}.")]
    Read {
        what: String,
        #[source]
        source: CallError,
    },
    #[error(
        "the probe, a dry-run DELETE of {what}, which a MachineDeployment uses, got no answer: {source}."
    )]
    NoAnswer {
        what: String,
        #[source]
        source: CallError,
    },
    /// What came back instead of the guard's refusal.
    #[error(
        "the probe, a dry-run DELETE of {what}, which a MachineDeployment uses, did not come back as the guard's refusal: {answer}. The guard does not judge as its policy and webhook say (its pods may run monitor mode or an older configuration)."
    )]
    NotJudged { what: String, answer: String },
    /// Live targets existed; none held still `times` times in a row.
    #[error("the probe could not finish: {} changed or went away between its read and its dry-run DELETE, {times} times each, and no other template in use could be probed. Run the pass again once the deploy tool that recreates them has settled.", .moved.join(", "))]
    Unsettled { moved: Vec<String>, times: usize },
}
