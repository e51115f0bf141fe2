//! What the policy knows about each kind of object, in one place.
//!
//! A template class says which DELETE requests are guarded; a referrer kind says how to read the
//! objects that can keep a template (group, version setting, field masks, whether its provider
//! may be absent) and which template classes it can keep. Routing, the lookups, the messages'
//! advice and the metadata checks all derive from these tables: adding a provider's template
//! suffix or a referrer kind is one entry here (plus its plural in the rules of metadata.yml).

pub const CAPI_GROUP: &str = "cluster.x-k8s.io";
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";
pub const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";
pub const BOOTSTRAP_GROUP: &str = "bootstrap.cluster.x-k8s.io";

/// The served API versions the policy can read Cluster API objects at, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    V1beta2,
    V1beta1,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V1beta2 => "v1beta2",
            Version::V1beta1 => "v1beta1",
        }
    }

    pub fn other(self) -> Version {
        match self {
            Version::V1beta2 => Version::V1beta1,
            Version::V1beta1 => Version::V1beta2,
        }
    }
}

/// Every version a kind may be read at; metadata.yml lists each kind at all of them.
#[cfg(test)]
pub const VERSIONS: [Version; 2] = [Version::V1beta2, Version::V1beta1];

/// The setting that chooses the version a kind is read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum VersionSetting {
    Capi,
    ControlPlane,
    Metal3,
}

impl VersionSetting {
    #[cfg(test)]
    pub const ALL: [VersionSetting; 3] = [
        VersionSetting::Capi,
        VersionSetting::ControlPlane,
        VersionSetting::Metal3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VersionSetting::Capi => "capiApiVersion",
            VersionSetting::ControlPlane => "controlPlaneApiVersion",
            VersionSetting::Metal3 => "metal3ApiVersion",
        }
    }
}

/// A kind the policy reads. Kinds of one provider are served at the same versions, so the
/// version found for one of them is tried first for the others.
#[derive(Debug, PartialEq, Eq)]
pub struct Resource {
    pub kind: &'static str,
    /// The resource name that RBAC rules and webhook rules use.
    pub plural: &'static str,
    pub group: &'static str,
    pub provider: &'static str,
    pub setting: VersionSetting,
    /// Field masks: the host keeps metadata plus these paths and nothing else. A mask naming
    /// only `metadata.name` drops the whole spec and status.
    pub masks: &'static [&'static str],
}

impl Resource {
    pub fn api_version(&self, version: Version) -> String {
        format!("{}/{}", self.group, version.as_str())
    }
}

/// The classes of guarded templates, by who can name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TemplateClass {
    /// Infrastructure `*MachineTemplate`.
    Machine,
    /// Infrastructure `*MachinePoolTemplate`.
    MachinePool,
    /// Infrastructure `*ClusterTemplate`.
    Cluster,
    /// `*ControlPlaneTemplate`, in the control-plane group or (managed offerings) the
    /// infrastructure group.
    ControlPlane,
    /// Bootstrap `*ConfigTemplate`.
    Bootstrap,
}

/// Which groups a guarded suffix applies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Groups {
    /// `infrastructure.cluster.x-k8s.io` and every group ending in `.infrastructure.cluster.x-k8s.io`
    /// (vSphere's supervisor mode uses `vmware.infrastructure.cluster.x-k8s.io`).
    Infrastructure,
    Bootstrap,
    ControlPlane,
}

impl Groups {
    fn contains(self, group: &str) -> bool {
        match self {
            Groups::Infrastructure => {
                group == INFRASTRUCTURE_GROUP
                    || group
                        .strip_suffix(INFRASTRUCTURE_GROUP)
                        .is_some_and(|prefix| prefix.ends_with('.') && prefix.len() > 1)
            }
            Groups::Bootstrap => group == BOOTSTRAP_GROUP,
            Groups::ControlPlane => group == CONTROL_PLANE_GROUP,
        }
    }
}

/// A guarded kind suffix in some groups.
#[derive(Debug)]
pub struct GuardedSuffix {
    pub groups: Groups,
    pub suffix: &'static str,
    pub class: TemplateClass,
}

/// The guarded templates: DELETE of a kind matching one of these is checked, every other request
/// is accepted without a lookup. Order matters only for readability: no suffix is a suffix of
/// another in the same groups.
pub const GUARDED: [GuardedSuffix; 6] = [
    GuardedSuffix {
        groups: Groups::Infrastructure,
        suffix: "MachineTemplate",
        class: TemplateClass::Machine,
    },
    GuardedSuffix {
        groups: Groups::Infrastructure,
        suffix: "MachinePoolTemplate",
        class: TemplateClass::MachinePool,
    },
    GuardedSuffix {
        groups: Groups::Infrastructure,
        suffix: "ClusterTemplate",
        class: TemplateClass::Cluster,
    },
    GuardedSuffix {
        groups: Groups::Infrastructure,
        suffix: "ControlPlaneTemplate",
        class: TemplateClass::ControlPlane,
    },
    GuardedSuffix {
        groups: Groups::Bootstrap,
        suffix: "ConfigTemplate",
        class: TemplateClass::Bootstrap,
    },
    GuardedSuffix {
        groups: Groups::ControlPlane,
        suffix: "ControlPlaneTemplate",
        class: TemplateClass::ControlPlane,
    },
];

/// The class of a guarded template kind; `None` for every kind the policy does not guard. A
/// suffix alone (a kind named `MachineTemplate`) is not a provider's kind.
pub fn template_class(group: &str, kind: &str) -> Option<TemplateClass> {
    GUARDED
        .iter()
        .find(|g| {
            g.groups.contains(group) && kind.len() > g.suffix.len() && kind.ends_with(g.suffix)
        })
        .map(|g| g.class)
}

/// The class of a guarded template, from the plural resource name a webhook rule uses (the kind
/// in lower case plus "s"): the metadata checks use it.
#[cfg(test)]
pub fn template_class_of_plural(group: &str, plural: &str) -> Option<TemplateClass> {
    GUARDED
        .iter()
        .find(|g| {
            let suffix = format!("{}s", g.suffix.to_lowercase());
            g.groups.contains(group) && plural.len() > suffix.len() && plural.ends_with(&suffix)
        })
        .map(|g| g.class)
}

/// How a referrer's objects are read: which typed view, hence which fields can name a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// MachineDeployment, MachineSet: `spec.template.spec.{infrastructureRef,bootstrap.configRef}`.
    MachineSetLike,
    /// KubeadmControlPlane, RKE2ControlPlane: the machine template reference in each place it
    /// has lived.
    ControlPlane,
    /// ClusterClass: infrastructure, control plane, machine infrastructure and worker classes.
    ClusterClass,
    /// Metal3Machine: the cloned-from annotations.
    ClonedFrom,
}

/// What the rejection advises when a referrer of this kind keeps a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Advice {
    Rollout,
    ClusterClass,
    NodeReuse,
}

/// A kind of object that can keep a template.
#[derive(Debug, PartialEq, Eq)]
pub struct ReferrerKind {
    pub resource: Resource,
    pub shape: Shape,
    /// The template classes its fields can name.
    pub keeps: &'static [TemplateClass],
    /// Its provider may legitimately be absent: not served at any version counts as none.
    pub optional: bool,
    /// Keeps a template only when the template sets `spec.nodeReuse: true` (CAPM3 reads nothing
    /// else of it when the machine is deleted).
    pub only_node_reuse: bool,
    /// Still keeps a template while being deleted. Only for referrers whose deletion never waits
    /// for the template, so counting them only delays.
    pub counts_while_deleting: bool,
    /// A MachineSet scaled to zero with no machines left keeps nothing (unless
    /// `countScaledDownMachineSets`).
    pub scaled_down_keeps_nothing: bool,
    pub advice: Advice,
}

impl ReferrerKind {
    pub fn kind(&self) -> &'static str {
        self.resource.kind
    }

    pub fn can_keep(&self, class: TemplateClass, node_reuse: bool) -> bool {
        self.keeps.contains(&class) && (node_reuse || !self.only_node_reuse)
    }
}

const CAPI: &str = "cluster-api";

const fn capi(
    kind: &'static str,
    plural: &'static str,
    masks: &'static [&'static str],
) -> Resource {
    Resource {
        kind,
        plural,
        group: CAPI_GROUP,
        provider: CAPI,
        setting: VersionSetting::Capi,
        masks,
    }
}

const fn control_plane(kind: &'static str, plural: &'static str) -> ReferrerKind {
    ReferrerKind {
        resource: Resource {
            kind,
            plural,
            group: CONTROL_PLANE_GROUP,
            // Each control-plane provider ships on its own release line.
            provider: kind,
            setting: VersionSetting::ControlPlane,
            masks: &[
                "spec.infrastructureRef",
                "spec.machineTemplate.infrastructureRef",
                "spec.machineTemplate.spec.infrastructureRef",
            ],
        },
        shape: Shape::ControlPlane,
        keeps: &[TemplateClass::Machine],
        optional: true,
        only_node_reuse: false,
        counts_while_deleting: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::Rollout,
    }
}

/// Every referrer kind, in the order lookups run and messages list them.
pub static REFERRERS: [ReferrerKind; 6] = [
    ReferrerKind {
        resource: capi(
            "MachineDeployment",
            "machinedeployments",
            &[
                "spec.template.spec.bootstrap.configRef",
                "spec.template.spec.infrastructureRef",
            ],
        ),
        shape: Shape::MachineSetLike,
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        optional: false,
        only_node_reuse: false,
        counts_while_deleting: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::Rollout,
    },
    ReferrerKind {
        resource: capi(
            "MachineSet",
            "machinesets",
            &[
                "spec.replicas",
                "spec.template.spec.bootstrap.configRef",
                "spec.template.spec.infrastructureRef",
                "status.replicas",
            ],
        ),
        shape: Shape::MachineSetLike,
        keeps: &[TemplateClass::Machine, TemplateClass::Bootstrap],
        optional: false,
        only_node_reuse: false,
        counts_while_deleting: false,
        scaled_down_keeps_nothing: true,
        advice: Advice::Rollout,
    },
    control_plane("KubeadmControlPlane", "kubeadmcontrolplanes"),
    control_plane("RKE2ControlPlane", "rke2controlplanes"),
    ReferrerKind {
        resource: capi(
            "ClusterClass",
            "clusterclasses",
            &[
                "spec.controlPlane.machineInfrastructure",
                "spec.controlPlane.ref",
                "spec.controlPlane.templateRef",
                "spec.infrastructure",
                "spec.workers",
            ],
        ),
        shape: Shape::ClusterClass,
        keeps: &[
            TemplateClass::Machine,
            TemplateClass::MachinePool,
            TemplateClass::Cluster,
            TemplateClass::ControlPlane,
            TemplateClass::Bootstrap,
        ],
        optional: false,
        only_node_reuse: false,
        counts_while_deleting: false,
        scaled_down_keeps_nothing: false,
        advice: Advice::ClusterClass,
    },
    ReferrerKind {
        resource: METAL3_MACHINE,
        shape: Shape::ClonedFrom,
        keeps: &[TemplateClass::Machine],
        optional: false,
        only_node_reuse: true,
        counts_while_deleting: true,
        scaled_down_keeps_nothing: false,
        advice: Advice::NodeReuse,
    },
];

/// Metal3Machines: only their annotations matter.
pub const METAL3_MACHINE: Resource = Resource {
    kind: "Metal3Machine",
    plural: "metal3machines",
    group: INFRASTRUCTURE_GROUP,
    provider: "metal3",
    setting: VersionSetting::Metal3,
    masks: &["metadata.name"],
};

/// The template a new Metal3Machine is cloned from, read by the mutation.
pub const METAL3_MACHINE_TEMPLATE: Resource = Resource {
    kind: "Metal3MachineTemplate",
    plural: "metal3machinetemplates",
    group: INFRASTRUCTURE_GROUP,
    provider: "metal3",
    setting: VersionSetting::Metal3,
    masks: &["spec.nodeReuse", "spec.template.spec.automatedCleaningMode"],
};

/// The owning Clusters of a template (release row 6): only whether they are being deleted.
pub const CLUSTER: Resource = capi("Cluster", "clusters", &["metadata.name"]);

/// Every kind the policy reads, each at every version in [`VERSIONS`]: what metadata.yml's
/// `contextAwareResources` and the RBAC example must grant.
#[cfg(test)]
pub fn resources_read() -> impl Iterator<Item = &'static Resource> {
    REFERRERS
        .iter()
        .map(|r| &r.resource)
        .chain([&CLUSTER, &METAL3_MACHINE_TEMPLATE])
}

#[cfg(test)]
mod tests {
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
    #[case::remediation_template(INFRASTRUCTURE_GROUP, "Metal3RemediationTemplate", None)]
    #[case::data_template(INFRASTRUCTURE_GROUP, "Metal3DataTemplate", None)]
    #[case::config_not_template(BOOTSTRAP_GROUP, "KubeadmConfig", None)]
    #[case::machine_template_in_bootstrap(BOOTSTRAP_GROUP, "FooMachineTemplate", None)]
    #[case::config_template_in_infra(INFRASTRUCTURE_GROUP, "FooConfigTemplate", None)]
    #[case::cluster_template_in_control_plane(CONTROL_PLANE_GROUP, "FooClusterTemplate", None)]
    #[case::other_group("infrastructure.example.com", "FooMachineTemplate", None)]
    #[case::lookalike_group("xinfrastructure.cluster.x-k8s.io", "FooMachineTemplate", None)]
    #[case::bare_suffix(INFRASTRUCTURE_GROUP, "MachineTemplate", None)]
    #[case::core_machine(CAPI_GROUP, "MachineTemplate", None)]
    fn guarded_kinds(
        #[case] group: &str,
        #[case] kind: &str,
        #[case] expected: Option<TemplateClass>,
    ) {
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
            kinds.insert(
                resource.kind.to_string(),
                serde_json::json!({"group": resource.group, "plural": resource.plural, "masks": resource.masks}),
            );
        }
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::Value::Object(kinds)).unwrap()
        );
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test_data/catalogue.json");
        if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(path, &text).unwrap();
            panic!("{path} was stale and has been rewritten: run test_data/make_cases.py and commit both");
        }
    }

    fn yaml(path: &str) -> Vec<serde_json::Value> {
        let file = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        text.split("\n---")
            .map(|doc| {
                yaml_serde::from_str::<serde_json::Value>(doc)
                    .unwrap_or_else(|e| panic!("{file}: {e}"))
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

    /// The policy server stops an evaluation after timeoutEvalSeconds (2 s by default) and
    /// refuses it: both example policies leave the first list of a namespace room, below the
    /// webhook's own timeout.
    #[test]
    fn example_policies_give_the_evaluation_room_below_the_webhook_timeout() {
        for file in [
            "examples/cluster-admission-policy-guard.yaml",
            "examples/cluster-admission-policy-mutate.yaml",
        ] {
            let policy = yaml(file)
                .into_iter()
                .find(|d| d["kind"] == "ClusterAdmissionPolicy")
                .expect("a ClusterAdmissionPolicy");
            let eval = policy["spec"]["timeoutEvalSeconds"].as_u64().unwrap_or(2);
            let webhook = policy["spec"]["timeoutSeconds"].as_u64().unwrap_or(10);
            assert!(
                eval > 2 && eval < webhook,
                "{file}: timeoutEvalSeconds {eval}, timeoutSeconds {webhook}"
            );
        }
    }

    /// metadata.yml grants exactly what the policy reads, each kind at both versions.
    #[test]
    fn context_aware_resources_are_what_the_catalogue_reads() {
        let metadata = &yaml("metadata.yml")[0];
        let listed: std::collections::BTreeSet<(String, String)> = metadata
            ["contextAwareResources"]
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
                VERSIONS
                    .iter()
                    .map(move |v| (r.api_version(*v), r.kind.to_string()))
            })
            .collect();
        assert_eq!(listed, read);
        let settings: Vec<&str> = resources_read().map(|r| r.setting.name()).collect();
        for setting in VersionSetting::ALL {
            assert!(settings.contains(&setting.name()));
            assert!(crate::settings::KNOWN.contains(&setting.name()));
        }
    }

    #[test]
    fn masks_are_sorted_and_unique() {
        for resource in resources_read() {
            let mut sorted = resource.masks.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted, resource.masks, "{}", resource.kind);
        }
    }
}
