//! What the deletion decision and the mutation need to know of the cluster ([`Lookups`]), and
//! its answer through the host ([`HostLookups`]).
//!
//! Which kinds are installed, and at which versions they are served, is read from the cluster's
//! CustomResourceDefinitions: one cluster-wide list per request, masked to group, kind, plural and
//! versions (the policy server serves it from a watch cache). A kind without a CRD has no objects,
//! so it counts as none and costs no call; a kind is read at the newest version the policy can
//! read that its CRD serves, or at the version a setting pins. Nothing is inferred from the
//! wording of a host error.

use std::collections::BTreeMap;

use crate::capi::Object;
use crate::catalogue::{self, ReferrerKind, Resource, CRD};
use crate::error::{Failure, Lookup, LookupError};
use crate::host::{self, Get, Host, Read};
use crate::references::{self, BadField, Candidate};
use crate::settings::{Settings, VersionChoice};

/// What is known of one owning Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    Live,
    Deleting,
    Gone,
}

/// The decision and the mutation ask through this trait; `HostLookups` answers from the host,
/// tests from memory. Every lookup is in the namespace of the request.
pub trait Lookups {
    /// The objects of `kind`; none when the kind is not installed.
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError>;

    /// One object of `kind` by name (the owner of a new machine), as the decision would see it.
    fn referrer(
        &mut self,
        kind: &'static ReferrerKind,
        name: &str,
    ) -> Result<Option<Candidate>, LookupError>;

    /// The state of the Cluster `name`.
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError>;

    /// The Metal3MachineTemplate `name`, read past the cache: it may have been created a moment
    /// ago.
    fn metal3_machine_template(&mut self, name: &str) -> Result<Option<Object>, LookupError>;
}

/// The versions each installed kind is served at, from the CRDs: (group, kind) -> versions.
type Served = BTreeMap<(String, String), Vec<String>>;

/// Lookups in one namespace, for one request.
pub struct HostLookups<'a> {
    host: &'a dyn Host,
    settings: &'a Settings,
    namespace: &'a str,
    /// Read on first use, once per request.
    served: Option<Served>,
}

fn text<'v>(object: &'v Object, path: &str) -> &'v str {
    object
        .at(path)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
}

/// The served versions of each CRD. A CRD whose group, kind or versions cannot be read is an
/// unreadable answer, not a kind that is absent.
fn served_versions(crds: &[Object], lookup: &Lookup) -> Result<Served, LookupError> {
    let mut served = Served::new();
    for crd in crds {
        let (group, kind) = (text(crd, "spec.group"), text(crd, "spec.names.kind"));
        let versions = crd.at("spec.versions").and_then(|v| v.as_array());
        let (false, false, Some(versions)) = (group.is_empty(), kind.is_empty(), versions) else {
            return Err(LookupError {
                lookup: lookup.clone(),
                failure: Failure::Unreadable,
                detail: format!(
                    "the CustomResourceDefinition {} has no spec.group, spec.names.kind or spec.versions",
                    crd.metadata.name
                ),
            });
        };
        let names = versions
            .iter()
            .filter(|v| v.get("served").and_then(|s| s.as_bool()) == Some(true))
            .filter_map(|v| v.get("name").and_then(|n| n.as_str()))
            .map(str::to_string);
        served.insert((group.to_string(), kind.to_string()), names.collect());
    }
    Ok(served)
}

impl<'a> HostLookups<'a> {
    pub fn new(host: &'a dyn Host, settings: &'a Settings, namespace: &'a str) -> Self {
        HostLookups {
            host,
            settings,
            namespace,
            served: None,
        }
    }

    fn served(&mut self) -> Result<&Served, LookupError> {
        if self.served.is_none() {
            let version = CRD.versions[0];
            let crds = host::list_all(self.host, &CRD, version)?;
            let lookup = Lookup::ListAll {
                api_version: CRD.api_version(version),
                resource: &CRD,
            };
            self.served = Some(served_versions(&crds, &lookup)?);
        }
        Ok(self.served.get_or_insert_with(Served::new))
    }

    /// The version to read `resource` at; `None` when its CRD is absent.
    fn version(
        &mut self,
        resource: &'static Resource,
    ) -> Result<Option<&'static str>, LookupError> {
        let choice = resource
            .setting
            .map_or(VersionChoice::Auto, |s| self.settings.version(s));
        let key = (resource.group.to_string(), resource.kind.to_string());
        let namespace = self.namespace;
        let Some(served) = self.served()?.get(&key) else {
            return Ok(None);
        };
        let wanted: &[&'static str] = match choice {
            VersionChoice::Auto => resource.versions,
            VersionChoice::Fixed(version) => &[version][..],
        };
        if let Some(version) = wanted.iter().find(|v| served.iter().any(|s| s == *v)) {
            return Ok(Some(version));
        }
        let failure = match (choice, resource.setting) {
            (VersionChoice::Fixed(_), Some(setting)) => Failure::WrongVersion { setting },
            _ => Failure::NoReadableVersion,
        };
        Err(LookupError {
            lookup: Lookup::List {
                api_version: resource.api_version(wanted[0]),
                resource,
                namespace: namespace.to_string(),
            },
            failure,
            detail: format!("its CRD serves {}", served_list(served)),
        })
    }

    fn get(
        &mut self,
        resource: &'static Resource,
        masks: std::collections::BTreeSet<String>,
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
        masks: std::collections::BTreeSet<String>,
        name: &str,
        read: Read,
    ) -> Result<Option<Object>, LookupError> {
        host::get(
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

    /// The answer for a listed object whose fields do not have the shape their paths promise.
    fn bad_field(
        &self,
        kind: &'static ReferrerKind,
        version: &str,
        name: &str,
        error: BadField,
    ) -> LookupError {
        LookupError {
            lookup: Lookup::List {
                api_version: kind.resource.api_version(version),
                resource: &kind.resource,
                namespace: self.namespace.to_string(),
            },
            failure: Failure::Unreadable,
            detail: format!(
                "{} {name}: {} is not {}",
                kind.kind(),
                error.field,
                error.expected
            ),
        }
    }
}

fn served_list(served: &[String]) -> String {
    if served.is_empty() {
        "no version".to_string()
    } else {
        served.join(", ")
    }
}

impl Lookups for HostLookups<'_> {
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError> {
        let Some(version) = self.version(&kind.resource)? else {
            return Ok(vec![]);
        };
        let listed = host::list(
            self.host,
            &kind.resource,
            kind.masks(),
            version,
            self.namespace,
        )?;
        listed
            .iter()
            .map(|object| {
                references::candidate_of(kind, object)
                    .map_err(|e| self.bad_field(kind, version, &object.metadata.name, e))
            })
            .collect()
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
                    .map_err(|e| self.bad_field(kind, version, name, e))
            })
            .transpose()
    }

    /// A cached read is enough: a Cluster deleted a moment ago only delays the garbage collector,
    /// which retries denied deletions. The masks are the Cluster referrer's, so that both reads
    /// share one cache in the policy server.
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError> {
        let kind = catalogue::cluster_kind();
        let found = self.get(&kind.resource, kind.masks(), name, Read::Cached)?;
        Ok(match found {
            None => ClusterState::Gone,
            Some(c) if c.metadata.is_deleting() => ClusterState::Deleting,
            Some(_) => ClusterState::Live,
        })
    }

    fn metal3_machine_template(&mut self, name: &str) -> Result<Option<Object>, LookupError> {
        let resource = &catalogue::METAL3_MACHINE_TEMPLATE;
        self.get(resource, catalogue::masks_of(resource), name, Read::Direct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{VersionSetting, V1BETA1, V1BETA2};
    use crate::testing::{list_of, referrer_kind, FakeHost};
    use rstest::rstest;

    /// The version a MachineSet list is sent at, or the failure, for what its CRD serves and
    /// what `capiApiVersion` says.
    #[rstest]
    #[case::auto_newest(&["v1beta2", "v1beta1"], VersionChoice::Auto, Ok(Some("v1beta2")))]
    #[case::auto_v1beta1_only(&["v1beta1"], VersionChoice::Auto, Ok(Some("v1beta1")))]
    #[case::auto_nothing_readable(&["v1alpha4"], VersionChoice::Auto, Err(Failure::NoReadableVersion))]
    #[case::auto_nothing_served(&[], VersionChoice::Auto, Err(Failure::NoReadableVersion))]
    #[case::pinned_served(&["v1beta2", "v1beta1"], VersionChoice::Fixed(V1BETA1), Ok(Some("v1beta1")))]
    #[case::pinned_not_served(&["v1beta1"], VersionChoice::Fixed(V1BETA2), Err(Failure::WrongVersion { setting: VersionSetting::Capi }))]
    fn versions_come_from_the_crd(
        #[case] served: &[&str],
        #[case] choice: VersionChoice,
        #[case] expected: Result<Option<&str>, Failure>,
    ) {
        let host = FakeHost::new().install("MachineSet", served);
        let settings = Settings {
            capi_api_version: choice,
            ..Settings::default()
        };
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        let kind = referrer_kind("MachineSet");
        let got = lookups.version(&kind.resource).map_err(|e| e.failure);
        assert_eq!(got, expected);
    }

    #[test]
    fn a_kind_without_a_crd_is_none_and_costs_no_call() {
        let host = FakeHost::new().uninstall("MachineSet");
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        assert_eq!(lookups.referrers(referrer_kind("MachineSet")), Ok(vec![]));
        assert_eq!(
            lookups.referrers(referrer_kind("TalosControlPlane")),
            Ok(vec![])
        );
        assert_eq!(
            host.calls(),
            ["list-all apiextensions.k8s.io/v1 CustomResourceDefinition"]
        );
    }

    #[test]
    fn the_crds_are_read_once_per_request() {
        let v2 = "cluster.x-k8s.io/v1beta2";
        let host = FakeHost::new()
            .answer_list(v2, "MachineSet", &list_of(v2, "MachineSet", &[]))
            .answer_list(
                v2,
                "MachineDeployment",
                &list_of(v2, "MachineDeployment", &[]),
            );
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        lookups.referrers(referrer_kind("MachineSet")).unwrap();
        lookups
            .referrers(referrer_kind("MachineDeployment"))
            .unwrap();
        assert_eq!(host.calls().len(), 3);
    }

    #[test]
    fn a_listed_object_of_the_wrong_shape_fails_naming_it() {
        let v2 = "cluster.x-k8s.io/v1beta2";
        let bad = serde_json::json!({"kind": "MachineSet", "metadata": {"name": "ms-1"},
            "spec": {"template": {"spec": {"infrastructureRef": "t"}}}});
        let host =
            FakeHost::new().answer_list(v2, "MachineSet", &list_of(v2, "MachineSet", &[bad]));
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        let error = lookups.referrers(referrer_kind("MachineSet")).unwrap_err();
        assert_eq!(error.failure, Failure::Unreadable);
        assert_eq!(
            error.detail,
            "MachineSet ms-1: spec.template.spec.infrastructureRef is not an object reference"
        );
    }

    /// The masks each call sends are the catalogue's, metadata included.
    #[test]
    fn lists_send_the_catalogue_masks() {
        let kind = referrer_kind("MachineSet");
        let masks: Vec<String> = kind.masks().into_iter().collect();
        assert_eq!(
            masks,
            [
                "metadata.deletionTimestamp",
                "metadata.labels",
                "metadata.name",
                "spec.clusterName",
                "spec.replicas",
                "spec.template.spec.bootstrap.configRef",
                "spec.template.spec.infrastructureRef",
                "status.replicas"
            ]
        );
    }
}
