//! What the API server's answer to one DELETE means. Only the guard's own refusal keeps a
//! template; every other failure fails the pass, so that a broken guard or missing RBAC shows up
//! as a failed Job rather than as silently kept templates. The same reading judges the live probe
//! (`crate::probe`).

use serde::Serialize;

use crate::select::{ListedTemplate, Skip};

/// A failed answer, from its `Status` body (`code`, `reason`, `message`,
/// `details.causes[].message`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorStatus {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub causes: Vec<String>,
    /// `details.kind` and `details.name`: what a 404 says was not found (a resource's plural, or
    /// `namespaces`). Boxed: most answers carry none, and every call's error holds one.
    pub details: Option<Box<Details>>,
}

/// A `Status`'s `details.kind` and `details.name`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Details {
    pub kind: String,
    pub name: String,
}

/// What became of one listed template: the verdict of its line in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome", content = "detail")]
pub enum TemplateOutcome {
    /// 2xx, and the object is gone (or, in a dry run, would be).
    Deleted,
    /// 2xx, and the answer is the object with `metadata.deletionTimestamp` set: finalizers are
    /// pending, and their holders finish the deletion.
    DeletionStarted,
    /// The guard refused: its text.
    KeptByGuard(String),
    /// No DELETE sent: the guard's own decision, taken by template-cleanup over what it listed,
    /// keeps it. The guard's text.
    KeptByDecision(String),
    /// No DELETE sent: why (declared, too young, being deleted, never judged).
    Left(Skip),
    /// 404: already gone.
    Gone,
    /// 409 because the uid or resourceVersion precondition failed: kube-apiserver's text.
    Changed(String),
    /// Anything else; the pass exits 1.
    Failed(String),
    /// Not sent: the pass stopped before it (a webhook that could not be called, or a change of
    /// the guard seen by a re-check).
    NotTried,
}

impl TemplateOutcome {
    /// The verdict word of the report's line (`dry_run`: a 2xx deleted nothing).
    pub fn verdict(&self, dry_run: bool) -> &'static str {
        match self {
            TemplateOutcome::Deleted if dry_run => "would delete",
            TemplateOutcome::Deleted => "deleted",
            TemplateOutcome::DeletionStarted if dry_run => "would start deletion",
            TemplateOutcome::DeletionStarted => "deletion started",
            TemplateOutcome::KeptByGuard(_) | TemplateOutcome::KeptByDecision(_) => "kept",
            TemplateOutcome::Left(_) => "left",
            TemplateOutcome::Gone => "already gone",
            TemplateOutcome::Changed(_) => "changed",
            TemplateOutcome::Failed(_) => "failed",
            TemplateOutcome::NotTried => "not tried",
        }
    }

    /// What the line says after the verdict, if anything.
    pub fn detail(&self) -> Option<String> {
        match self {
            TemplateOutcome::KeptByGuard(text) | TemplateOutcome::Failed(text) => {
                Some(text.clone())
            }
            TemplateOutcome::Changed(text) => Some(format!(
                "changed since it was listed, the next pass looks again ({text})"
            )),
            TemplateOutcome::KeptByDecision(text) => Some(format!(
                "no DELETE sent: the guard's own decision over what this pass listed keeps it: {text}"
            )),
            TemplateOutcome::Left(skip) => Some(skip.to_string()),
            TemplateOutcome::NotTried => {
                Some("the pass stopped before this DELETE; the next pass tries it".to_string())
            }
            TemplateOutcome::Deleted | TemplateOutcome::DeletionStarted | TemplateOutcome::Gone => {
                None
            }
        }
    }
}

/// Whether a failed DELETE means that an admission webhook could not be called at all:
/// kube-apiserver's `failed calling webhook "<name>": ...` (k8s.io/apiserver v0.36.3
/// `pkg/admission/plugin/webhook/errors/errors.go`, `ErrCallingWebhook.Error`), an internal error
/// (500) when the webhook's failurePolicy is Fail, a timeout included. Every later DELETE would
/// wait for the same webhook and fail the same way, so the pass stops there.
pub fn webhook_unreachable(answer: &ErrorStatus) -> bool {
    answer.code == 500 && answer.message.contains("failed calling webhook")
}

/// The name kube-apiserver quotes for the guard's webhook: the policy's unique name
/// (`clusterwide-<name>` for a ClusterAdmissionPolicy, kubewarden-controller
/// `api/policies/v1/clusteradmissionpolicy_types.go`, `GetUniqueName`) and
/// `.kubewarden.admission`, the suffix `internal/controller/policy_subreconciler_webhook.go:61`
/// appends (v1.36.0-beta.1).
pub fn guard_webhook(policy: &str) -> String {
    format!("clusterwide-{policy}.kubewarden.admission")
}

/// A 404 that is not about the template itself: `Some(failed)`, naming what is missing. The
/// registry answers a missing object with `NewNotFound(resource, name)`, whose `details` carry
/// the resource's plural and the object's name (k8s.io/apimachinery `pkg/api/errors`,
/// `NewNotFound`); a webhook with a namespaceSelector answers the DELETE of a template whose
/// Namespace is gone (force-finalized) with 404 `namespaces "<ns>" not found`, details
/// `{kind: namespaces, name: <ns>}` (k8s.io/apiserver `pkg/admission/plugin/namespace/lifecycle`
/// and the webhook's namespace matcher). Only the first is `already gone`; the template is still
/// there in the second, and the line says which namespace is missing.
pub fn not_found_elsewhere(
    template: &ListedTemplate,
    answer: &ErrorStatus,
) -> Option<TemplateOutcome> {
    let details = answer.details.as_deref().cloned().unwrap_or_default();
    if answer.code != 404 || details.kind == template.kind.plural && details.name == template.name {
        return None;
    }
    let missing = match (details.kind.as_str(), details.name.as_str()) {
        ("namespaces", ns) => format!(
            "its namespace {ns} does not exist (it was force-finalized, or is being recreated)"
        ),
        ("", "") => "the answer does not name what was not found".to_string(),
        (kind, name) => format!("the API server did not find {kind} {name:?}, not the template"),
    };
    Some(TemplateOutcome::Failed(format!(
        "404 {}: {}: {missing}, so the template {}/{} in namespace {} may still be there and was not deleted. Recreate the Namespace {} (kubectl create namespace {}) so that the guard can judge the DELETE, or delete the template by hand once you know nothing uses it.",
        answer.reason,
        answer.message,
        template.namespace,
        template.name,
        template.namespace,
        template.namespace,
        template.namespace
    )))
}

/// What kube-apiserver's Conflict says when a DELETE's preconditions failed: `rest.BeforeDelete`'s
/// two texts (uid, resourceVersion), then `Preconditions.Check`'s (see [`classify`]).
const PRECONDITION_FAILED: [&str; 3] = [
    "does not match the UID in record",
    "does not match the ResourceVersion in record",
    "Precondition failed: ",
];

/// The answer to a DELETE: `None` for 2xx, else the refusal. `policy` is the guard policy's name.
///
/// - 409 with kube-apiserver's webhook denial text for the guard's webhook, `admission webhook
///   "<name>" denied the request: <message>` (k8s.io/apiserver
///   `pkg/admission/plugin/webhook/errors/statuserror.go`, `ToStatusErr`): kept, quoting the
///   guard's message. When the policy sets `spec.message`, Kubewarden replaces the message with it
///   and appends the policy's own text to `details.causes` (kubewarden-controller v1.36.0-beta.1
///   `crates/policy-evaluator/src/admission_response_handler.rs`,
///   `apply_custom_rejection_message`, which pushes after the causes already there). The guard
///   sets no causes of its own, so the first cause is its text, which is quoted instead.
/// - 409 `Conflict` because the uid/resourceVersion preconditions failed: the template was
///   replaced or changed since it was listed; kept for the next pass to judge. kube-apiserver says
///   so in one of two places (k8s.io/apiserver v0.36.3). Usually `rest.BeforeDelete`
///   (`pkg/registry/rest/delete.go:83-92`, called by `Store.Delete` in
///   `pkg/registry/generic/registry/store.go` on the object it has just read) answers, with "the
///   UID in the precondition (..) does not match the UID in record (..). The object might have
///   been deleted and then recreated" or "the ResourceVersion in the precondition (..) does not
///   match the ResourceVersion in record (..). The object might have been modified". Only when
///   the object changes between that read and the storage's delete does
///   `pkg/storage/interfaces.go` `Preconditions.Check` answer, "Precondition failed: UID in
///   precondition: ..." (through `storeerr.InterpretDeleteError`, also a Conflict). The guard is
///   asked in neither case: both come before admission's delete validation
///   (`pkg/storage/etcd3/store.go`, `conditionalDelete`).
/// - 404: already gone. Anything else: failed.
pub fn classify(policy: &str, answer: Option<&ErrorStatus>) -> TemplateOutcome {
    let Some(r) = answer else {
        return TemplateOutcome::Deleted;
    };
    let denial = format!(
        "admission webhook \"{}\" denied the request",
        guard_webhook(policy)
    );
    match r.code {
        404 => TemplateOutcome::Gone,
        409 if r.message.starts_with(&denial) => {
            let own = r.message[denial.len()..].trim_start_matches(':').trim();
            let quoted = r
                .causes
                .first()
                .map(String::as_str)
                .filter(|c| !c.is_empty())
                .unwrap_or(own);
            TemplateOutcome::KeptByGuard(quoted.to_string())
        }
        409 if r.reason == "Conflict"
            && PRECONDITION_FAILED.iter().any(|t| r.message.contains(t)) =>
        {
            TemplateOutcome::Changed(r.message.clone())
        }
        code if r.reason.is_empty() => TemplateOutcome::Failed(format!("{code}: {}", r.message)),
        code => TemplateOutcome::Failed(format!("{code} {}: {}", r.reason, r.message)),
    }
}
