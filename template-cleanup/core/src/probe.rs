//! The live probe: before the first DELETE, a server-side dry-run DELETE (`dryRun=All`) of a
//! template the guard is sure to keep must come back as the guard's refusal. The policy's status
//! is what Kubewarden wants; only an answer proves that the pods the webhook calls run the policy
//! in protect mode with rules that cover the template (a validating webhook with
//! `sideEffects: None` is called on dry-run requests, and the guard answers them as real ones).
//!
//! Which template the guard is sure to keep is the guard's own decision (`guard::decision`),
//! taken here over what the pass has read: the MachineDeployments and MachineSets of the
//! template's namespace, read field by field as the guard reads them, and the states of the Clusters that own the
//! template. Those are a part of what the deployed guard reads, and a part keeps no more than
//! the whole: each further referrer can only keep the template too. So a template this decision
//! keeps, the deployed guard keeps, and no rule of the decision is written here.

use std::collections::BTreeMap;

use guard::capi::{Object, Template};
use guard::catalogue::{self, ReferrerKind, TemplateClass};
use guard::decision::{decide, Decision};
use guard::error::LookupError;
use guard::lookups::{ClusterState, Lookups, Scanned};
use guard::message;
use guard::references::{take_candidate, Candidate};
use guard::settings::Settings;
use serde_json::Value;

use crate::answer::{classify, ErrorStatus, TemplateOutcome};

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

/// The referrers a pass has listed (every kind of the guard's referrer table that the cluster
/// serves, Clusters included), each read as the guard reads it (its catalogue entry's fields),
/// by kind and namespace.
#[derive(Debug, Default)]
pub struct Referrers {
    by_kind: BTreeMap<(&'static str, String), Vec<Candidate>>,
}

impl Referrers {
    /// Adds a listed object of `kind`, a kind of the guard's referrer table (another kind is
    /// ignored). One without a namespace is not a namespaced object as listed and is skipped;
    /// one with a field of another shape is an error, as the guard's own list of it fails (then
    /// it refuses every DELETE that asks it).
    pub fn add(&mut self, kind: &str, object: &Value) -> Result<(), String> {
        let namespace = guard::metadata::namespace_of(object);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (Some(entry), false) = (catalogue::referrer_named(kind), namespace.is_empty()) else {
            return Ok(());
        };
        let mut read: Object = serde_json::from_value(object.clone())
            .map_err(|e| format!("{kind} {namespace}/{name} cannot be read: {e}"))?;
        let mut candidate = take_candidate(entry, &mut read).map_err(|bad| {
            format!(
                "{kind} {namespace}/{name} cannot be read: {} is not {}",
                bad.field, bad.expected
            )
        })?;
        // Listed at the version its apiVersion gives, as the guard lists it at one version.
        let version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.rsplit('/').next())
            .unwrap_or("");
        candidate.owner_read_first = entry.owner_read_first(version);
        self.by_kind
            .entry((entry.kind(), namespace))
            .or_default()
            .push(candidate);
        Ok(())
    }

    /// The templates that MachineDeployments not being deleted name, sorted, each once: the
    /// probe's possible targets (what a MachineSet names may be an old revision the guard lets
    /// go once scaled down).
    pub fn named(&self) -> Vec<Named> {
        let mut named: Vec<Named> = self
            .by_kind
            .iter()
            .filter(|((kind, _), _)| *kind == MACHINE_DEPLOYMENT)
            .flat_map(|((_, namespace), candidates)| {
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
                            namespace: namespace.clone(),
                            name: reference.name.clone(),
                        })
                    })
            })
            .collect();
        named.sort();
        named.dedup();
        named
    }

    /// The guard's decision on `template`, read as a template of `target`'s group and kind,
    /// over the listed referrers of its namespace, with the deployed guard's `settings`.
    pub fn guard_decides(&self, target: &Named, template: &Value, settings: &Settings) -> Verdict {
        let Some(class) = catalogue::template_class(&target.group, &target.kind) else {
            return Verdict::Releases(format!(
                "{}.{} is not a kind the guard protects",
                target.kind, target.group
            ));
        };
        match read_template(target, class, template) {
            Ok(template) => self.decide(&template, settings),
            Err(why) => Verdict::Releases(why),
        }
    }

    /// The guard's decision on a template it has read, as [`Referrers::guard_decides`]. A
    /// Cluster that was not listed counts as gone, which lets go of more, never less: a template
    /// kept here is kept by the deployed guard too.
    pub fn decide(&self, template: &Template, settings: &Settings) -> Verdict {
        let mut lookups = PassLookups {
            referrers: self,
            namespace: &template.namespace,
        };
        match decide(template, settings, &mut lookups) {
            Ok(Decision::Keep(referrers)) => Verdict::Keeps(message::in_use(template, &referrers)),
            Ok(Decision::Release(reason)) => Verdict::Releases(message::released(template, reason)),
            // PassLookups answers every lookup; kept for the trait's sake.
            Err(error) => Verdict::Releases(message::lookup_failed(template, &error)),
        }
    }
}

/// What the guard's own decision says of a probe target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It keeps the template, with the message it would answer: a target that proves.
    Keeps(String),
    /// It would let it go, or cannot read it: no proof either way. Why.
    Releases(String),
}

fn read_template(
    target: &Named,
    class: TemplateClass,
    template: &Value,
) -> Result<Template, String> {
    Template::from_object(&target.group, &target.kind, class, template)
        .map_err(|e| format!("the guard cannot read it: {}", message::describe(&e)))
}

/// Why a template, as read, is no target (`None`: it may be one): one being deleted may be gone
/// before the probe's DELETE reaches it, whatever the guard decides.
pub fn being_deleted(template: &Value) -> bool {
    template
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The guard's [`Lookups`] answered from what the pass has read: the listed referrers of the
/// template's namespace and the listed Clusters' states (one not listed counts as gone). Kinds
/// the catalogue does not know are not scanned.
struct PassLookups<'a> {
    referrers: &'a Referrers,
    namespace: &'a str,
}

impl Lookups for PassLookups<'_> {
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError> {
        Ok(self
            .referrers
            .by_kind
            .get(&(kind.kind(), self.namespace.to_string()))
            .cloned()
            .unwrap_or_default())
    }

    fn scanned(&mut self, _: TemplateClass, _: bool) -> Result<Vec<Scanned>, LookupError> {
        Ok(Vec::new())
    }

    fn referrer(
        &mut self,
        _: &'static ReferrerKind,
        _: &str,
    ) -> Result<Option<Candidate>, LookupError> {
        Ok(None)
    }

    /// The listed Cluster of that name, as the guard's own GET reads it (src/lookups.rs).
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError> {
        let key = (catalogue::CLUSTER.kind, self.namespace.to_string());
        let mut listed = self.referrers.by_kind.get(&key).into_iter().flatten();
        Ok(match listed.find(|c| c.name == name) {
            None => ClusterState::Gone,
            Some(c) if c.deleting => ClusterState::Deleting,
            Some(_) => ClusterState::Live,
        })
    }

    fn metal3_machine_template(&mut self, _: &str) -> Result<Option<Object>, LookupError> {
        Ok(None)
    }
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
