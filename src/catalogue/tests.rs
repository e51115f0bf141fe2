//! The catalogue's tests: guarded kinds, who keeps what, and that the files shipped with the
//! policy (metadata.yml, the example policies, test_data/catalogue.json) agree with it.
use super::*;
use rstest::rstest;
use TemplateClass::*;

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

/// test_data/catalogue.json: the groups and masks of every kind read, for the fixture
/// generator (test_data/make_cases.py). A stale file is rewritten and the test fails once.
#[test]
fn catalogue_json_is_in_sync() {
    let mut kinds = serde_json::Map::new();
    for resource in resources_read() {
        let masks = match REFERRERS.iter().find(|r| r.resource == *resource) {
            Some(referrer) => referrer.masks(),
            None => masks_of(resource),
        };
        kinds.insert(
            resource.kind.to_string(),
            serde_json::json!({"group": resource.group, "plural": resource.plural, "versions": resource.versions, "masks": masks}),
        );
    }
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&serde_json::Value::Object(kinds)).unwrap()
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test_data/catalogue.json");
    if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(path, &text).unwrap();
        panic!(
            "{path} was stale and has been rewritten: run test_data/make_cases.py and commit both"
        );
    }
}

fn yaml(path: &str) -> Vec<serde_json::Value> {
    let file = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.split("\n---")
        .map(|doc| {
            yaml_serde::from_str::<serde_json::Value>(doc).unwrap_or_else(|e| panic!("{file}: {e}"))
        })
        .filter(|doc| !doc.is_null())
        .collect()
}

/// (group, plural) of every DELETE rule.
fn guarded_plurals(rules: &serde_json::Value) -> std::collections::BTreeSet<(String, String)> {
    let mut out = std::collections::BTreeSet::new();
    for rule in rules.as_array().expect("rules are a list") {
        if !rule["operations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "DELETE")
        {
            continue;
        }
        for group in rule["apiGroups"].as_array().unwrap() {
            for plural in rule["resources"].as_array().unwrap() {
                out.insert((
                    group.as_str().unwrap().to_string(),
                    plural.as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out
}

/// metadata.yml, the guard example and artifacthub-pkg.yml guard the same plurals, and each
/// one is a kind the catalogue guards: a rule the code would wave through is a mistake.
#[test]
fn shipped_rules_agree_and_name_only_guarded_kinds() {
    let metadata = &yaml("metadata.yml")[0];
    let from_metadata = guarded_plurals(&metadata["rules"]);
    let example = yaml("examples/cluster-admission-policy-guard.yaml")
        .into_iter()
        .find(|d| d["kind"] == "ClusterAdmissionPolicy")
        .expect("a ClusterAdmissionPolicy");
    assert_eq!(
        guarded_plurals(&example["spec"]["rules"]),
        from_metadata,
        "guard example"
    );
    let pkg = &yaml("artifacthub-pkg.yml")[0];
    let pkg_rules: serde_json::Value =
        yaml_serde::from_str(pkg["annotations"]["kubewarden/rules"].as_str().unwrap()).unwrap();
    assert_eq!(
        guarded_plurals(&pkg_rules),
        from_metadata,
        "artifacthub-pkg.yml"
    );
    for (group, plural) in &from_metadata {
        assert!(
            template_class_of_plural(group, plural).is_some(),
            "{group}/{plural} is not a guarded kind"
        );
    }
    // At least every provider the README promises.
    for plural in [
        "metal3machinetemplates",
        "metal3clustertemplates",
        "openstackmachinetemplates",
        "vspheremachinetemplates",
        "dockermachinetemplates",
        "dockermachinepooltemplates",
        "awsmachinetemplates",
        "azuremachinetemplates",
        "azuremanagedcontrolplanetemplates",
        "gcpmachinetemplates",
        "hcloudmachinetemplates",
        "proxmoxmachinetemplates",
        "nutanixmachinetemplates",
        "ibmvpcmachinetemplates",
        "ocimachinetemplates",
        "kubevirtmachinetemplates",
        "byomachinetemplates",
        "cloudstackmachinetemplates",
        "oscmachinetemplates",
        "tinkerbellmachinetemplates",
        "maasmachinetemplates",
        "linodemachinetemplates",
        "domachinetemplates",
        "kubeadmconfigtemplates",
        "rke2configtemplates",
        "talosconfigtemplates",
        "k0sworkerconfigtemplates",
        "microk8sconfigtemplates",
        "eksconfigtemplates",
        "kubeadmcontrolplanetemplates",
        "rke2controlplanetemplates",
        "k0smotroncontrolplanetemplates",
    ] {
        assert!(
            from_metadata.iter().any(|(_, p)| p == plural),
            "{plural} is not guarded"
        );
    }
}

/// The policy server stops an evaluation after timeoutEvalSeconds (2 s by default) and refuses
/// it with a 500 that no failurePolicy turns into an accept. The guard (failurePolicy: Fail)
/// leaves the first lists of a namespace room, below the webhook's own timeout, so the user reads
/// the policy's answer. The mutation must never block: its evaluation may run as long as the
/// webhook, so a slow one ends as a webhook timeout, which its failurePolicy: Ignore accepts.
#[test]
fn example_policies_give_the_evaluation_room_the_failure_policy_needs() {
    for (file, failure_policy) in [
        ("examples/cluster-admission-policy-guard.yaml", "Fail"),
        ("examples/cluster-admission-policy-mutate.yaml", "Ignore"),
    ] {
        let policy = yaml(file)
            .into_iter()
            .find(|d| d["kind"] == "ClusterAdmissionPolicy")
            .expect("a ClusterAdmissionPolicy");
        let spec = &policy["spec"];
        let eval = spec["timeoutEvalSeconds"].as_u64().unwrap_or(2);
        let webhook = spec["timeoutSeconds"].as_u64().unwrap_or(10);
        assert_eq!(spec["failurePolicy"], failure_policy, "{file}");
        let fits = match failure_policy {
            "Fail" => eval > 2 && eval < webhook,
            _ => eval == webhook,
        };
        assert!(
            fits,
            "{file}: timeoutEvalSeconds {eval}, timeoutSeconds {webhook}"
        );
    }
}

/// metadata.yml grants exactly what the policy reads, each kind at both versions.
#[test]
fn context_aware_resources_are_what_the_catalogue_reads() {
    let metadata = &yaml("metadata.yml")[0];
    let listed: std::collections::BTreeSet<(String, String)> = metadata["contextAwareResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["apiVersion"].as_str().unwrap().to_string(),
                r["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let read: std::collections::BTreeSet<(String, String)> = resources_read()
        .flat_map(|r| {
            r.versions
                .iter()
                .map(move |v| (r.api_version(v), r.kind.to_string()))
        })
        .collect();
    assert_eq!(listed, read);
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
