//! The live probe: before the first DELETE, a server-side dry-run DELETE (`dryRun=All`) of a
//! template the guard is sure to keep must come back as the guard's refusal. The policy's status
//! is what Kubewarden wants; only an answer proves that the pods the webhook calls run the policy
//! in protect mode with rules that cover the template (a validating webhook with
//! `sideEffects: None` is called on dry-run requests, and the guard answers them as real ones).
//!
//! Which template the guard is sure to keep is the guard's own decision over what the pass has
//! listed ([`crate::delete_decision`]); this module picks the candidates, the templates live
//! MachineDeployments name ([`targets`]), and reads the answer to the dry-run DELETE ([`judge`]).

use serde_json::Value;

use crate::answer::{ErrorStatus, TemplateOutcome, classify};
use crate::delete_decision::Referrers;

/// A template a MachineDeployment names: group, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Named {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// The kind whose objects the probe's targets come from.
pub const MACHINE_DEPLOYMENT: &str = "MachineDeployment";

/// The templates that live MachineDeployments name, in the referrers the pass `listed`, sorted,
/// each once: the probe's possible targets (what a MachineSet names may be an old revision the
/// guard lets go once scaled down).
pub fn targets(listed: &Referrers) -> Vec<Named> {
    let mut named: Vec<Named> = listed
        .of_kind(MACHINE_DEPLOYMENT)
        .flat_map(|(namespace, candidates)| {
            candidates
                .iter()
                .filter(|c| !c.deleting)
                .flat_map(|c| &c.named)
                .filter_map(move |n| {
                    let reference = &n.reference;
                    let group = reference.group()?;
                    (!reference.kind.is_empty() && !reference.name.is_empty()).then(|| Named {
                        group: group.to_string(),
                        kind: reference.kind.clone(),
                        namespace: namespace.to_string(),
                        name: reference.name.clone(),
                    })
                })
        })
        .collect();
    named.sort();
    named.dedup();
    named
}

/// Whether a template, as read, is no target: one being deleted may be gone before the probe's
/// DELETE reaches it, whatever the guard decides.
pub fn being_deleted(template: &Value) -> bool {
    template
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// What the answer to the probe's dry-run DELETE means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The guard refused: it judges. Its text.
    Judged(String),
    /// The template went or changed meanwhile: read it again, or try another.
    Moved,
    /// Anything else: the guard does not judge as its objects say. What came back.
    NotJudged(String),
}

/// Reads the answer to the probe's dry-run DELETE (`None`: 2xx, the DELETE would have gone
/// through).
pub fn judge(policy: &str, answer: Option<&ErrorStatus>) -> Probe {
    match classify(policy, answer) {
        TemplateOutcome::KeptByGuard(text) => Probe::Judged(text),
        TemplateOutcome::Gone | TemplateOutcome::Changed(_) => Probe::Moved,
        TemplateOutcome::Deleted | TemplateOutcome::DeletionStarted => Probe::NotJudged(
            "2xx: the DELETE would have gone through, so the pods that answer do not refuse it (monitor mode, an older configuration, or rules that miss it)".to_string(),
        ),
        TemplateOutcome::Failed(text) => Probe::NotJudged(text),
        TemplateOutcome::Left(_)
        | TemplateOutcome::NotTried
        | TemplateOutcome::KeptByDecision(_) => Probe::NotJudged("no answer".to_string()),
    }
}
