//! The catalogue's tests: guarded kinds, who keeps what, plurals. test_data/catalogue.json is
//! written from the catalogue by `cargo xtask gen` (xtask/src/catalogue.rs).
use super::*;
use TemplateClass::*;
use rstest::rstest;

#[rstest]
#[case::metal3_machine(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", Some(Machine))]
#[case::openstack_machine(INFRASTRUCTURE_GROUP, "OpenStackMachineTemplate", Some(Machine))]
#[case::vsphere_supervisor(
    "vmware.infrastructure.cluster.x-k8s.io",
    "VSphereMachineTemplate",
    Some(Machine)
)]
#[case::docker_pool(INFRASTRUCTURE_GROUP, "DockerMachinePoolTemplate", Some(MachinePool))]
#[case::metal3_cluster(INFRASTRUCTURE_GROUP, "Metal3ClusterTemplate", Some(Cluster))]
#[case::azure_managed_cp(
    INFRASTRUCTURE_GROUP,
    "AzureManagedControlPlaneTemplate",
    Some(ControlPlane)
)]
#[case::kubeadm_cp(CONTROL_PLANE_GROUP, "KubeadmControlPlaneTemplate", Some(ControlPlane))]
#[case::talos_config(BOOTSTRAP_GROUP, "TalosConfigTemplate", Some(Bootstrap))]
#[case::kubeadm_config(BOOTSTRAP_GROUP, "KubeadmConfigTemplate", Some(Bootstrap))]
#[case::metal3_machine_not_a_template(INFRASTRUCTURE_GROUP, "Metal3Machine", None)]
#[case::remediation_template(INFRASTRUCTURE_GROUP, "Metal3RemediationTemplate", Some(Remediation))]
#[case::remediation_template_in_bootstrap(BOOTSTRAP_GROUP, "FooRemediationTemplate", None)]
#[case::data_template(INFRASTRUCTURE_GROUP, "Metal3DataTemplate", Some(Data))]
#[case::data_template_elsewhere(BOOTSTRAP_GROUP, "Metal3DataTemplate", None)]
#[case::other_data_template(INFRASTRUCTURE_GROUP, "FooDataTemplate", None)]
#[case::config_not_template(BOOTSTRAP_GROUP, "KubeadmConfig", None)]
#[case::machine_template_in_bootstrap(BOOTSTRAP_GROUP, "FooMachineTemplate", None)]
#[case::config_template_in_infra(INFRASTRUCTURE_GROUP, "FooConfigTemplate", None)]
#[case::cluster_template_in_control_plane(CONTROL_PLANE_GROUP, "FooClusterTemplate", None)]
#[case::other_group("infrastructure.example.com", "FooMachineTemplate", None)]
#[case::lookalike_group("xinfrastructure.cluster.x-k8s.io", "FooMachineTemplate", None)]
#[case::bare_suffix(INFRASTRUCTURE_GROUP, "MachineTemplate", None)]
#[case::core_machine(CAPI_GROUP, "MachineTemplate", None)]
fn guarded_kinds(#[case] group: &str, #[case] kind: &str, #[case] expected: Option<TemplateClass>) {
    assert_eq!(template_class(group, kind), expected);
    assert_eq!(
        template_class_of_plural(group, &format!("{}s", kind.to_lowercase())),
        expected
    );
}

#[rstest]
#[case::md_machine("MachineDeployment", Machine, false, true)]
#[case::md_bootstrap("MachineDeployment", Bootstrap, false, true)]
#[case::md_cluster("MachineDeployment", Cluster, false, false)]
#[case::md_pool("MachineDeployment", MachinePool, false, false)]
#[case::kcp_machine("KubeadmControlPlane", Machine, false, true)]
#[case::kcp_bootstrap("KubeadmControlPlane", Bootstrap, false, false)]
#[case::class_cluster("ClusterClass", Cluster, false, true)]
#[case::class_control_plane("ClusterClass", ControlPlane, false, true)]
#[case::class_pool("ClusterClass", MachinePool, false, true)]
#[case::metal3_machine_without_reuse("Metal3Machine", Machine, false, false)]
#[case::metal3_machine_with_reuse("Metal3Machine", Machine, true, true)]
#[case::metal3_machine_bootstrap("Metal3Machine", Bootstrap, true, false)]
fn who_keeps_what(
    #[case] kind: &str,
    #[case] class: TemplateClass,
    #[case] node_reuse: bool,
    #[case] expected: bool,
) {
    let referrer = REFERRERS
        .iter()
        .find(|r| r.kind() == kind)
        .expect("kind in the catalogue");
    assert_eq!(referrer.can_keep(class, node_reuse), expected);
}

#[test]
fn plurals_are_the_kind_in_lower_case_plus_s() {
    for resource in resources_read() {
        let lower = resource.kind.to_lowercase();
        let expected = if lower.ends_with("ss") {
            format!("{lower}es")
        } else {
            format!("{lower}s")
        };
        assert_eq!(resource.plural, expected, "{}", resource.kind);
    }
}

/// A few plurals, each in its group, that the guard recognises.
#[test]
fn known_plurals_are_guarded() {
    for (group, plural) in [
        (INFRASTRUCTURE_GROUP, "metal3machinetemplates"),
        (
            "vmware.infrastructure.cluster.x-k8s.io",
            "vspheremachinetemplates",
        ),
        (INFRASTRUCTURE_GROUP, "metal3datatemplates"),
        (BOOTSTRAP_GROUP, "kubeadmconfigtemplates"),
        (CONTROL_PLANE_GROUP, "kubeadmcontrolplanetemplates"),
    ] {
        assert!(
            template_class_of_plural(group, plural).is_some(),
            "{plural}"
        );
    }
}

/// The version settings are settings the policy knows, and each pins some kind.
#[test]
fn every_version_setting_is_a_known_setting() {
    let settings: Vec<&str> = resources_read()
        .filter_map(|r| r.setting.map(|s| s.name()))
        .collect();
    for setting in VersionSetting::ALL {
        assert!(settings.contains(&setting.name()));
        assert!(crate::settings::known_names().any(|n| n == setting.name()));
    }
}

#[test]
fn reads_and_fields_are_sorted_and_unique() {
    let lists = resources_read()
        .map(|r| (r.kind, r.reads))
        .chain(REFERRERS.iter().map(|r| (r.kind(), r.fields)));
    for (kind, list) in lists {
        let mut sorted = list.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, list, "{kind}");
    }
    assert_eq!(cluster_kind().resource, CLUSTER);
}

/// Why a catalogue path cannot be read, if it cannot: a referrer field must start at `spec` or
/// `status` (the roots references are walked from), a read at `metadata`, `spec` or `status`.
/// A typo such as `sepc.` would otherwise be read as absent, which fails open.
fn path_problem(path: &str, roots: &[&str]) -> Option<String> {
    let root = path.split('.').next().unwrap_or_default();
    let segments_ok = path.split('.').all(|s| {
        let (name, key) = split_key(s);
        !name.is_empty() && key.is_none_or(|k| !k.is_empty())
    });
    match (roots.contains(&root) && path.contains('.'), segments_ok) {
        (true, true) => None,
        (false, _) => Some(format!("{path} does not start at {roots:?}")),
        (_, false) => Some(format!("{path} has an empty segment")),
    }
}

const FIELD_ROOTS: [&str; 2] = ["spec", "status"];
const READ_ROOTS: [&str; 3] = ["metadata", "spec", "status"];

#[rstest]
#[case::typo("sepc.infrastructureRef", &FIELD_ROOTS, false)]
#[case::metadata_is_no_field("metadata.name", &FIELD_ROOTS, false)]
#[case::bare_root("spec", &FIELD_ROOTS, false)]
#[case::empty_segment("spec..infrastructureRef", &FIELD_ROOTS, false)]
#[case::empty_key("spec.workers.machineDeployments[].x", &FIELD_ROOTS, false)]
#[case::good_field("spec.workers.machineDeployments[class].x", &FIELD_ROOTS, true)]
#[case::good_read("metadata.name", &READ_ROOTS, true)]
fn the_path_check_catches_typos(
    #[case] path: &str,
    #[case] roots: &[&str],
    #[case] readable: bool,
) {
    assert_eq!(path_problem(path, roots).is_none(), readable);
}

/// Every path of the catalogue, each field of each kind: a kind with one good field and one typo
/// fails here.
#[test]
fn every_catalogue_path_starts_at_a_root_the_object_has() {
    for referrer in &REFERRERS {
        for field in referrer.fields {
            assert_eq!(
                path_problem(field, &FIELD_ROOTS),
                None,
                "{}",
                referrer.kind()
            );
        }
        for implied in referrer.implied {
            assert!(
                referrer.fields.contains(&implied.field),
                "{}: implied kind at {}, which is not one of its fields",
                referrer.kind(),
                implied.field
            );
        }
    }
    for resource in resources_read() {
        for read in resource.reads {
            assert_eq!(path_problem(read, &READ_ROOTS), None, "{}", resource.kind);
        }
    }
}

/// Every plural of the provider table is one the guard recognises in its row's group, and each
/// is written once: the shipped rules are written from this table.
#[test]
fn every_provider_template_is_guarded_and_listed_once() {
    let mut seen = BTreeSet::new();
    for provider in PROVIDERS {
        assert!(!provider.templates.is_empty(), "{}", provider.name);
        for plural in provider.templates {
            assert!(
                template_class_of_plural(provider.group, plural).is_some(),
                "{} ({}): {plural} is not a plural the guard recognises",
                provider.name,
                provider.group
            );
            assert!(
                seen.insert((provider.group, *plural)),
                "{plural} is listed twice"
            );
        }
    }
}

/// The check above can fail: a plural the guard does not recognise is refused.
#[test]
fn the_provider_check_refuses_an_unguarded_plural() {
    assert!(template_class_of_plural(INFRASTRUCTURE_GROUP, "metal3machines").is_none());
    assert!(template_class_of_plural("example.com", "fooMachineTemplates").is_none());
}
