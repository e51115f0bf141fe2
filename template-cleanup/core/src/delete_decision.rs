//! The guard's own decision over what a pass has listed: before each DELETE, whether the guard
//! keeps the template (then the pass sends it no DELETE, whatever mode the deployed guard is in);
//! and which template the probe may target (one the guard is sure to keep).
//!
//! It is the guard's decision (`guard::decision`), taken over a part of what the deployed guard
//! reads: the referrers of the template's namespace, each listed kind of the guard's referrer
//! table read field by field as the guard reads it, and the states of the Clusters that own the
//! template. A part keeps no more than the whole: each further referrer can only keep the
//! template too. So a template this decision keeps, the deployed guard keeps, and no rule of the
//! decision is written here: this module answers the guard's `Lookups` port from what was listed.

use std::collections::BTreeMap;

use guard::capi::{Object, Template};
use guard::catalogue::{self, ReferrerKind, TemplateClass};
use guard::decision::{Decision, decide};
use guard::error::LookupError;
use guard::lookups::{ClusterState, Lookups, Scanned};
use guard::message;
use guard::references::{BadField, Candidate, take_candidate};
use guard::settings::Settings;
use serde_json::Value;

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
    pub fn add(&mut self, kind: &str, object: &Value) -> Result<(), UnreadableReferrer> {
        let namespace = guard::metadata::namespace_of(object);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (Some(entry), false) = (catalogue::referrer_named(kind), namespace.is_empty()) else {
            return Ok(());
        };
        let what = || format!("{kind} {namespace}/{name}");
        let mut read: Object = serde_json::from_value(object.clone()).map_err(|source| {
            UnreadableReferrer::Object {
                what: what(),
                source,
            }
        })?;
        let mut candidate = take_candidate(entry, &mut read)
            .map_err(|bad| UnreadableReferrer::Field { what: what(), bad })?;
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

    /// The listed objects of `kind`, by namespace: what the probe picks its targets from.
    pub fn of_kind<'a>(
        &'a self,
        kind: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a [Candidate])> + 'a {
        self.by_kind
            .iter()
            .filter(move |((listed, _), _)| *listed == kind)
            .map(|((_, namespace), candidates)| (namespace.as_str(), candidates.as_slice()))
    }

    /// The guard's decision on `template`, as the API server returned it, read as a template of
    /// `group` and `kind`, over the listed referrers of its namespace, with the deployed guard's
    /// `settings`: the probe picks its target with it.
    pub fn guard_decides(
        &self,
        group: &str,
        kind: &str,
        template: &Value,
        settings: &Settings,
    ) -> Verdict {
        let Some(class) = catalogue::template_class(group, kind) else {
            return Verdict::Releases(format!("{kind}.{group} is not a kind the guard protects"));
        };
        match Template::from_object(group, kind, class, template) {
            Ok(template) => self.decide(&template, settings),
            Err(e) => Verdict::Releases(format!(
                "the guard cannot read it: {}",
                message::describe(&e)
            )),
        }
    }

    /// The guard's decision on a template it has read, as [`Referrers::guard_decides`]: the pass
    /// takes it before each DELETE, and sends none for a template it keeps. A Cluster that was
    /// not listed counts as gone, which lets go of more, never less: a template kept here is kept
    /// by the deployed guard too.
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

/// A listed referrer the guard cannot read, as the guard's own list of it fails (then it refuses
/// every DELETE that asks it). `what` names it (`MachineDeployment edge/md`).
#[derive(Debug, thiserror::Error)]
pub enum UnreadableReferrer {
    #[error("{what} cannot be read: {source}")]
    Object {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what} cannot be read: {} is not {}", .bad.field, .bad.expected)]
    Field { what: String, bad: BadField },
}

/// What the guard's own decision says of a template, over what the pass listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It keeps the template, with the message it would answer: the pass sends it no DELETE,
    /// and a probe target it keeps proves the guard judges.
    Keeps(String),
    /// It would let it go, or cannot read it: the pass asks the live guard with a DELETE, and
    /// the probe tries another target. Why.
    Releases(String),
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
