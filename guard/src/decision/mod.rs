//! The deletion decision: one pure function over the template, the settings and the
//! [`Lookups`] trait. The rows run in the order of the decision table in docs/design.md; nothing
//! else decides.

use std::borrow::Cow;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use crate::capi::Template;
use crate::catalogue::{Advice, ReferrerKind, TemplateClass, WhileDeleting, REFERRERS};
use crate::error::LookupError;
use crate::lookups::{ClusterState, Lookups};
use crate::references::{self, Candidate};
use crate::settings::Settings;

/// Row 6 reads each owning Cluster (one host call each): beyond this many owners it does not
/// apply, and the template is kept while its referrers exist.
pub const MAX_CLUSTER_OWNERS: usize = 16;

/// The kind of an object that keeps a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keeper {
    /// A catalogue kind, read field by field.
    Known(&'static ReferrerKind),
    /// A kind the catalogue cannot read field by field, found naming the template by the scan.
    Scanned(String),
}

impl Keeper {
    pub fn kind(&self) -> &str {
        match self {
            Keeper::Known(kind) => kind.kind(),
            Keeper::Scanned(kind) => kind,
        }
    }

    /// What the rejection advises: the kind's advice, the data template's for every keeper of a
    /// Metal3DataTemplate, a rollout for a scanned kind (control planes, mostly).
    pub fn advice(&self, class: TemplateClass) -> Advice {
        match self {
            _ if class == TemplateClass::Data => Advice::DataTemplate,
            Keeper::Known(kind) => kind.advice,
            Keeper::Scanned(_) => Advice::Rollout,
        }
    }

    /// A scanned kind keeps its template through its Cluster's deletion: nothing says it may
    /// let it go, and nothing waits for a template's deletion, so keeping it cannot deadlock.
    fn kept_through_cluster_deletion(&self) -> bool {
        match self {
            Keeper::Known(kind) => kind.kept_through_cluster_deletion,
            Keeper::Scanned(_) => true,
        }
    }
}

/// An object that still needs the template, and the fields that name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referrer {
    pub kind: Keeper,
    pub name: String,
    /// Its namespace, when it is not the template's: a reference that names the template's
    /// namespace (see [`crate::catalogue::ReferrerKind::follows_reference_namespace_at`]).
    pub namespace: Option<String>,
    /// A fixed field is the catalogue's string, not a copy per object.
    pub fields: Vec<Cow<'static, str>>,
    /// The Cluster it belongs to, if it says.
    pub cluster: Option<String>,
}

/// Why a template may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReason {
    /// Row 5: `clusterctl move` is deleting the source objects.
    Moving,
    /// Nothing keeps it.
    Unused,
    /// Row 6: every owning Cluster is being deleted or gone, and only their own objects (that
    /// may let it go) still refer to it.
    ClusterDeleted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Release(ReleaseReason),
    /// Sorted by kind (catalogue order, then scanned kinds by name), then name; each referrer's
    /// fields sorted.
    Keep(Vec<Referrer>),
}

/// Decides whether `template` may be deleted.
pub fn decide(
    template: &Template,
    settings: &Settings,
    lookups: &mut impl Lookups,
) -> Result<Decision, LookupError> {
    // Row 5, before any lookup: clusterctl move retries each delete for a bounded time only.
    if template.moving {
        return Ok(Decision::Release(ReleaseReason::Moving));
    }
    // Rows 1 to 4, then the scan of the kinds the catalogue cannot read field by field.
    let mut referrers = referrers_keeping(template, settings, lookups)?;
    referrers.extend(scanned_keeping(template, settings, lookups)?);
    // A catalogue kind read by the scan sorts with the catalogue kinds; the sort is stable, so
    // names stay sorted within each kind.
    referrers.sort_by(|a, b| kind_order(&a.kind).cmp(&kind_order(&b.kind)));
    if referrers.is_empty() {
        return Ok(Decision::Release(ReleaseReason::Unused));
    }
    // Row 6, read only when something still refers to the template.
    let going = owning_clusters_going(template, lookups)?;
    if going.is_empty() {
        return Ok(Decision::Keep(referrers));
    }
    let kept: Vec<Referrer> = referrers
        .into_iter()
        .filter(|r| !released_with_its_cluster(r, &going))
        .collect();
    Ok(if kept.is_empty() {
        Decision::Release(ReleaseReason::ClusterDeleted)
    } else {
        Decision::Keep(kept)
    })
}

/// Rows 1 to 4: every object of a kind that can keep the template and whose fields name it. Every
/// list is read, even after a first referrer, so that the message names them all.
fn referrers_keeping(
    template: &Template,
    settings: &Settings,
    lookups: &mut impl Lookups,
) -> Result<Vec<Referrer>, LookupError> {
    let mut found = Vec::new();
    for kind in REFERRERS
        .iter()
        .filter(|kind| kind.can_keep(template.class, template.node_reuse))
    {
        let candidates = lookups.referrers(kind)?;
        // Keyed by namespace (none: the template's) and name.
        type Key = (Option<String>, String);
        let mut by_name: BTreeMap<Key, (Vec<Cow<'static, str>>, Option<String>)> = BTreeMap::new();
        // Each candidate's strings are moved into its entry, not copied: there may be thousands.
        for candidate in candidates
            .into_iter()
            .filter(|c| counts(kind, c, template.node_reuse, settings))
        {
            let across = candidate.namespace.as_deref();
            let fields: Vec<Cow<'static, str>> = candidate
                .named
                .into_iter()
                .filter(|named| {
                    template.reference.is_named_by(&named.reference)
                        && references::resolves_to(&named.reference, across, &template.namespace)
                })
                .map(|named| named.field)
                .collect();
            if fields.is_empty() {
                continue;
            }
            let namespace = candidate
                .namespace
                .filter(|namespace| *namespace != template.namespace);
            // A name listed twice keeps the Cluster of its first object, with every field.
            match by_name.entry((namespace, candidate.name)) {
                Entry::Vacant(entry) => {
                    entry.insert((fields, candidate.cluster));
                }
                Entry::Occupied(mut entry) => entry.get_mut().0.extend(fields),
            }
        }
        found.extend(
            by_name
                .into_iter()
                .map(|((namespace, name), (mut fields, cluster))| {
                    fields.sort();
                    fields.dedup();
                    Referrer {
                        kind: Keeper::Known(kind),
                        name,
                        namespace,
                        fields,
                        cluster,
                    }
                }),
        );
    }
    Ok(found)
}

/// Every scanned object that names the template anywhere in its spec keeps it, also while it is
/// being deleted: the policy does not know what such a kind needs, so it keeps the template
/// until the object lets go of it or is gone. A catalogue kind served only at a version the
/// policy does not know is read with what the catalogue knows of it: its implied kinds, and its
/// keeper rules (being deleted, scaled down, its Cluster's deletion) where the fields those
/// rules read have the catalogue's shape; where one does not, the scan's rules apply. Only a scan
/// that cannot be done fails.
fn scanned_keeping(
    template: &Template,
    settings: &Settings,
    lookups: &mut impl Lookups,
) -> Result<Vec<Referrer>, LookupError> {
    let mut found = Vec::new();
    for scanned in lookups.scanned(template.class, template.node_reuse)? {
        let mut referrers: Vec<Referrer> = scanned
            .objects
            .iter()
            .filter_map(|object| {
                let unknown = || Keeper::Scanned(scanned.kind.clone());
                let (kind, named, counted, cluster) = match scanned.known {
                    Some(known) => {
                        let named = references::scan_known(known, object);
                        match references::candidate_naming(known, object, vec![]) {
                            Ok(c) => (
                                Keeper::Known(known),
                                named,
                                counts(known, &c, template.node_reuse, settings),
                                c.cluster,
                            ),
                            Err(_) => (
                                unknown(),
                                named,
                                true,
                                references::cluster_label(&object.metadata),
                            ),
                        }
                    }
                    None => (
                        unknown(),
                        references::scan(object),
                        true,
                        references::cluster_label(&object.metadata),
                    ),
                };
                let mut fields: Vec<Cow<'static, str>> = named
                    .into_iter()
                    .filter(|n| template.reference.is_named_by(&n.reference))
                    .map(|n| n.field)
                    .collect();
                fields.sort();
                fields.dedup();
                (counted && !fields.is_empty()).then(|| Referrer {
                    kind,
                    name: object.metadata.name.clone(),
                    namespace: None,
                    fields,
                    cluster,
                })
            })
            .collect();
        referrers.sort_by(|a, b| a.name.cmp(&b.name));
        found.extend(referrers);
    }
    Ok(found)
}

/// Where a keeper's kind sorts: catalogue kinds in catalogue order, then scanned kinds by name.
fn kind_order(keeper: &Keeper) -> (usize, &str) {
    match keeper {
        Keeper::Known(kind) => (
            REFERRERS
                .iter()
                .position(|r| std::ptr::eq(r, *kind))
                .unwrap_or(0),
            "",
        ),
        Keeper::Scanned(kind) => (REFERRERS.len(), kind),
    }
}

/// Whether a listed object can keep anything.
///
/// - Being deleted, it keeps only what its kind keeps while deleting (see [`WhileDeleting`]):
///   the topology controller deletes a MachineSet's templates before it lets the MachineSet go,
///   so counting those would deadlock; a control plane needs its template until it is gone.
/// - An old revision of a MachineDeployment, scaled down, keeps nothing unless
///   `countScaledDownMachineSets` is set; a MachineSet outside a MachineDeployment keeps its
///   templates at any replica count (see [`Candidate::retired`]).
fn counts(
    kind: &ReferrerKind,
    candidate: &Candidate,
    node_reuse: bool,
    settings: &Settings,
) -> bool {
    let while_deleting = match kind.while_deleting {
        WhileDeleting::KeepsNothing => false,
        WhileDeleting::Keeps => true,
        WhileDeleting::KeepsNodeReuseWhileItHasMachines => node_reuse && candidate.has_machines(),
    };
    (!candidate.deleting || while_deleting)
        && !(kind.scaled_down_keeps_nothing
            && candidate.retired()
            && !settings.count_scaled_down_machine_sets)
}

/// Row 6: the owning Clusters, when there are 1 to [`MAX_CLUSTER_OWNERS`] of them and every
/// one is being deleted or gone; otherwise none.
fn owning_clusters_going(
    template: &Template,
    lookups: &mut impl Lookups,
) -> Result<Vec<String>, LookupError> {
    if template.cluster_owners.len() > MAX_CLUSTER_OWNERS {
        return Ok(vec![]);
    }
    for name in &template.cluster_owners {
        if lookups.cluster(name)? == ClusterState::Live {
            return Ok(vec![]);
        }
    }
    Ok(template.cluster_owners.clone())
}

/// A referrer that belongs to a Cluster being deleted or gone lets the template go with it,
/// unless its kind keeps its template through the Cluster's deletion (control planes). A
/// ClusterClass, an object of another Cluster, or one in another namespace (whose Cluster is
/// not the template's owner) still keeps it.
fn released_with_its_cluster(referrer: &Referrer, going: &[String]) -> bool {
    referrer.namespace.is_none()
        && !referrer.kind.kept_through_cluster_deletion()
        && referrer
            .cluster
            .as_ref()
            .is_some_and(|cluster| going.contains(cluster))
}

#[cfg(test)]
mod scanned_tests;
#[cfg(test)]
mod tests;
