//! What the deletion decision and the mutation need to know of the cluster ([`Lookups`]), and
//! its answer through the host ([`HostLookups`]).
//!
//! Which kinds are installed, and at which versions they are served, is read from the cluster's
//! CustomResourceDefinitions: one cluster-wide list per request, masked to group, kind, plural and
//! versions (the policy server serves it from a watch cache). A kind without a CRD has no objects,
//! so it counts as none and costs no call; a kind is read at the newest version the policy can
//! read that its CRD serves, or at the version a setting pins. Nothing is inferred from the
//! wording of a host error.

use std::collections::BTreeSet;

use crate::host::Host;
use crate::requests::{self, Get, Read};
use guard::capi::Object;
use guard::catalogue::{self, CRD, REFERRERS, ReferrerKind, Resource, TemplateClass};
use guard::crds::{CrdView, Installed, installed_kinds, newest};
use guard::error::{Failure, Lookup, LookupError};
use guard::lookups::{ClusterState, Lookups, Scanned};
use guard::references::{self, BadField, Candidate};
use guard::settings::{Settings, VersionChoice};

/// Where a catalogue kind can be read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum At {
    Version(&'static str),
    /// No CRD serves it.
    Absent,
    /// Its CRD serves only versions the policy does not know.
    Unknown(Vec<String>),
}

/// Lookups in one namespace, for one request.
pub struct HostLookups<'a> {
    host: &'a dyn Host,
    settings: &'a Settings,
    namespace: &'a str,
    /// The version the API server sent a new Metal3Machine at: CAPM3 serves its template at the
    /// same versions, so the mutation reads the template there without the CRD list.
    machine_version: Option<&'a str>,
    /// Read on first use, once per request.
    installed: Option<Vec<Installed>>,
}

impl<'a> HostLookups<'a> {
    pub fn new(host: &'a dyn Host, settings: &'a Settings, namespace: &'a str) -> Self {
        HostLookups {
            host,
            settings,
            namespace,
            machine_version: None,
            installed: None,
        }
    }

    /// Lookups for the mutation of a Metal3Machine sent at `version`.
    pub fn for_machine_at(mut self, version: &'a str) -> Self {
        self.machine_version = Some(version);
        self
    }

    fn installed(&mut self) -> Result<&[Installed], LookupError> {
        if self.installed.is_none() {
            let version = CRD.versions[0];
            let crds = requests::list_all::<CrdView>(self.host, &CRD, version)?;
            let lookup = Lookup::ListAll {
                api_version: CRD.api_version(version),
                resource: &CRD,
            };
            self.installed = Some(installed_kinds(crds, &lookup)?);
        }
        Ok(self.installed.get_or_insert_with(Vec::new))
    }

    /// Where `resource` can be read. A version a setting pins that the CRD does not serve is an
    /// error: the operator asked for it.
    fn at(&mut self, resource: &'static Resource) -> Result<At, LookupError> {
        let choice = resource
            .setting
            .map_or(VersionChoice::Auto, |s| self.settings.version(s));
        let namespace = self.namespace;
        let Some(crd) = self
            .installed()?
            .iter()
            .find(|c| c.group == resource.group && c.kind == resource.kind)
        else {
            return Ok(At::Absent);
        };
        let served = &crd.served;
        match (choice, resource.setting) {
            (VersionChoice::Fixed(version), Some(setting)) => {
                if served.iter().any(|s| s == version) {
                    Ok(At::Version(version))
                } else {
                    Err(LookupError {
                        lookup: Lookup::List {
                            api_version: resource.api_version(version),
                            resource,
                            namespace: namespace.to_string(),
                        },
                        failure: Failure::WrongVersion { setting },
                        detail: format!("its CRD serves {}", served.join(", ")),
                    })
                }
            }
            _ => Ok(resource
                .versions
                .iter()
                .find(|v| served.iter().any(|s| s == *v))
                .map_or_else(|| At::Unknown(served.clone()), |v| At::Version(v))),
        }
    }

    /// The version to read one object of `resource` at; `None` when its CRD is absent. A CRD
    /// that serves only unknown versions cannot be read by name.
    fn version(
        &mut self,
        resource: &'static Resource,
    ) -> Result<Option<&'static str>, LookupError> {
        match self.at(resource)? {
            At::Version(version) => Ok(Some(version)),
            At::Absent => Ok(None),
            At::Unknown(served) => Err(self.unreadable_version(resource, &served)),
        }
    }

    fn unreadable_version(&self, resource: &'static Resource, served: &[String]) -> LookupError {
        LookupError {
            lookup: Lookup::List {
                api_version: resource.api_version(newest(served)),
                resource,
                namespace: self.namespace.to_string(),
            },
            failure: Failure::NoReadableVersion,
            detail: format!("its CRD serves {}", served.join(", ")),
        }
    }

    fn get(
        &mut self,
        resource: &'static Resource,
        masks: BTreeSet<String>,
        name: &str,
        read: Read,
    ) -> Result<Option<Object>, LookupError> {
        let Some(version) = self.version(resource)? else {
            return Ok(None);
        };
        self.get_at(resource, version, masks, name, read)
    }

    /// One object at a version already chosen.
    fn get_at(
        &self,
        resource: &'static Resource,
        version: &str,
        masks: BTreeSet<String>,
        name: &str,
        read: Read,
    ) -> Result<Option<Object>, LookupError> {
        requests::get(
            self.host,
            Get {
                resource,
                masks,
                version,
                namespace: self.namespace,
                name,
                read,
            },
        )
    }

    /// The list of `kind` at `version` in the template's namespace.
    fn list_lookup(&self, kind: &'static ReferrerKind, version: &str) -> Lookup {
        Lookup::List {
            api_version: kind.resource.api_version(version),
            resource: &kind.resource,
            namespace: self.namespace.to_string(),
        }
    }

    /// Whether an installed kind is scanned for a template of `class`.
    fn scans(
        &mut self,
        crd: &Installed,
        class: TemplateClass,
        node_reuse: bool,
    ) -> Result<bool, LookupError> {
        let keeps = |r: &&ReferrerKind| r.can_keep(class, node_reuse) && !r.cloned_from;
        let group = crd.group.as_str();
        if let Some(kind) = REFERRERS
            .iter()
            .find(|r| r.resource.group == group && r.resource.kind == crd.kind)
        {
            // A known kind: scanned when it can keep the template and its CRD serves no version
            // the policy knows (a pinned version it does not serve fails in `referrers`).
            return Ok(keeps(&kind) && matches!(self.at(&kind.resource)?, At::Unknown(_)));
        }
        let named_like_an_entry = REFERRERS
            .iter()
            .filter(keeps)
            .any(|r| r.resource.group == group && r.resource.plural == crd.plural);
        // A kind the operator declares to name no template is never scanned (the setting refuses
        // kinds the catalogue reads, so this cannot switch a field-by-field rule off).
        Ok(!self.settings.names_no_template(group, &crd.kind)
            && (named_like_an_entry
                || (class.scanned_groups().contains(&group)
                    && !catalogue::is_known(group, &crd.kind))))
    }
}

/// The answer for an object of `kind`, read by `lookup`, whose fields do not have the shape
/// their paths promise.
fn bad_field(
    lookup: Lookup,
    kind: &'static ReferrerKind,
    name: &str,
    error: BadField,
) -> LookupError {
    LookupError {
        lookup,
        failure: Failure::Unreadable,
        detail: format!(
            "{} {name}: {} is not {}",
            kind.kind(),
            error.field,
            error.expected
        ),
    }
}

impl Lookups for HostLookups<'_> {
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError> {
        let version = match self.at(&kind.resource)? {
            At::Version(version) => version,
            At::Absent => return Ok(vec![]),
            // Read by the scan instead, unless what it keeps is not in its spec.
            At::Unknown(_) if !kind.cloned_from => return Ok(vec![]),
            At::Unknown(served) => return Err(self.unreadable_version(&kind.resource, &served)),
        };
        // Each object becomes its candidate as soon as it is decoded, and is dropped.
        let owner_read_first = kind.owner_read_first(version);
        let candidate = |mut object: Object, namespace: Option<String>| {
            references::take_candidate(kind, &mut object)
                .map(|candidate| Candidate {
                    namespace,
                    owner_read_first,
                    ..candidate
                })
                .map_err(|e| (e, object.metadata.name))
        };
        // Where its controller follows the namespace a reference gives, the kind is listed in
        // every namespace (one call, as in the template's), each candidate saying where it is,
        // so that the decision resolves its references ([`references::resolves_to`]).
        let (candidates, lookup) = if kind.follows_reference_namespace(version) {
            let masks = kind.masks();
            let listed = requests::list_across_namespaces(
                self.host,
                &kind.resource,
                masks,
                version,
                |o, ns| candidate(o, Some(ns)),
            )?;
            let lookup = Lookup::ListAll {
                api_version: kind.resource.api_version(version),
                resource: &kind.resource,
            };
            (listed, lookup)
        } else {
            let at = (version, self.namespace);
            let listed = requests::list(self.host, &kind.resource, kind.masks(), at, |o| {
                candidate(o, None)
            })?;
            (listed, self.list_lookup(kind, version))
        };
        candidates
            .into_iter()
            .map(|c| c.map_err(|(e, name)| bad_field(lookup.clone(), kind, &name, e)))
            .collect()
    }

    fn scanned(
        &mut self,
        class: TemplateClass,
        node_reuse: bool,
    ) -> Result<Vec<Scanned>, LookupError> {
        let crds = self.installed()?.to_vec();
        let mut scanned = Vec::new();
        for crd in &crds {
            if !self.scans(crd, class, node_reuse)? {
                continue;
            }
            let api_version = format!("{}/{}", crd.group, newest(&crd.served));
            let known = REFERRERS
                .iter()
                .find(|r| r.resource.group == crd.group && r.resource.kind == crd.kind);
            // A known kind also keeps what its rules read beyond the spec (a MachineSet's
            // `status.replicas`), so that they can apply.
            let mut masks: BTreeSet<String> = catalogue::SCAN_MASKS
                .iter()
                .map(|m| m.to_string())
                .collect();
            if let Some(kind) = known {
                masks.extend(catalogue::masks_of(&kind.resource));
            }
            // RBAC grants by group and plural, at every version: the shipped rules
            // (examples/rbac.yaml) cover every catalogue plural. Any other kind is asked about
            // first, since a list the API server refuses would never answer.
            let shipped =
                catalogue::resources_read().any(|r| r.group == crd.group && r.plural == crd.plural);
            if !shipped {
                requests::may_list(
                    self.host,
                    &self.settings.policy_server_service_account,
                    &api_version,
                    &crd.kind,
                    &crd.plural,
                    self.namespace,
                )?;
            }
            let objects = requests::list_scanned(
                self.host,
                api_version,
                &crd.kind,
                &crd.plural,
                masks,
                self.namespace,
            )?;
            scanned.push(Scanned {
                kind: crd.kind.clone(),
                known,
                objects,
            });
        }
        scanned.sort_by(|a, b| a.kind.cmp(&b.kind));
        Ok(scanned)
    }

    fn referrer(
        &mut self,
        kind: &'static ReferrerKind,
        name: &str,
    ) -> Result<Option<Candidate>, LookupError> {
        let Some(version) = self.version(&kind.resource)? else {
            return Ok(None);
        };
        let found = self.get_at(&kind.resource, version, kind.masks(), name, Read::Cached)?;
        found
            .map(|object| {
                references::candidate_of(kind, &object)
                    .map_err(|e| bad_field(self.list_lookup(kind, version), kind, name, e))
            })
            .transpose()
    }

    /// A cached read is enough: a Cluster deleted a moment ago only delays the garbage collector,
    /// which retries denied deletions. The policy server caches gets by apiVersion, kind, name
    /// and namespace for 5 s and prunes to the masks after its cache (policy-evaluator
    /// `callback_handler.rs`@v1.36.0-beta.1), so these masks (the Cluster referrer's) cost no
    /// second read. Asked only when the template has Cluster owners:
    /// then a missing Cluster CRD fails closed, since every owner would read as gone.
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError> {
        let kind = catalogue::cluster_kind();
        let Some(version) = self.version(&kind.resource)? else {
            return Err(LookupError {
                lookup: Lookup::Get {
                    api_version: kind.resource.api_version(kind.resource.versions[0]),
                    resource: &kind.resource,
                    namespace: self.namespace.to_string(),
                    name: name.to_string(),
                },
                failure: Failure::NoClusterCrd,
                detail: "no CustomResourceDefinition serves Cluster".to_string(),
            });
        };
        let found = self.get_at(&kind.resource, version, kind.masks(), name, Read::Cached)?;
        Ok(match found {
            None => ClusterState::Gone,
            Some(c) if c.metadata.is_deleting() => ClusterState::Deleting,
            Some(_) => ClusterState::Live,
        })
    }

    /// Read at the version the machine was sent at when the policy can read it and no setting
    /// pins one: CAPM3 serves both kinds at the same versions, so no CRD list is needed, and a
    /// CRD list that never answers (RBAC without `list` on CRDs) cannot hold up machine creation.
    fn metal3_machine_template(&mut self, name: &str) -> Result<Option<Object>, LookupError> {
        let resource = &catalogue::METAL3_MACHINE_TEMPLATE;
        // The masks of its referrer entry, so that each kind has one set of masks.
        let masks = catalogue::referrer_of(resource)
            .map_or_else(|| catalogue::masks_of(resource), ReferrerKind::masks);
        let auto = resource
            .setting
            .is_none_or(|s| self.settings.version(s) == VersionChoice::Auto);
        let known = self
            .machine_version
            .and_then(|v| resource.versions.iter().find(|known| **known == v));
        match known {
            Some(version) if auto => self.get_at(resource, version, masks, name, Read::Direct),
            _ => self.get(resource, masks, name, Read::Direct),
        }
    }
}

#[cfg(test)]
mod tests;
