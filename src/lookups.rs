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

use crate::capi::Object;
use crate::catalogue::{self, ReferrerKind, Resource, TemplateClass, CRD, REFERRERS};
use crate::crds::{installed_kinds, newest, CrdView, Installed};
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

/// The objects of one kind the catalogue does not know whole, listed for a scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Scanned {
    pub kind: String,
    /// The catalogue's entry when the kind is one it knows, served only at versions it does not:
    /// the decision then applies the entry's implied kinds and keeper rules where the fields
    /// read the same.
    pub known: Option<&'static ReferrerKind>,
    pub objects: Vec<Object>,
}

/// The decision and the mutation ask through this trait; `HostLookups` answers from the host,
/// tests from memory. Every lookup is in the namespace of the request.
pub trait Lookups {
    /// The objects of `kind`; none when the kind is not installed, or when its CRD serves only
    /// versions the policy cannot read (then [`Lookups::scanned`] reads it).
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError>;

    /// The installed kinds that may name a template of `class` and that the catalogue cannot
    /// read field by field, each listed whole for a scan: kinds it does not know in the class's
    /// scanned groups, known kinds served only at versions it does not know, and CRDs named like
    /// a catalogue entry that declare another kind. Sorted by kind.
    fn scanned(
        &mut self,
        class: TemplateClass,
        node_reuse: bool,
    ) -> Result<Vec<Scanned>, LookupError>;

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
            let crds = host::list_all::<CrdView>(self.host, &CRD, version)?;
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

impl Lookups for HostLookups<'_> {
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError> {
        let version = match self.at(&kind.resource)? {
            At::Version(version) => version,
            At::Absent => return Ok(vec![]),
            // Read by the scan instead, unless what it keeps is not in its spec.
            At::Unknown(_) if !kind.cloned_from => return Ok(vec![]),
            At::Unknown(served) => return Err(self.unreadable_version(&kind.resource, &served)),
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
                host::may_list(
                    self.host,
                    &self.settings.policy_server_service_account,
                    &api_version,
                    &crd.kind,
                    &crd.plural,
                    self.namespace,
                )?;
            }
            let objects = host::list_scanned(
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
                    .map_err(|e| self.bad_field(kind, version, name, e))
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
mod tests {
    use super::*;
    use crate::catalogue::{
        VersionSetting, CAPI_GROUP, CONTROL_PLANE_GROUP, ETCD_GROUP, INFRASTRUCTURE_GROUP, V1BETA1,
        V1BETA2,
    };
    use crate::testing::{list_of, referrer_kind, FakeHost};
    use rstest::rstest;

    /// The version a MachineSet list is sent at, or the failure, for what its CRD serves and
    /// what `capiApiVersion` says.
    #[rstest]
    #[case::auto_newest(&["v1beta2", "v1beta1"], VersionChoice::Auto, Ok(Some("v1beta2")))]
    #[case::auto_v1beta1_only(&["v1beta1"], VersionChoice::Auto, Ok(Some("v1beta1")))]
    #[case::auto_nothing_readable(&["v1alpha4"], VersionChoice::Auto, Err(Failure::NoReadableVersion))]
    #[case::auto_nothing_served_is_not_installed(&[], VersionChoice::Auto, Ok(None))]
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

    /// The masks each list sends are the catalogue's, metadata included, as the host saw them.
    #[test]
    fn lists_send_the_catalogue_masks() {
        let v2 = "cluster.x-k8s.io/v1beta2";
        let host = FakeHost::new().answer_list(v2, "MachineSet", &list_of(v2, "MachineSet", &[]));
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        lookups.referrers(referrer_kind("MachineSet")).unwrap();
        // The CRD list's masks, then the MachineSet list's: the catalogue's, which
        // host.rs's test writes out.
        assert_eq!(
            host.sent_masks(0),
            [
                "metadata.name",
                "spec.group",
                "spec.names.kind",
                "spec.names.plural",
                "spec.versions.name",
                "spec.versions.served",
            ]
        );
        let catalogue: Vec<String> = referrer_kind("MachineSet").masks().into_iter().collect();
        assert_eq!(host.sent_masks(1), catalogue);
    }

    /// A CRD whose versions are all `served: false` cannot be read by any client: not installed.
    #[test]
    fn a_crd_that_serves_no_version_is_not_installed() {
        let host = FakeHost::new().install_crd(
            CONTROL_PLANE_GROUP,
            "RKE2ControlPlane",
            "rke2controlplanes",
            &[("v1beta1", false), ("v1beta2", false)],
        );
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        assert_eq!(
            lookups.referrers(referrer_kind("RKE2ControlPlane")),
            Ok(vec![])
        );
        assert_eq!(lookups.scanned(TemplateClass::Machine, false), Ok(vec![]));
        assert_eq!(host.calls().len(), 1);
    }

    /// A served version next to one that is not: only the served one is read.
    #[test]
    fn only_served_versions_are_read() {
        let host = FakeHost::new().install_crd(
            CAPI_GROUP,
            "MachineSet",
            "machinesets",
            &[("v1beta2", false), ("v1beta1", true)],
        );
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        let kind = referrer_kind("MachineSet");
        assert_eq!(lookups.version(&kind.resource), Ok(Some("v1beta1")));
    }

    fn scanned_kinds(host: &FakeHost, class: TemplateClass) -> Vec<String> {
        let settings = Settings::default();
        let mut lookups = HostLookups::new(host, &settings, "ns");
        match lookups.scanned(class, false) {
            Ok(scans) => scans.into_iter().map(|s| s.kind).collect(),
            Err(e) => vec![format!("{:?}: {}", e.failure, e.lookup.api_version())],
        }
    }

    const CP: &str = CONTROL_PLANE_GROUP;

    /// Which installed kinds a machine-template deletion scans, and at which version: an unknown
    /// kind in a control-plane group, a known kind served only at unknown versions, a CRD named
    /// like a catalogue entry that declares another kind. Not scanned: templates, kinds in other
    /// groups, kinds that cannot keep the class, and kinds the catalogue reads.
    #[rstest]
    #[case::unknown_control_plane(CP, "FooControlPlane", "foocontrolplanes", &["v1beta3"], Some("controlplane.cluster.x-k8s.io/v1beta3"))]
    #[case::unknown_etcd(ETCD_GROUP, "FooEtcdCluster", "fooetcdclusters", &["v1alpha1"], Some("etcdcluster.cluster.x-k8s.io/v1alpha1"))]
    #[case::newest_served_first(CP, "FooControlPlane", "foocontrolplanes", &["v1alpha4", "v1", "v1beta2"], Some("controlplane.cluster.x-k8s.io/v1"))]
    #[case::known_at_a_future_version(CP, "TalosControlPlane", "taloscontrolplanes", &["v1alpha4"], Some("controlplane.cluster.x-k8s.io/v1alpha4"))]
    #[case::k0smotron_v1beta3(CP, "K0sControlPlane", "k0scontrolplanes", &["v1beta3"], Some("controlplane.cluster.x-k8s.io/v1beta3"))]
    #[case::catalogue_plural_other_kind(CP, "TalosControlPlaneX", "taloscontrolplanes", &["v1alpha3"], Some("controlplane.cluster.x-k8s.io/v1alpha3"))]
    #[case::known_at_a_known_version(CP, "TalosControlPlane", "taloscontrolplanes", &["v1alpha3"], None)]
    #[case::a_template(CP, "FooControlPlaneTemplate", "foocontrolplanetemplates", &["v1beta1"], None)]
    #[case::hosted_k0smotron(CP, "K0smotronControlPlane", "k0smotroncontrolplanes", &["v1beta2"], None)]
    #[case::managed_eks(CP, "AWSManagedControlPlane", "awsmanagedcontrolplanes", &["v1beta2"], None)]
    #[case::teutonet_hosted(CP, "HostedControlPlane", "hostedcontrolplanes", &["v1alpha1"], None)]
    #[case::nested(CP, "NestedControlPlane", "nestedcontrolplanes", &["v1alpha4"], None)]
    #[case::nested_etcd(CP, "NestedEtcd", "nestedetcds", &["v1alpha4"], None)]
    #[case::nested_apiserver(CP, "NestedAPIServer", "nestedapiservers", &["v1alpha4"], None)]
    #[case::nested_controller_manager(CP, "NestedControllerManager", "nestedcontrollermanagers", &["v1alpha4"], None)]
    #[case::infrastructure_group(INFRASTRUCTURE_GROUP, "FooMachine", "foomachines", &["v1beta1"], None)]
    #[case::core_group(CAPI_GROUP, "MachinePool", "machinepools", &["v1beta2"], None)]
    fn what_a_machine_template_deletion_scans(
        #[case] group: &str,
        #[case] kind: &str,
        #[case] plural: &str,
        #[case] versions: &[&str],
        #[case] scanned_at: Option<&str>,
    ) {
        let versions: Vec<(&str, bool)> = versions.iter().map(|v| (*v, true)).collect();
        let mut host = FakeHost::new().install_crd(group, kind, plural, &versions);
        if let Some(api_version) = scanned_at {
            host = host.answer_list(api_version, kind, &list_of(api_version, kind, &[]));
        }
        let expected: Vec<String> = scanned_at.map(|_| kind.to_string()).into_iter().collect();
        assert_eq!(scanned_kinds(&host, TemplateClass::Machine), expected);
        if let Some(api_version) = scanned_at {
            // The list is the last call: after the can_i question for a plural the shipped RBAC
            // does not grant (none for a catalogue plural).
            let calls = host.calls();
            let last = calls.len() - 1;
            assert_eq!(calls[last], format!("list {api_version} {kind} ns"));
            assert_eq!(host.sent_masks(last), catalogue::SCAN_MASKS);
            let asked = calls.iter().any(|c| c.starts_with("can-i list "));
            let shipped = catalogue::resources_read().any(|r| r.plural == plural);
            assert_eq!(asked, !shipped, "{calls:?}");
        }
    }

    /// A catalogue kind served only at a future version is scanned with its own reads as well
    /// (a MachineSet's `status.replicas`), so that its keeper rules can apply.
    #[test]
    fn a_known_kind_is_scanned_with_its_own_reads() {
        let v3 = "cluster.x-k8s.io/v1beta3";
        let host = FakeHost::new()
            .install("MachineSet", &["v1beta3"])
            .answer_list(v3, "MachineSet", &list_of(v3, "MachineSet", &[]));
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        let scans = lookups.scanned(TemplateClass::Machine, false).unwrap();
        assert_eq!(scans[0].known, Some(referrer_kind("MachineSet")));
        let masks = host.sent_masks(1);
        assert!(masks.contains(&"status.replicas".to_string()), "{masks:?}");
        assert!(masks.contains(&"spec".to_string()), "{masks:?}");
    }

    /// A kind the operator declares in `kindsNamingNoTemplate` is not scanned; the same kind
    /// undeclared is, and so is another unknown kind next to it.
    #[test]
    fn a_declared_kind_is_not_scanned() {
        let v1 = "controlplane.cluster.x-k8s.io/v1alpha1";
        let host = FakeHost::new()
            .install_crd(
                CP,
                "BarControlPlane",
                "barcontrolplanes",
                &[("v1alpha1", true)],
            )
            .install_crd(
                CP,
                "FooControlPlane",
                "foocontrolplanes",
                &[("v1alpha1", true)],
            )
            .answer_list(v1, "BarControlPlane", &list_of(v1, "BarControlPlane", &[]))
            .answer_list(v1, "FooControlPlane", &list_of(v1, "FooControlPlane", &[]));
        let scanned = |declared: &[&str]| {
            let settings = Settings {
                kinds_naming_no_template: declared
                    .iter()
                    .map(|k| (CP.to_string(), k.to_string()))
                    .collect(),
                ..Settings::default()
            };
            let mut lookups = HostLookups::new(&host, &settings, "ns");
            let scans = lookups.scanned(TemplateClass::Machine, false).unwrap();
            scans.into_iter().map(|s| s.kind).collect::<Vec<_>>()
        };
        assert_eq!(scanned(&[]), ["BarControlPlane", "FooControlPlane"]);
        assert_eq!(scanned(&["FooControlPlane"]), ["BarControlPlane"]);
        assert_eq!(
            scanned(&["FooControlPlane", "BarControlPlane"]),
            Vec::<String>::new()
        );
    }

    /// A class whose keepers the catalogue knows whole scans no unknown kind.
    #[rstest]
    #[case::cluster_template(TemplateClass::Cluster)]
    #[case::remediation(TemplateClass::Remediation)]
    #[case::data(TemplateClass::Data)]
    fn other_classes_do_not_scan_unknown_control_planes(#[case] class: TemplateClass) {
        let host = FakeHost::new().install_crd(
            CP,
            "FooControlPlane",
            "foocontrolplanes",
            &[("v1beta1", true)],
        );
        assert_eq!(scanned_kinds(&host, class), Vec::<String>::new());
    }

    /// A known kind served only at versions the policy does not know is not a failure of the
    /// field-by-field read: the scan reads it, and only a scan that cannot be done fails.
    #[test]
    fn a_future_version_is_scanned_and_a_denied_scan_fails_naming_it() {
        let host = FakeHost::new()
            .install("TalosControlPlane", &["v1alpha4"])
            .fail_list(
                "controlplane.cluster.x-k8s.io/v1alpha4",
                "TalosControlPlane",
                "Policy has not been granted access to Kubernetes controlplane.cluster.x-k8s.io/v1alpha4/TalosControlPlane resources. The violation has been reported.",
            );
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        assert_eq!(
            lookups.referrers(referrer_kind("TalosControlPlane")),
            Ok(vec![])
        );
        let error = lookups.scanned(TemplateClass::Machine, false).unwrap_err();
        assert_eq!(error.failure, Failure::AccessDenied);
        assert_eq!(
            error.lookup.api_version(),
            "controlplane.cluster.x-k8s.io/v1alpha4"
        );
        // Metal3Machines keep through annotations, which a scan of the spec cannot see.
        let host = FakeHost::new().install("Metal3Machine", &["v1beta3"]);
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        let error = lookups
            .referrers(referrer_kind("Metal3Machine"))
            .unwrap_err();
        assert_eq!(error.failure, Failure::NoReadableVersion);
    }

    /// Row 6 reads Clusters only for a template with Cluster owners; without a Cluster CRD every
    /// owner would read as gone and release the template, so it fails closed.
    #[test]
    fn a_missing_cluster_crd_fails_closed() {
        let host = FakeHost::new().uninstall("Cluster");
        let settings = Settings::default();
        let mut lookups = HostLookups::new(&host, &settings, "ns");
        assert_eq!(
            lookups.cluster("c").map_err(|e| e.failure),
            Err(Failure::NoClusterCrd)
        );
    }

    /// The mutation reads the template at the machine's version without the CRD list, so that a
    /// CRD list that never answers cannot hold up machine creation; a pinned version, or one
    /// the policy does not know, still goes through the CRD list.
    #[rstest]
    #[case::auto_known_version(VersionChoice::Auto, "v1beta1", &["get infrastructure.cluster.x-k8s.io/v1beta1 Metal3MachineTemplate ns/t cache=false"])]
    #[case::pinned(VersionChoice::Fixed(V1BETA2), "v1beta1", &["list-all apiextensions.k8s.io/v1 CustomResourceDefinition", "get infrastructure.cluster.x-k8s.io/v1beta2 Metal3MachineTemplate ns/t cache=false"])]
    #[case::unknown_version(VersionChoice::Auto, "v1beta3", &["list-all apiextensions.k8s.io/v1 CustomResourceDefinition", "get infrastructure.cluster.x-k8s.io/v1beta2 Metal3MachineTemplate ns/t cache=false"])]
    fn the_mutation_reads_the_template_without_the_crd_list(
        #[case] choice: VersionChoice,
        #[case] machine_version: &str,
        #[case] calls: &[&str],
    ) {
        // The CRD list fails: a read that needs it shows the failure.
        let host = FakeHost::new();
        let host = if calls.len() == 1 {
            host.answer_crds(Err("Callback evaluation failure: the list never answered"))
        } else {
            host
        };
        let host = host
            .answer_get(
                "infrastructure.cluster.x-k8s.io/v1beta1",
                "Metal3MachineTemplate",
                "t",
                r#"{"kind":"Metal3MachineTemplate","metadata":{"name":"t"}}"#,
            )
            .answer_get(
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "Metal3MachineTemplate",
                "t",
                r#"{"kind":"Metal3MachineTemplate","metadata":{"name":"t"}}"#,
            );
        let settings = Settings {
            metal3_api_version: choice,
            ..Settings::default()
        };
        let mut lookups = HostLookups::new(&host, &settings, "ns").for_machine_at(machine_version);
        assert!(lookups.metal3_machine_template("t").unwrap().is_some());
        assert_eq!(host.calls(), calls);
    }

    #[rstest]
    #[case::ga_over_beta(&["v1beta2", "v1"], "v1")]
    #[case::beta_over_alpha(&["v1alpha9", "v1beta1"], "v1beta1")]
    #[case::higher_beta(&["v1beta1", "v1beta3"], "v1beta3")]
    #[case::higher_major(&["v1", "v2alpha1", "v2"], "v2")]
    #[case::odd_names_last(&["latest", "v1alpha1"], "v1alpha1")]
    fn the_scan_reads_the_newest_served_version(#[case] served: &[&str], #[case] expected: &str) {
        let served: Vec<String> = served.iter().map(|s| s.to_string()).collect();
        assert_eq!(newest(&served), expected);
    }
}
