//! The host answer of the lookups: versions from the CRDs, the scan, masks and reads.
use super::*;
use crate::testing::{FakeHost, list_of};
use guard::catalogue::{
    CAPI_GROUP, CONTROL_PLANE_GROUP, ETCD_GROUP, INFRASTRUCTURE_GROUP, V1BETA1, V1BETA2,
    VersionSetting,
};
use guard::testing::referrer_kind;
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
    let host = FakeHost::new().answer_list(v2, "MachineSet", &list_of(v2, "MachineSet", &[bad]));
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
    // requests.rs's test writes out.
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
#[case::kubernikus(CP, "KubernikusControlPlane", "kubernikuscontrolplanes", &["v1alpha1"], None)]
#[case::steward(CP, "StewardControlPlane", "stewardcontrolplanes", &["v1alpha1"], None)]
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

/// Where a kind's controller follows the namespace a reference gives (Cluster API 1.9's and 1.10's
/// v1beta1 MachineDeployments and MachineSets, Talos, Kairos), it is listed across namespaces
/// instead of in the template's: one call either way, so the common path costs nothing more.
/// At v1beta2 (Cluster API 1.11 and newer) it is listed in the template's namespace.
#[rstest]
#[case::capi_1_10(&["v1beta1"], "list-all cluster.x-k8s.io/v1beta1 MachineDeployment", true)]
#[case::capi_1_11(&["v1beta2", "v1beta1"], "list cluster.x-k8s.io/v1beta2 MachineDeployment ns", false)]
fn references_that_carry_a_namespace_are_listed_across_namespaces(
    #[case] served: &[&str],
    #[case] call: &str,
    #[case] across: bool,
) {
    let version = if across { "v1beta1" } else { "v1beta2" };
    let api_version = format!("cluster.x-k8s.io/{version}");
    let md = serde_json::json!({"kind": "MachineDeployment",
        "metadata": {"name": "md-0", "namespace": "edge-east"},
        "spec": {"template": {"spec": {"infrastructureRef":
            {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
             "kind": "Metal3MachineTemplate", "name": "t", "namespace": "ns"}}}}});
    let list = list_of(&api_version, "MachineDeployment", &[md]);
    let host = FakeHost::new()
        .install("MachineDeployment", served)
        .answer_list(&api_version, "MachineDeployment", &list)
        .answer_list_all(&api_version, "MachineDeployment", &list);
    let settings = Settings::default();
    let mut lookups = HostLookups::new(&host, &settings, "ns");
    let candidates = lookups
        .referrers(referrer_kind("MachineDeployment"))
        .unwrap();
    assert_eq!(host.calls().len(), 2);
    assert_eq!(host.calls()[1], call);
    let namespace = candidates[0].namespace.as_deref();
    assert_eq!(namespace, across.then_some("edge-east"));
    // Listed across namespaces, the list keeps each object's namespace.
    assert_eq!(
        host.sent_masks(1)
            .contains(&"metadata.namespace".to_string()),
        across
    );
}

/// A list across namespaces is checked like any other: an item of another kind, or one that
/// cannot be read, makes the lookup fail (closed), naming the list.
#[rstest]
#[case::another_kind(serde_json::json!({"kind": "MachineSet", "metadata": {"name": "x", "namespace": "a"}}), "the answer holds a MachineSet where a MachineDeployment was asked for")]
#[case::unreadable(serde_json::json!({"kind": "MachineDeployment", "metadata": {"name": 7}}), "the answer cannot be read")]
#[case::namespace_not_a_string(serde_json::json!({"kind": "MachineDeployment", "metadata": {"name": "x", "namespace": 7}}), "the answer cannot be read")]
fn a_list_across_namespaces_is_read_strictly(
    #[case] item: serde_json::Value,
    #[case] detail: &str,
) {
    let v1 = "cluster.x-k8s.io/v1beta1";
    let host = FakeHost::new()
        .install("MachineDeployment", &["v1beta1"])
        .answer_list_all(
            v1,
            "MachineDeployment",
            &list_of(v1, "MachineDeployment", &[item]),
        );
    let settings = Settings::default();
    let mut lookups = HostLookups::new(&host, &settings, "ns");
    let error = lookups
        .referrers(referrer_kind("MachineDeployment"))
        .unwrap_err();
    assert_eq!(error.failure, Failure::Unreadable);
    assert!(error.detail.contains(detail), "{}", error.detail);
    assert!(
        matches!(error.lookup, Lookup::ListAll { .. }),
        "{:?}",
        error.lookup
    );
}

/// Which kind, read at which version, is listed across namespaces: exactly those whose
/// controllers read a template at the namespace the reference gives.
#[rstest]
// cluster-api@v1.10.9 internal/controllers/machinedeployment/machinedeployment_controller.go,
// reconcileExternalTemplateReference: external.Get of ref.Namespace
#[case::machine_deployment_v1beta1("MachineDeployment", &["v1beta1"], true)]
// cluster-api@v1.14.0: v1beta2 references carry no namespace
#[case::machine_deployment_v1beta2("MachineDeployment", &["v1beta2", "v1beta1"], false)]
// cluster-api@v1.10.9 internal/controllers/machineset/machineset_controller.go, the same
#[case::machine_set_v1beta1("MachineSet", &["v1beta1"], true)]
#[case::machine_set_v1beta2("MachineSet", &["v1beta2", "v1beta1"], false)]
// cluster-api-control-plane-provider-talos@v0.5.12 controllers/taloscontrolplane_controller.go
#[case::talos_v1alpha3("TalosControlPlane", &["v1alpha3"], true)]
// cluster-api-provider-kairos@46551fa internal/infrastructure/clone.go, getTemplateObject
#[case::kairos_v1beta2("KairosControlPlane", &["v1beta2"], true)]
// cluster-api@v1.10.9 controlplane/kubeadm/internal/webhooks/kubeadm_control_plane.go: the
// namespace must match metadata.namespace
#[case::kubeadm_v1beta1("KubeadmControlPlane", &["v1beta1"], false)]
// cluster-api@v1.10.9 internal/webhooks/machinehealthcheck.go: the same
#[case::health_check_v1beta1("MachineHealthCheck", &["v1beta1"], false)]
fn only_controllers_that_follow_the_reference_namespace_are_listed_across(
    #[case] kind: &str,
    #[case] served: &[&str],
    #[case] across: bool,
) {
    let referrer = referrer_kind(kind);
    let version = served[0];
    let api_version = referrer.resource.api_version(version);
    let list = list_of(&api_version, kind, &[]);
    let host = FakeHost::new()
        .install(kind, served)
        .answer_list(&api_version, kind, &list)
        .answer_list_all(&api_version, kind, &list);
    let settings = Settings::default();
    let mut lookups = HostLookups::new(&host, &settings, "ns");
    lookups.referrers(referrer).unwrap();
    let expected = if across {
        format!("list-all {api_version} {kind}")
    } else {
        format!("list {api_version} {kind} ns")
    };
    assert_eq!(host.calls()[1], expected);
}
