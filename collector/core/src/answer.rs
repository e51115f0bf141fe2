//! What the API server's answer to one DELETE means. Only the guard's own refusal keeps a
//! template; every other failure fails the pass, so that a broken guard or missing RBAC shows up
//! as a failed Job rather than as silently kept templates.

use serde::Serialize;

/// A failed answer, from its `Status` body (`code`, `reason`, `message`,
/// `details.causes[].message`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Refused {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub causes: Vec<String>,
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome", content = "detail")]
pub enum Outcome {
    /// 2xx: deleted (or, in a dry run, would be).
    Deleted,
    /// Kept: the guard's refusal, or an object changed since it was listed; the text says which.
    Kept(String),
    /// 404: already gone.
    Gone,
    /// Anything else; the pass exits 1.
    Failed(String),
}

/// The name kube-apiserver quotes for the guard's webhook: the policy's unique name
/// (`clusterwide-<name>` for a ClusterAdmissionPolicy, kubewarden-controller
/// `api/policies/v1/clusteradmissionpolicy_types.go`, `GetUniqueName`) and
/// `.kubewarden.admission` (`internal/constants/constants.go`, `WebhookNameSuffix`).
pub fn guard_webhook(guard: &str) -> String {
    format!("clusterwide-{guard}.kubewarden.admission")
}

/// The answer to a DELETE: `None` for 2xx, else the refusal. `guard` is the policy's name.
///
/// - 409 with kube-apiserver's webhook denial text for the guard's webhook, `admission webhook
///   "<name>" denied the request: <message>` (k8s.io/apiserver
///   `pkg/admission/plugin/webhook/errors/statuserror.go`, `ToStatusErr`): kept, quoting the
///   guard's message. When the policy sets `spec.message`, Kubewarden puts the policy's own text in
///   `details.causes` (`PolicySpec.Message`), which is quoted instead.
/// - 409 without it: the uid/resourceVersion preconditions failed (k8s.io/apiserver
///   `pkg/storage/interfaces.go`, `Preconditions.Check`, answered as a Conflict "Operation cannot
///   be fulfilled on ...: Precondition failed: ..."): the template was replaced or changed since it
///   was listed; kept for the next pass to judge. The guard is not asked then: preconditions are
///   checked before admission's delete validation (`pkg/storage/etcd3/store.go`,
///   `conditionalDelete`).
/// - 404: already gone. Anything else: failed.
pub fn classify(guard: &str, answer: Option<&Refused>) -> Outcome {
    let Some(r) = answer else {
        return Outcome::Deleted;
    };
    let denial = format!(
        "admission webhook \"{}\" denied the request",
        guard_webhook(guard)
    );
    match r.code {
        404 => Outcome::Gone,
        409 if r.message.starts_with(&denial) => {
            let own = r.message[denial.len()..].trim_start_matches(':').trim();
            let quoted = r
                .causes
                .first()
                .map(String::as_str)
                .filter(|c| !c.is_empty())
                .unwrap_or(own);
            Outcome::Kept(format!("kept: {quoted}"))
        }
        409 if r.message.contains("Precondition failed") => Outcome::Kept(format!(
            "kept: changed since it was listed, the next pass looks again ({})",
            r.message
        )),
        code if r.reason.is_empty() => Outcome::Failed(format!("failed: {code}: {}", r.message)),
        code => Outcome::Failed(format!("failed: {code} {}: {}", r.reason, r.message)),
    }
}
