//! Kubernetes Events (`events.k8s.io/v1`) on what a pass decided: one per template it decided
//! about, and one on the guard's ClusterAdmissionPolicy when the pass stopped (docs/cleanup.md,
//! "Events"). `kubectl describe` and `kubectl events --for` then say why a template is still there.
//!
//! The Event is the one kube-runtime's `Recorder` writes (kube-rs 5.0.0 `kube-runtime/src/events.rs`,
//! `generate_event`: action, reason, note, regarding, reportingController, reportingInstance,
//! eventTime, type), but its series is kept across passes, which the `Recorder` cannot do: its
//! series lives in the process (a cache that forgets an Event after six minutes, `CACHE_TTL`), it
//! names each Event after the time it was made, and `Reporter::from` takes the host name, the
//! Job's pod, as the immutable `reportingInstance`. A pass is one process an hour. So an Event is
//! named after what it says (the template, the reason, the note...), a later pass finds it by that
//! name with a PATCH that changes nothing (the job may only create and patch Events) and adds to
//! its `series`; a different note is a different Event, since kube-apiserver keeps `note`,
//! `reason`, `action`, `eventTime` and `reportingInstance` immutable
//! (`pkg/apis/core/validation/events.go`, `ValidateEventUpdate`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use template_cleanup_core::answer::TemplateOutcome;
use template_cleanup_core::select::Skip;

use crate::api::{CallError, Cluster};
use crate::report::{EventCounts, Report, TemplateLine, age};

/// `reportingController`, and `reportingInstance` too: the same for every pass, so that a later
/// pass can add to an Event's series (the field is immutable).
pub const CONTROLLER: &str = "template-cleanup";

/// The default of `--events-per-pass`.
pub const PER_PASS: usize = 500;

/// kube-apiserver refuses a longer note (`NoteLengthLimit`, in bytes).
const NOTE_LIMIT: usize = 1024;

/// What one Event says, and about what.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub regarding: ObjectReference,
    /// Where the Event is written: the template's namespace, or `default` for the guard's
    /// ClusterAdmissionPolicy (an Event about a cluster-scoped object must be in `default` or
    /// `kube-system`: `legacyValidateEvent`).
    pub namespace: String,
    pub warning: bool,
    pub reason: &'static str,
    pub action: &'static str,
    pub note: String,
}

/// The reason of a template's Event, and whether it is a warning: the verdict, in CamelCase.
pub fn reason(outcome: &TemplateOutcome) -> (&'static str, bool) {
    match outcome {
        TemplateOutcome::Deleted => ("TemplateDeleted", false),
        TemplateOutcome::DeletionStarted => ("TemplateDeletionStarted", false),
        TemplateOutcome::KeptByGuard(_) | TemplateOutcome::KeptByDecision(_) => {
            ("TemplateKept", false)
        }
        TemplateOutcome::Left(_) => ("TemplateLeft", false),
        TemplateOutcome::Gone => ("TemplateAlreadyGone", false),
        TemplateOutcome::Changed(_) => ("TemplateChanged", false),
        TemplateOutcome::Failed(_) => ("DeleteFailed", true),
        TemplateOutcome::NotTried => ("TemplateNotTried", true),
    }
}

/// Why: the report's text for the template, opened by what the pass did. No age and no time, so
/// that the same verdict for the same reason joins the series of the last pass's Event.
pub fn note(outcome: &TemplateOutcome, policy: &str, min_age: i64) -> String {
    let detail = outcome.detail().unwrap_or_default();
    let text = match outcome {
        TemplateOutcome::Deleted => format!(
            "Deleted: the guard {policy} let its DELETE through, so nothing it checks still needs this template."
        ),
        TemplateOutcome::DeletionStarted => format!(
            "Deletion started: the guard {policy} let its DELETE through; the template's finalizers are pending, and their holders finish the deletion."
        ),
        TemplateOutcome::KeptByGuard(text) => {
            format!("Kept: the guard {policy} refused its DELETE: {text}")
        }
        TemplateOutcome::KeptByDecision(text) => format!(
            "Kept: no DELETE sent, as the guard's own decision over what this pass listed keeps it: {text}"
        ),
        TemplateOutcome::Left(Skip::TooYoung) => format!(
            "No DELETE sent: younger than --min-age ({}); a later pass tries it.",
            age(min_age)
        ),
        TemplateOutcome::Left(skip) => format!("No DELETE sent: {skip}."),
        TemplateOutcome::Gone => "Already gone when its DELETE was sent.".to_string(),
        TemplateOutcome::Changed(_) => format!("Not deleted: {detail}."),
        TemplateOutcome::Failed(text) => format!("Its DELETE failed: {text}"),
        TemplateOutcome::NotTried => format!("Not tried: {detail}."),
    };
    bounded(text)
}

/// `text` within kube-apiserver's 1,024 bytes, cut at a character with `...` when longer.
pub fn bounded(mut text: String) -> String {
    if text.len() > NOTE_LIMIT {
        let mut end = NOTE_LIMIT - 3;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// The Event of one template's line.
pub fn for_template(
    line: &TemplateLine,
    outcome: &TemplateOutcome,
    policy: &str,
    min_age: i64,
) -> Record {
    let (reason, warning) = reason(outcome);
    let action = match outcome {
        // no DELETE was sent for these
        TemplateOutcome::Left(_) | TemplateOutcome::KeptByDecision(_) => "Select",
        _ => "Delete",
    };
    Record {
        regarding: ObjectReference {
            api_version: Some(line.api_version.clone()),
            kind: Some(line.kind.clone()),
            namespace: Some(line.namespace.clone()),
            name: Some(line.name.clone()),
            uid: Some(line.uid.clone()).filter(|u| !u.is_empty()),
            ..ObjectReference::default()
        },
        namespace: line.namespace.clone(),
        warning,
        reason,
        action,
        note: note(outcome, policy, min_age),
    }
}

/// The Event of a pass that stopped, on the guard's ClusterAdmissionPolicy (`uid` when it could
/// be read): `CleanupRefused` before the first DELETE (nothing was deleted), `CleanupStopped`
/// after a re-check found the guard changed.
pub fn for_stop(policy: &str, uid: Option<String>, before_any_delete: bool, why: &str) -> Record {
    let (reason, action) = if before_any_delete {
        ("CleanupRefused", "PreFlight")
    } else {
        ("CleanupStopped", "Recheck")
    };
    Record {
        regarding: ObjectReference {
            api_version: Some("policies.kubewarden.io/v1".into()),
            kind: Some("ClusterAdmissionPolicy".into()),
            name: Some(policy.to_string()),
            uid,
            ..ObjectReference::default()
        },
        namespace: "default".into(),
        warning: true,
        reason,
        action,
        note: bounded(why.to_string()),
    }
}

/// FNV-1a (64 bits) of `parts`, each ended by a zero byte: the same in every build and release,
/// unlike std's hasher.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

impl Record {
    /// `<name>.<16 hex digits>`, the digits a hash of everything kube-apiserver keeps immutable on
    /// the Event: the same Event from one pass to the next, another when any of it differs. The
    /// name part is cut so that the whole is a DNS subdomain of at most 253 characters.
    pub fn name(&self) -> String {
        let r = &self.regarding;
        let field = |f: &Option<String>| f.clone().unwrap_or_default();
        let hash = fnv1a(&[
            &field(&r.api_version),
            &field(&r.kind),
            &self.namespace,
            &field(&r.name),
            &field(&r.uid),
            if self.warning { "Warning" } else { "Normal" },
            self.reason,
            self.action,
            &self.note,
            CONTROLLER,
        ]);
        let name = field(&r.name);
        let mut stem: String = name.chars().take(253 - 17).collect();
        while stem.ends_with(['-', '.']) {
            stem.pop();
        }
        format!("{stem}.{hash:016x}")
    }

    /// The Event as first written, at `now` (seconds since the epoch).
    pub fn event(&self, now: i64) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(self.name()),
                namespace: Some(self.namespace.clone()),
                labels: Some(
                    [(
                        "app.kubernetes.io/managed-by".to_string(),
                        CONTROLLER.to_string(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            action: Some(self.action.into()),
            reason: Some(self.reason.into()),
            note: Some(self.note.clone()),
            regarding: Some(self.regarding.clone()),
            reporting_controller: Some(CONTROLLER.into()),
            reporting_instance: Some(CONTROLLER.into()),
            event_time: Some(micro_time(now)),
            type_: Some(if self.warning { "Warning" } else { "Normal" }.into()),
            ..Event::default()
        }
    }
}

fn micro_time(now: i64) -> MicroTime {
    MicroTime(Timestamp::from_second(now).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// One Event written: new, or added to the series of the same Event from an earlier pass (its
/// count afterwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    New,
    Series(i32),
}

/// Writes `record`'s Event at `now`: a PATCH that changes nothing finds an earlier pass's Event of
/// the same name, which gets `series` (count one more, `lastObservedTime` now; the PATCH carries
/// the resourceVersion read, so a concurrent writer makes it fail rather than count twice); a 404
/// creates it.
pub async fn write(cluster: &Cluster, record: &Record, now: i64) -> Result<Written, CallError> {
    let name = record.name();
    match cluster
        .patch_event(&record.namespace, &name, &json!({}))
        .await
    {
        Ok(existing) => {
            let count = existing
                .series
                .as_ref()
                .map_or(1, |s| s.count)
                .saturating_add(1);
            let patch = json!({
                "metadata": {"resourceVersion": existing.metadata.resource_version},
                "series": {"count": count, "lastObservedTime": micro_time(now)},
            });
            cluster
                .patch_event(&record.namespace, &name, &patch)
                .await?;
            Ok(Written::Series(count))
        }
        Err(e) if e.code() == Some(404) => {
            cluster
                .create_event(&record.namespace, &record.event(now))
                .await?;
            Ok(Written::New)
        }
        Err(e) => Err(e),
    }
}

/// The order in which a pass's Events are written, most telling first, so that those over the
/// cap are the least telling: failed, not tried, kept, changed, deletion started, deleted, already
/// gone, left.
fn priority(outcome: &TemplateOutcome) -> u8 {
    match outcome {
        TemplateOutcome::Failed(_) => 0,
        TemplateOutcome::NotTried => 1,
        TemplateOutcome::KeptByGuard(_) | TemplateOutcome::KeptByDecision(_) => 2,
        TemplateOutcome::Changed(_) => 3,
        TemplateOutcome::DeletionStarted => 4,
        TemplateOutcome::Deleted => 5,
        TemplateOutcome::Gone => 6,
        TemplateOutcome::Left(_) => 7,
    }
}

/// The Events of a pass, in the order they are written: `first` (a stop), then one per template
/// line, by [`priority`] and then in the pass's order.
pub fn records(
    first: Option<Record>,
    lines: &[TemplateLine],
    policy: &str,
    min_age: i64,
) -> Vec<Record> {
    let mut decided: Vec<(&TemplateLine, &TemplateOutcome)> = lines
        .iter()
        .filter_map(|l| l.outcome.as_ref().map(|o| (l, o)))
        .collect();
    decided.sort_by_key(|(_, o)| priority(o));
    first
        .into_iter()
        .chain(
            decided
                .into_iter()
                .map(|(l, o)| for_template(l, o, policy, min_age)),
        )
        .collect()
}

/// Writes `records`, at most `cap` of them, counts them in `report.events` and prints the summary
/// line. A failure never stops the pass: its first is printed once; after a 401 or 403 (RBAC), or
/// a 404 on a create (the API is not served), the rest are not sent and count as failed.
pub async fn record(
    cluster: &Cluster,
    records: Vec<Record>,
    cap: usize,
    now: i64,
    report: &mut Report,
) {
    let mut counts = EventCounts {
        cap,
        over_cap: records.len().saturating_sub(cap),
        ..EventCounts::default()
    };
    let mut given_up = false;
    for record in records.iter().take(cap) {
        if given_up {
            counts.failed += 1;
            continue;
        }
        match write(cluster, record, now).await {
            Ok(Written::New) => counts.new += 1,
            Ok(Written::Series(_)) => counts.series += 1,
            Err(e) => {
                given_up = matches!(e.code(), Some(401 | 403 | 404));
                if counts.failed == 0 {
                    let rest = if given_up {
                        "no more Events are sent in this pass (the job needs create and patch on events.k8s.io events)"
                    } else {
                        "the pass goes on, and counts any other failure in its events line"
                    };
                    report.say(&format!(
                        "events: cannot record {} on {} {}/{}: {e}; {rest}",
                        record.reason,
                        record.regarding.kind.as_deref().unwrap_or_default(),
                        record
                            .regarding
                            .namespace
                            .as_deref()
                            .unwrap_or(&record.namespace),
                        record.regarding.name.as_deref().unwrap_or_default(),
                    ));
                }
                counts.failed += 1;
            }
        }
    }
    counts.recorded = counts.new + counts.series;
    report.say(&counts.line());
    report.events = Some(counts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_note_is_cut_within_the_limit_at_a_character() {
        let note = bounded("é".repeat(600));
        assert!(
            note.len() <= NOTE_LIMIT && note.ends_with("..."),
            "{}",
            note.len()
        );
        assert_eq!(bounded("short".into()), "short");
    }

    #[test]
    fn the_name_is_stable_and_changes_with_the_note() {
        let record = for_stop(
            "capi-template-guard-cleanup",
            None,
            true,
            "pre-flight check `guard exists` failed.",
        );
        assert_eq!(record.name(), record.clone().name());
        assert!(
            record.name().starts_with("capi-template-guard-cleanup."),
            "{}",
            record.name()
        );
        assert_eq!(
            record.name().len(),
            "capi-template-guard-cleanup".len() + 17
        );
        let other = for_stop("capi-template-guard-cleanup", None, true, "another reason");
        assert_ne!(record.name(), other.name());
        let long = for_stop(&format!("{}-x", "a".repeat(235)), None, true, "x");
        assert!(
            long.name().len() <= 253 && !long.name().contains("-."),
            "{}",
            long.name()
        );
    }
}
