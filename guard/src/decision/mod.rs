//! The deletion decision: one pure function over the template, the settings and the
//! [`Lookups`] trait. The rows run in the order of the decision table in docs/design.md; nothing
//! else decides.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::capi::Template;
use crate::catalogue::{Advice, REFERRERS, ReferrerKind, TemplateClass, WhileDeleting};
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
    let (mut referrers, deployments) = referrers_keeping(template, settings, lookups)?;
    referrers.extend(scanned_keeping(
        template,
        settings,
        deployments.as_ref(),
        lookups,
    )?);
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
) -> Result<(Vec<Referrer>, Option<Deployments>), LookupError> {
    let mut found = Vec::new();
    let mut deployments = None;
    for kind in REFERRERS
        .iter()
        .filter(|kind| kind.can_keep(template.class, template.node_reuse))
    {
        let candidates = lookups.referrers(kind)?;
        // The MachineDeployments come first in the catalogue: the MachineSets after them are
        // read by their owners' revisions. All of them, deleting ones included, as
        // `getOwnerMachineDeployment` gets any. Cluster API serves both kinds at the same
        // versions, so a MachineSet read field by field has its MachineDeployments read so too.
        if kind.reads_revision() && !kind.by_revision {
            deployments = Some(Deployments::listed(&candidates, &template.namespace));
        }
        // Keyed by namespace (none: the template's) and name.
        type Key = (Option<String>, String);
        let mut by_name: BTreeMap<Key, (Vec<Cow<'static, str>>, Option<String>)> = BTreeMap::new();
        // Each candidate's strings are moved into its entry, not copied: there may be thousands.
        for candidate in candidates
            .into_iter()
            .filter(|c| counts(kind, c, template, settings, deployments.as_ref()))
        {
            let across = candidate.namespace.as_deref();
            let fields: Vec<Cow<'static, str>> = candidate
                .named
                .into_iter()
                .filter(|named| {
                    template.reference.is_named_by(&named.reference)
                        && references::resolves_to(
                            kind,
                            &named.reference,
                            across,
                            &template.namespace,
                        )
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
    Ok((found, deployments))
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
    deployments: Option<&Deployments>,
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
                                counts(known, &c, template, settings, deployments),
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

/// The MachineDeployments listed, by namespace (`None`: the template's) and name, each with
/// its revision annotation.
#[derive(Debug, Default)]
pub struct Deployments(BTreeMap<(Option<String>, String), Option<String>>);

impl Deployments {
    fn listed(candidates: &[Candidate], namespace: &str) -> Self {
        Deployments(
            candidates
                .iter()
                .map(|c| {
                    let key = (Self::elsewhere(c, namespace), c.name.clone());
                    (key, c.revision.clone())
                })
                .collect(),
        )
    }

    fn elsewhere(candidate: &Candidate, namespace: &str) -> Option<String> {
        candidate.namespace.clone().filter(|n| n != namespace)
    }

    /// The revision of `machine_set`'s MachineDeployment: `None` when it is gone (or the label
    /// names none), `Some(None)` when it carries no revision.
    fn owner_revision(&self, machine_set: &Candidate, namespace: &str) -> Option<&Option<String>> {
        let owner = machine_set.deployment.clone()?;
        self.0
            .get(&(Self::elsewhere(machine_set, namespace), owner))
    }
}

/// Whether a listed object can keep anything.
///
/// - A MachineSet with machines, in a MachineDeployment that is there, keeps its templates at
///   any revision, being deleted or not ([`read_for_in_place_update`]).
/// - Being deleted, it keeps only what its kind keeps while deleting (see [`WhileDeleting`]):
///   the topology controller deletes a MachineSet's templates before it lets the MachineSet go,
///   so counting those would deadlock; a control plane needs its template until it is gone.
/// - A MachineSet keeps what its controller still reads ([`read_by_revision`]); beyond that, a
///   `nodeReuse: true` Metal3MachineTemplate while it has machines, which CAPM3 1.13 and newer
///   read through it when they delete one (cluster-api-provider-metal3 PR 3168,
///   `baremetal/metal3machine_manager.go`).
fn counts(
    kind: &ReferrerKind,
    candidate: &Candidate,
    template: &Template,
    settings: &Settings,
    deployments: Option<&Deployments>,
) -> bool {
    if kind.by_revision && read_for_in_place_update(candidate, &template.namespace, deployments) {
        return true;
    }
    let node_reuse_kept = template.node_reuse && candidate.has_machines();
    if candidate.deleting {
        return match kind.while_deleting {
            WhileDeleting::KeepsNothing => false,
            WhileDeleting::Keeps => true,
            WhileDeleting::KeepsNodeReuseWhileItHasMachines => node_reuse_kept,
        };
    }
    !kind.by_revision
        || read_by_revision(candidate, &template.namespace, settings, deployments)
        || node_reuse_kept
}

/// Whether a MachineDeployment's rollout may still read `machine_set`'s templates to update its
/// machines in place: Cluster API 1.12 and newer with the `InPlaceUpdates` feature gate read the
/// infrastructure and bootstrap templates of every old MachineSet with `status.replicas` above
/// zero, deleting ones included, and a missing one fails the MachineDeployment's reconcile
/// (`reconcileInPlaceUpdateIntent` in
/// core/reconcilers/machinedeployment/machinedeployment_rollout_rollingupdate.go, `getTemplateObjects`
/// in machinedeployment_canupdatemachineset.go@v1.14.0). Nothing in the API says whether the gate
/// is on, and a MachineDeployment's strategy and Cluster API's release may change at any time, so
/// this holds at every served version and strategy. It needs a MachineDeployment: one that is gone
/// reconciles nothing. It cannot deadlock a deletion: the machines go whatever the templates, and
/// the MachineSet controller writes `status.replicas` on every reconcile, deleting ones included
/// (`updateStatus`, core/reconcilers/machineset/machineset_controller_status.go@v1.14.0). Where the
/// MachineDeployments could not be listed field by field, its owner is taken to be there.
pub fn read_for_in_place_update(
    machine_set: &Candidate,
    namespace: &str,
    deployments: Option<&Deployments>,
) -> bool {
    machine_set.has_machines()
        && machine_set.deployment.is_some()
        && deployments.is_none_or(|d| d.owner_revision(machine_set, namespace).is_some())
}

/// Whether Cluster API's MachineSet controller still reads a MachineSet's templates
/// (`Reconcile`, `reconcileExternalTemplateReference`, `isCurrentMachineSet` and `syncReplicas`
/// in core/reconcilers/machineset/machineset_controller.go@v1.14.0; the same in
/// internal/controllers/machineset/machineset_controller.go@v1.10.10):
///
/// - outside a MachineDeployment (no deployment-name label): always, a missing template is an
///   error on every reconcile;
/// - of the MachineDeployment's current revision (equal revision annotations, an absent one
///   read as empty): always, at any replica count. That lasts while the MachineDeployment has
///   not created its new MachineSet (`getNewMachineSet`, machinedeployment_sync.go);
/// - of an old revision: only to create machines. Scaled to zero it only deletes or moves
///   machines, which reads no template, unless `countScaledDownMachineSets` keeps it for a
///   scale-up by hand. (1.7 and older read the templates before each deletion of a machine, and
///   1.12 and newer may update them in place: [`read_for_in_place_update`] keeps them while
///   machines remain);
/// - whose MachineDeployment is gone: never, where the owner is known to be read first
///   ([`ReferrerKind::owner_read_first`]); elsewhere always.
///
/// Where the MachineDeployments could not be listed field by field, it always reads them.
pub fn read_by_revision(
    machine_set: &Candidate,
    namespace: &str,
    settings: &Settings,
    deployments: Option<&Deployments>,
) -> bool {
    if machine_set.deployment.is_none() {
        return true;
    }
    let Some(deployments) = deployments else {
        return true;
    };
    match deployments.owner_revision(machine_set, namespace) {
        None => !machine_set.owner_read_first,
        Some(owner)
            if owner.as_deref().unwrap_or("") == machine_set.revision.as_deref().unwrap_or("") =>
        {
            true
        }
        Some(_) => machine_set.replicas != Some(0) || settings.count_scaled_down_machine_sets,
    }
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
mod revision_tests;
#[cfg(test)]
mod scanned_tests;
#[cfg(test)]
mod tests;
