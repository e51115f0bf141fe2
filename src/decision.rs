//! The deletion decision: pure functions over the template, the objects listed in its namespace
//! and the state of its owning Clusters. No host calls here.

use crate::capi::{
    group_of, ClusterClass, ControlPlane, MachineSetLike, MetadataOnly, BOOTSTRAP_GROUP,
    CAPI_GROUP, DELETE_FOR_MOVE, INFRASTRUCTURE_GROUP, METAL3_MACHINE_TEMPLATE,
};
use crate::references::{self, NamedTemplate, TemplateRef};
use crate::settings::Settings;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Whether DELETE of this group/kind is guarded.
pub fn is_protected(group: &str, kind: &str) -> bool {
    (group == INFRASTRUCTURE_GROUP && kind.ends_with("MachineTemplate"))
        || (group == BOOTSTRAP_GROUP
            && matches!(kind, "KubeadmConfigTemplate" | "RKE2ConfigTemplate"))
}

/// The template being deleted, as read from the request's `oldObject`.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub reference: TemplateRef,
    pub namespace: String,
    /// `spec.nodeReuse: true` on a Metal3MachineTemplate.
    pub node_reuse: bool,
    /// Carries `clusterctl.cluster.x-k8s.io/delete-for-move`.
    pub moving: bool,
    /// Names of the CAPI Clusters among its owners, sorted.
    pub cluster_owners: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TemplateObject {
    metadata: crate::capi::Metadata,
    spec: TemplateSpec,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct TemplateSpec {
    node_reuse: Option<bool>,
}

impl Template {
    /// Reads the template from a DELETE request; `name` is the request's name, used when the
    /// old object has none.
    pub fn from_old_object(
        group: &str,
        kind: &str,
        name: &str,
        namespace: &str,
        old_object: &Value,
    ) -> Result<Template, String> {
        if !old_object.is_object() {
            return Err("the request carries no oldObject".to_string());
        }
        let object = TemplateObject::deserialize(old_object)
            .map_err(|e| format!("its oldObject cannot be read ({e})"))?;
        let meta = object.metadata;
        let mut cluster_owners: Vec<String> = meta
            .owner_references
            .iter()
            .filter(|owner| owner.kind == "Cluster" && group_of(&owner.api_version) == CAPI_GROUP)
            .map(|owner| owner.name.clone())
            .collect();
        cluster_owners.sort();
        cluster_owners.dedup();
        let name = if meta.name.is_empty() {
            name
        } else {
            &meta.name
        };
        if name.is_empty() {
            return Err("neither the request nor its oldObject names the template".to_string());
        }
        Ok(Template {
            reference: TemplateRef {
                group: group.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
            },
            namespace: namespace.to_string(),
            node_reuse: kind == METAL3_MACHINE_TEMPLATE && object.spec.node_reuse == Some(true),
            moving: meta.annotations.contains_key(DELETE_FOR_MOVE),
            cluster_owners,
        })
    }
}

/// The kinds of objects that can keep a template, in the order messages list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReferrerKind {
    MachineDeployment,
    MachineSet,
    KubeadmControlPlane,
    RKE2ControlPlane,
    ClusterClass,
    Metal3Machine,
}

impl ReferrerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReferrerKind::MachineDeployment => "MachineDeployment",
            ReferrerKind::MachineSet => "MachineSet",
            ReferrerKind::KubeadmControlPlane => "KubeadmControlPlane",
            ReferrerKind::RKE2ControlPlane => "RKE2ControlPlane",
            ReferrerKind::ClusterClass => "ClusterClass",
            ReferrerKind::Metal3Machine => "Metal3Machine",
        }
    }

    /// A control-plane provider may legitimately be absent from a cluster.
    pub fn is_optional(self) -> bool {
        matches!(
            self,
            ReferrerKind::KubeadmControlPlane | ReferrerKind::RKE2ControlPlane
        )
    }
}

impl fmt::Display for ReferrerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds that may keep `template`, hence the lists to read. Bootstrap templates are only
/// named by MachineDeployments, MachineSets and ClusterClasses; Metal3Machines matter only for a
/// Metal3MachineTemplate with nodeReuse (CAPM3 reads nothing else of it when they are deleted).
pub fn referrer_kinds(template: &Template) -> Vec<ReferrerKind> {
    use ReferrerKind::*;
    let mut kinds = vec![MachineDeployment, MachineSet];
    if template.reference.group == INFRASTRUCTURE_GROUP {
        kinds.extend([KubeadmControlPlane, RKE2ControlPlane]);
    }
    kinds.push(ClusterClass);
    if template.node_reuse {
        kinds.push(Metal3Machine);
    }
    kinds
}

/// Objects listed in the template's namespace. A kind that was not listed stays empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inventory {
    pub machine_deployments: Vec<MachineSetLike>,
    pub machine_sets: Vec<MachineSetLike>,
    pub kubeadm_control_planes: Vec<ControlPlane>,
    pub rke2_control_planes: Vec<ControlPlane>,
    pub cluster_classes: Vec<ClusterClass>,
    pub metal3_machines: Vec<MetadataOnly>,
}

/// An object that still needs the template, and the fields that name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Referrer {
    pub kind: ReferrerKind,
    pub name: String,
    pub fields: Vec<String>,
}

fn scaled_down(machine_set: &MachineSetLike) -> bool {
    machine_set.spec.replicas == Some(0) && machine_set.status.replicas == Some(0)
}

/// Rows 1 to 4 of the decision table: every object that keeps `template`, sorted by kind then
/// name, each with its fields sorted.
pub fn find_referrers(
    template: &Template,
    inventory: &Inventory,
    settings: &Settings,
) -> Vec<Referrer> {
    let mut found: BTreeMap<(ReferrerKind, String), Vec<String>> = BTreeMap::new();
    let mut record = |kind: ReferrerKind, name: &str, named: Vec<NamedTemplate<'_>>| {
        for n in named {
            if template.reference.is_named_by(n.reference) {
                found
                    .entry((kind, name.to_string()))
                    .or_default()
                    .push(n.field);
            }
        }
    };

    // Row 1. Referrers being deleted never count: the topology controller deletes a MachineSet's
    // templates before it drops the MachineSet's finalizer.
    for md in inventory
        .machine_deployments
        .iter()
        .filter(|o| !o.metadata.is_deleting())
    {
        record(
            ReferrerKind::MachineDeployment,
            &md.metadata.name,
            references::of_machine_set(md),
        );
    }
    for ms in inventory.machine_sets.iter().filter(|o| {
        !o.metadata.is_deleting() && (settings.count_scaled_down_machine_sets || !scaled_down(o))
    }) {
        record(
            ReferrerKind::MachineSet,
            &ms.metadata.name,
            references::of_machine_set(ms),
        );
    }
    // Row 2.
    for (kind, planes) in [
        (
            ReferrerKind::KubeadmControlPlane,
            &inventory.kubeadm_control_planes,
        ),
        (
            ReferrerKind::RKE2ControlPlane,
            &inventory.rke2_control_planes,
        ),
    ] {
        for cp in planes.iter().filter(|o| !o.metadata.is_deleting()) {
            record(kind, &cp.metadata.name, references::of_control_plane(cp));
        }
    }
    // Row 3.
    for class in inventory
        .cluster_classes
        .iter()
        .filter(|o| !o.metadata.is_deleting())
    {
        record(
            ReferrerKind::ClusterClass,
            &class.metadata.name,
            references::of_cluster_class(class),
        );
    }
    // Row 4. Deleting Metal3Machines count: CAPM3 reads nodeReuse while it deletes them, and
    // their deletion never waits for the template, so counting them only delays.
    if template.node_reuse && template.reference.kind == METAL3_MACHINE_TEMPLATE {
        for machine in &inventory.metal3_machines {
            if references::metal3_machine_cloned_from(machine, &template.reference.name) {
                found
                    .entry((ReferrerKind::Metal3Machine, machine.metadata.name.clone()))
                    .or_default()
                    .push(format!(
                        "metadata.annotations[{}]",
                        crate::capi::CLONED_FROM_NAME
                    ));
            }
        }
    }

    found
        .into_iter()
        .map(|((kind, name), mut fields)| {
            fields.sort();
            fields.dedup();
            Referrer { kind, name, fields }
        })
        .collect()
}

/// What is known of one owning Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    Live,
    Deleting,
    Gone,
}

/// Why a template may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Row 5: `clusterctl move` is deleting the source objects.
    Moving,
    /// Nothing keeps it.
    Unused,
    /// Row 6: every owning Cluster is being deleted or gone.
    ClusterDeleted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Release(Release),
    Keep(Vec<Referrer>),
}

/// Row 5, decided before any lookup.
pub fn before_lookups(template: &Template) -> Option<Decision> {
    template
        .moving
        .then_some(Decision::Release(Release::Moving))
}

/// With the referrers known: released when there are none; otherwise the owning Clusters decide
/// (row 6) when the template has any, and `None` says they must be looked up first.
pub fn after_referrers(template: &Template, referrers: &[Referrer]) -> Option<Decision> {
    if referrers.is_empty() {
        Some(Decision::Release(Release::Unused))
    } else if template.cluster_owners.is_empty() {
        Some(Decision::Keep(referrers.to_vec()))
    } else {
        None
    }
}

/// Row 6: released when every owning Cluster is being deleted or no longer exists.
pub fn after_clusters(referrers: Vec<Referrer>, clusters: &[ClusterState]) -> Decision {
    if !clusters.is_empty() && clusters.iter().all(|c| *c != ClusterState::Live) {
        Decision::Release(Release::ClusterDeleted)
    } else {
        Decision::Keep(referrers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fixture;
    use rstest::rstest;
    use serde_json::json;
    use ReferrerKind::*;

    const NS: &str = "edge-sites";

    fn template(kind: &str, name: &str, node_reuse: bool) -> Template {
        let group = if kind.ends_with("ConfigTemplate") {
            BOOTSTRAP_GROUP
        } else {
            INFRASTRUCTURE_GROUP
        };
        Template {
            reference: TemplateRef {
                group: group.into(),
                kind: kind.into(),
                name: name.into(),
            },
            namespace: NS.into(),
            node_reuse,
            moving: false,
            cluster_owners: vec![],
        }
    }

    fn referrer(kind: ReferrerKind, name: &str, fields: &[&str]) -> Referrer {
        Referrer {
            kind,
            name: name.into(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
        }
    }

    fn deleting<T: serde::de::DeserializeOwned>(file: &str) -> T {
        let mut value: Value = fixture(file);
        value["metadata"]["deletionTimestamp"] = json!("2026-11-29T10:00:00Z");
        serde_json::from_value(value).unwrap()
    }

    fn scaled<T: serde::de::DeserializeOwned>(file: &str, spec: i64, status: Option<i64>) -> T {
        let mut value: Value = fixture(file);
        value["spec"]["replicas"] = json!(spec);
        if let Some(status) = status {
            value["status"] = json!({"replicas": status});
        }
        serde_json::from_value(value).unwrap()
    }

    const INFRA: &str = "spec.template.spec.infrastructureRef";
    const BOOT: &str = "spec.template.spec.bootstrap.configRef";

    fn keeps(template: &Template, inventory: Inventory, settings: &Settings) -> Vec<Referrer> {
        find_referrers(template, &inventory, settings)
    }

    #[rstest]
    // Row 1: MachineDeployment and MachineSet, both shapes, both reference fields.
    #[case::row1_md_infra_v1beta1("v1beta1", "Metal3MachineTemplate", "edge-a-workers-7f3c9d2e", vec![referrer(MachineDeployment, "edge-a-md-storage", &[INFRA])])]
    #[case::row1_md_infra_v1beta2("v1beta2", "Metal3MachineTemplate", "edge-a-workers-7f3c9d2e", vec![referrer(MachineDeployment, "edge-a-md-storage", &[INFRA])])]
    #[case::row1_md_bootstrap_v1beta1("v1beta1", "KubeadmConfigTemplate", "edge-a-workers-kct-9a4f01", vec![referrer(MachineDeployment, "edge-a-md-storage", &[BOOT])])]
    #[case::row1_md_bootstrap_v1beta2("v1beta2", "KubeadmConfigTemplate", "edge-a-workers-kct-9a4f01", vec![referrer(MachineDeployment, "edge-a-md-storage", &[BOOT])])]
    #[case::row1_ms_infra_v1beta1("v1beta1", "Metal3MachineTemplate", "edge-a-workers-1b8e4a60", vec![referrer(MachineSet, "edge-a-md-storage-5f7d9c8b6", &[INFRA])])]
    #[case::row1_ms_infra_v1beta2("v1beta2", "Metal3MachineTemplate", "edge-a-workers-1b8e4a60", vec![referrer(MachineSet, "edge-a-md-storage-5f7d9c8b6", &[INFRA])])]
    #[case::row1_ms_bootstrap_v1beta1("v1beta1", "KubeadmConfigTemplate", "edge-a-workers-kct-2c71be", vec![referrer(MachineSet, "edge-a-md-storage-5f7d9c8b6", &[BOOT])])]
    #[case::row1_ms_bootstrap_v1beta2("v1beta2", "KubeadmConfigTemplate", "edge-a-workers-kct-2c71be", vec![referrer(MachineSet, "edge-a-md-storage-5f7d9c8b6", &[BOOT])])]
    #[case::unreferenced_name("v1beta2", "Metal3MachineTemplate", "edge-a-workers-00000000", vec![])]
    #[case::same_name_other_kind("v1beta2", "RKE2ConfigTemplate", "edge-a-workers-kct-9a4f01", vec![])]
    fn row1_machine_deployments_and_sets(
        #[case] version: &str,
        #[case] kind: &str,
        #[case] name: &str,
        #[case] expected: Vec<Referrer>,
    ) {
        let inventory = Inventory {
            machine_deployments: vec![fixture(&format!("{version}/04-machinedeployment.json"))],
            machine_sets: vec![fixture(&format!(
                "{version}/05-machineset-old-revision.json"
            ))],
            ..Default::default()
        };
        assert_eq!(
            keeps(
                &template(kind, name, false),
                inventory,
                &Settings::default()
            ),
            expected
        );
    }

    #[rstest]
    #[case::md_being_deleted_v1beta1("v1beta1")]
    #[case::md_being_deleted_v1beta2("v1beta2")]
    fn row1_deleting_referrers_do_not_count(#[case] version: &str) {
        let inventory = Inventory {
            machine_deployments: vec![deleting(&format!("{version}/04-machinedeployment.json"))],
            machine_sets: vec![deleting(&format!(
                "{version}/05-machineset-old-revision.json"
            ))],
            ..Default::default()
        };
        for name in ["edge-a-workers-7f3c9d2e", "edge-a-workers-1b8e4a60"] {
            assert_eq!(
                keeps(
                    &template("Metal3MachineTemplate", name, false),
                    inventory.clone(),
                    &Settings::default()
                ),
                vec![]
            );
        }
    }

    #[rstest]
    #[case::scaled_down_ignored(0, Some(0), false, false)]
    #[case::scaled_down_counted_by_setting(0, Some(0), true, true)]
    #[case::scaling_down_with_machines_left(0, Some(1), false, true)]
    #[case::zero_spec_without_status_counts(0, None, false, true)]
    #[case::running(2, Some(2), false, true)]
    fn row1_scaled_down_machine_sets(
        #[case] spec: i64,
        #[case] status: Option<i64>,
        #[case] count_scaled_down: bool,
        #[case] kept: bool,
    ) {
        let inventory = Inventory {
            machine_sets: vec![scaled(
                "v1beta2/05-machineset-old-revision.json",
                spec,
                status,
            )],
            ..Default::default()
        };
        let settings = Settings {
            count_scaled_down_machine_sets: count_scaled_down,
            ..Default::default()
        };
        let found = keeps(
            &template("Metal3MachineTemplate", "edge-a-workers-1b8e4a60", false),
            inventory,
            &settings,
        );
        assert_eq!(!found.is_empty(), kept, "{found:?}");
    }

    #[test]
    fn row1_scaled_down_machine_deployment_still_counts() {
        let inventory = Inventory {
            machine_deployments: vec![scaled("v1beta2/04-machinedeployment.json", 0, Some(0))],
            ..Default::default()
        };
        assert_eq!(
            keeps(
                &template("Metal3MachineTemplate", "edge-a-workers-7f3c9d2e", false),
                inventory,
                &Settings::default()
            ),
            vec![referrer(MachineDeployment, "edge-a-md-storage", &[INFRA])]
        );
    }

    #[rstest]
    #[case::kcp_v1beta1(
        "v1beta1/07-kubeadmcontrolplane.json",
        KubeadmControlPlane,
        "edge-a-cp-5d21c0aa",
        "edge-a-cp",
        "spec.machineTemplate.infrastructureRef"
    )]
    #[case::kcp_v1beta2(
        "v1beta2/08-kubeadmcontrolplane.json",
        KubeadmControlPlane,
        "edge-a-cp-5d21c0aa",
        "edge-a-cp",
        "spec.machineTemplate.spec.infrastructureRef"
    )]
    #[case::rke2_v1beta1(
        "v1beta1/08-rke2controlplane.json",
        RKE2ControlPlane,
        "edge-b-cp-0c7e11f2",
        "edge-b-cp",
        "spec.machineTemplate.infrastructureRef"
    )]
    #[case::rke2_v1beta1_deprecated_field(
        "v1beta1/09-rke2controlplane-legacy-infraref.json",
        RKE2ControlPlane,
        "edge-c-cp-9b02d4e1",
        "edge-c-cp",
        "spec.infrastructureRef"
    )]
    #[case::rke2_v1beta2(
        "v1beta2/10-rke2controlplane.json",
        RKE2ControlPlane,
        "edge-b-cp-0c7e11f2",
        "edge-b-cp",
        "spec.machineTemplate.spec.infrastructureRef"
    )]
    fn row2_control_planes(
        #[case] file: &str,
        #[case] kind: ReferrerKind,
        #[case] template_name: &str,
        #[case] name: &str,
        #[case] field: &str,
    ) {
        let plane: ControlPlane = fixture(file);
        let inventory = |plane: ControlPlane| match kind {
            KubeadmControlPlane => Inventory {
                kubeadm_control_planes: vec![plane],
                ..Default::default()
            },
            _ => Inventory {
                rke2_control_planes: vec![plane],
                ..Default::default()
            },
        };
        let t = template("Metal3MachineTemplate", template_name, false);
        assert_eq!(
            keeps(&t, inventory(plane), &Settings::default()),
            vec![referrer(kind, name, &[field])]
        );
        let gone: ControlPlane = deleting(file);
        assert_eq!(keeps(&t, inventory(gone), &Settings::default()), vec![]);
    }

    #[test]
    fn row2_rke2_naming_the_template_twice_is_listed_once() {
        let mut value: Value = fixture("v1beta1/08-rke2controlplane.json");
        value["spec"]["infrastructureRef"] =
            value["spec"]["machineTemplate"]["infrastructureRef"].clone();
        let inventory = Inventory {
            rke2_control_planes: vec![serde_json::from_value(value).unwrap()],
            ..Default::default()
        };
        assert_eq!(
            keeps(
                &template("Metal3MachineTemplate", "edge-b-cp-0c7e11f2", false),
                inventory,
                &Settings::default()
            ),
            vec![referrer(
                RKE2ControlPlane,
                "edge-b-cp",
                &[
                    "spec.infrastructureRef",
                    "spec.machineTemplate.infrastructureRef"
                ]
            )]
        );
    }

    #[rstest]
    #[case::cp_machines_v1beta1(
        "v1beta1",
        "Metal3MachineTemplate",
        "metal3-kubeadm-cp-machines",
        "spec.controlPlane.machineInfrastructure.ref"
    )]
    #[case::cp_machines_v1beta2(
        "v1beta2",
        "Metal3MachineTemplate",
        "metal3-kubeadm-cp-machines",
        "spec.controlPlane.machineInfrastructure.templateRef"
    )]
    #[case::worker_infra_v1beta1(
        "v1beta1",
        "Metal3MachineTemplate",
        "metal3-kubeadm-storage-machines",
        "spec.workers.machineDeployments[class=storage].template.infrastructure.ref"
    )]
    #[case::worker_infra_v1beta2(
        "v1beta2",
        "Metal3MachineTemplate",
        "metal3-kubeadm-storage-machines",
        "spec.workers.machineDeployments[class=storage].infrastructure.templateRef"
    )]
    #[case::worker_bootstrap_v1beta1(
        "v1beta1",
        "KubeadmConfigTemplate",
        "metal3-kubeadm-storage-bootstrap",
        "spec.workers.machineDeployments[class=storage].template.bootstrap.ref"
    )]
    #[case::worker_bootstrap_v1beta2(
        "v1beta2",
        "KubeadmConfigTemplate",
        "metal3-kubeadm-storage-bootstrap",
        "spec.workers.machineDeployments[class=storage].bootstrap.templateRef"
    )]
    fn row3_cluster_classes(
        #[case] version: &str,
        #[case] kind: &str,
        #[case] name: &str,
        #[case] field: &str,
    ) {
        let file = if version == "v1beta1" {
            "v1beta1/11-clusterclass.json"
        } else {
            "v1beta2/13-clusterclass.json"
        };
        let t = template(kind, name, false);
        let live = Inventory {
            cluster_classes: vec![fixture(file)],
            ..Default::default()
        };
        assert_eq!(
            keeps(&t, live, &Settings::default()),
            vec![referrer(ClusterClass, "metal3-kubeadm", &[field])]
        );
        let gone = Inventory {
            cluster_classes: vec![deleting(file)],
            ..Default::default()
        };
        assert_eq!(keeps(&t, gone, &Settings::default()), vec![]);
    }

    fn metal3_machines(version: &str) -> Vec<MetadataOnly> {
        vec![
            fixture(&format!("{version}/06-metal3machine-worker.json")),
            deleting(&format!("{version}/06-metal3machine-worker.json")),
        ]
    }

    #[rstest]
    #[case::node_reuse_v1beta1("v1beta1", true, 1)]
    #[case::node_reuse_v1beta2("v1beta2", true, 1)]
    #[case::no_node_reuse("v1beta2", false, 0)]
    fn row4_metal3_machines(#[case] version: &str, #[case] node_reuse: bool, #[case] kept: usize) {
        let t = template(
            "Metal3MachineTemplate",
            "edge-a-workers-1b8e4a60",
            node_reuse,
        );
        // The same machine twice, once being deleted: deleting machines count too, and a name
        // appears once.
        let inventory = Inventory {
            metal3_machines: metal3_machines(version),
            ..Default::default()
        };
        let found = keeps(&t, inventory, &Settings::default());
        assert_eq!(found.len(), kept, "{found:?}");
        if kept == 1 {
            assert_eq!(
                found[0],
                referrer(
                    Metal3Machine,
                    "edge-a-md-storage-5f7d9c8b6-x7k2p",
                    &["metadata.annotations[cluster.x-k8s.io/cloned-from-name]"]
                )
            );
        }
    }

    #[test]
    fn row4_only_for_metal3_machine_templates() {
        // A bootstrap template with the machine's cloned-from name is not kept by it.
        let mut t = template("KubeadmConfigTemplate", "edge-a-workers-1b8e4a60", false);
        t.node_reuse = true;
        let inventory = Inventory {
            metal3_machines: metal3_machines("v1beta2"),
            ..Default::default()
        };
        assert_eq!(keeps(&t, inventory, &Settings::default()), vec![]);
    }

    #[test]
    fn templates_cloned_from_a_class_template_are_not_machines() {
        // A topology-owned template carries cloned-from-* too; only Metal3Machines are listed as
        // machines, so it never keeps the class template.
        let t = template(
            "Metal3MachineTemplate",
            "metal3-kubeadm-storage-machines",
            true,
        );
        let copy: MetadataOnly =
            fixture("admission/topology-cloned-metal3machinetemplate.v1beta2.json");
        assert!(references::metal3_machine_cloned_from(
            &copy,
            &t.reference.name
        ));
        // It is never in the Metal3Machine list, so no lookup returns it: an empty inventory.
        assert_eq!(
            keeps(&t, Inventory::default(), &Settings::default()),
            vec![]
        );
    }

    #[rstest]
    #[case::no_spec(json!({"metadata": {"name": "ms"}}))]
    #[case::reference_without_name(json!({"metadata": {"name": "ms"}, "spec": {"template": {"spec": {"infrastructureRef": {"kind": "Metal3MachineTemplate"}}}}}))]
    #[case::reference_without_kind(json!({"metadata": {"name": "ms"}, "spec": {"template": {"spec": {"infrastructureRef": {"name": "t"}}}}}))]
    #[case::null_reference(json!({"metadata": {"name": "ms"}, "spec": {"template": {"spec": {"infrastructureRef": null}}}}))]
    #[case::reference_of_other_group(json!({"metadata": {"name": "ms"}, "spec": {"template": {"spec": {"infrastructureRef": {"apiGroup": "example.com", "kind": "Metal3MachineTemplate", "name": "t"}}}}}))]
    fn incomplete_referrers_name_nothing(#[case] object: Value) {
        let referrer: MachineSetLike = serde_json::from_value(object).unwrap();
        let inventory = Inventory {
            machine_deployments: vec![referrer.clone()],
            machine_sets: vec![referrer],
            ..Default::default()
        };
        assert_eq!(
            keeps(
                &template("Metal3MachineTemplate", "t", false),
                inventory,
                &Settings::default()
            ),
            vec![]
        );
    }

    #[test]
    fn referrers_are_sorted_by_kind_then_name() {
        let mut second: Value = fixture("v1beta2/04-machinedeployment.json");
        second["metadata"]["name"] = json!("a-first");
        let inventory = Inventory {
            machine_deployments: vec![
                fixture("v1beta2/04-machinedeployment.json"),
                serde_json::from_value(second).unwrap(),
            ],
            cluster_classes: vec![serde_json::from_value(json!({"metadata": {"name": "c"}, "spec": {"controlPlane": {"machineInfrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3MachineTemplate", "name": "edge-a-workers-7f3c9d2e"}}}}})).unwrap()],
            ..Default::default()
        };
        let names: Vec<(ReferrerKind, String)> = keeps(
            &template("Metal3MachineTemplate", "edge-a-workers-7f3c9d2e", false),
            inventory,
            &Settings::default(),
        )
        .into_iter()
        .map(|r| (r.kind, r.name))
        .collect();
        assert_eq!(
            names,
            vec![
                (MachineDeployment, "a-first".to_string()),
                (MachineDeployment, "edge-a-md-storage".to_string()),
                (ClusterClass, "c".to_string()),
            ]
        );
    }

    #[rstest]
    #[case::metal3_with_reuse("Metal3MachineTemplate", true, vec![MachineDeployment, MachineSet, KubeadmControlPlane, RKE2ControlPlane, ClusterClass, Metal3Machine])]
    #[case::metal3_without_reuse("Metal3MachineTemplate", false, vec![MachineDeployment, MachineSet, KubeadmControlPlane, RKE2ControlPlane, ClusterClass])]
    #[case::other_provider("AWSMachineTemplate", false, vec![MachineDeployment, MachineSet, KubeadmControlPlane, RKE2ControlPlane, ClusterClass])]
    #[case::bootstrap("KubeadmConfigTemplate", false, vec![MachineDeployment, MachineSet, ClusterClass])]
    fn lookups_follow_the_template(
        #[case] kind: &str,
        #[case] node_reuse: bool,
        #[case] expected: Vec<ReferrerKind>,
    ) {
        assert_eq!(referrer_kinds(&template(kind, "t", node_reuse)), expected);
    }

    #[rstest]
    #[case::metal3("infrastructure.cluster.x-k8s.io", "Metal3MachineTemplate", true)]
    #[case::any_infra_provider("infrastructure.cluster.x-k8s.io", "VSphereMachineTemplate", true)]
    #[case::kubeadm("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate", true)]
    #[case::rke2("bootstrap.cluster.x-k8s.io", "RKE2ConfigTemplate", true)]
    #[case::machine("infrastructure.cluster.x-k8s.io", "Metal3Machine", false)]
    #[case::cluster_template("infrastructure.cluster.x-k8s.io", "Metal3ClusterTemplate", false)]
    #[case::kubeadm_config("bootstrap.cluster.x-k8s.io", "KubeadmConfig", false)]
    #[case::wrong_group("example.com", "Metal3MachineTemplate", false)]
    #[case::control_plane_template(
        "controlplane.cluster.x-k8s.io",
        "KubeadmControlPlaneTemplate",
        false
    )]
    fn protected_kinds(#[case] group: &str, #[case] kind: &str, #[case] protected: bool) {
        assert_eq!(is_protected(group, kind), protected);
    }

    #[rstest]
    #[case::helm_owned("v1beta2/01-metal3machinetemplate-workers.json", true, false, vec!["edge-a"])]
    #[case::no_owner_v1beta1("v1beta1/01-metal3machinetemplate-workers.json", true, false, vec![])]
    #[case::moved("admission/metal3machinetemplate-delete-for-move.oldObject.v1beta2.json", true, true, vec!["edge-a"])]
    fn template_from_old_object(
        #[case] file: &str,
        #[case] node_reuse: bool,
        #[case] moving: bool,
        #[case] owners: Vec<&str>,
    ) {
        let t = Template::from_old_object(
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "",
            NS,
            &fixture(file),
        )
        .unwrap();
        assert_eq!(t.node_reuse, node_reuse);
        assert_eq!(t.moving, moving);
        assert_eq!(t.cluster_owners, owners);
        assert_eq!(t.reference.name, "edge-a-workers-7f3c9d2e");
    }

    #[test]
    fn owners_that_are_not_capi_clusters_are_ignored() {
        let object = json!({"metadata": {"name": "t", "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Cluster", "name": "x"},
            {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment", "name": "y"},
            {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "name": "z"}
        ]}});
        let t = Template::from_old_object(
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "t",
            NS,
            &object,
        )
        .unwrap();
        assert_eq!(t.cluster_owners, vec!["z"]);
    }

    #[test]
    fn node_reuse_only_means_something_on_metal3_templates() {
        let object = json!({"metadata": {"name": "t"}, "spec": {"nodeReuse": true}});
        let t =
            Template::from_old_object(INFRASTRUCTURE_GROUP, "AWSMachineTemplate", "t", NS, &object)
                .unwrap();
        assert!(!t.node_reuse);
    }

    #[rstest]
    #[case::missing(Value::Null, "the request carries no oldObject")]
    #[case::not_an_object(json!("x"), "the request carries no oldObject")]
    #[case::bad_metadata(json!({"metadata": {"annotations": ["a"]}}), "its oldObject cannot be read (invalid type: sequence, expected a map)")]
    #[case::no_name(json!({"metadata": {}}), "neither the request nor its oldObject names the template")]
    fn malformed_old_objects(#[case] object: Value, #[case] problem: &str) {
        assert_eq!(
            Template::from_old_object(
                INFRASTRUCTURE_GROUP,
                "Metal3MachineTemplate",
                "",
                NS,
                &object
            ),
            Err(problem.to_string())
        );
    }

    #[test]
    fn name_falls_back_to_the_request() {
        let t = Template::from_old_object(
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "req",
            NS,
            &json!({}),
        )
        .unwrap();
        assert_eq!(t.reference.name, "req");
    }

    #[test]
    fn row5_move_is_released_before_lookups() {
        let mut t = template("Metal3MachineTemplate", "t", true);
        assert_eq!(before_lookups(&t), None);
        t.moving = true;
        assert_eq!(before_lookups(&t), Some(Decision::Release(Release::Moving)));
    }

    #[test]
    fn unused_template_is_released_without_cluster_lookup() {
        let mut t = template("Metal3MachineTemplate", "t", true);
        t.cluster_owners = vec!["edge-a".into()];
        assert_eq!(
            after_referrers(&t, &[]),
            Some(Decision::Release(Release::Unused))
        );
    }

    #[test]
    fn used_template_without_cluster_owner_is_kept() {
        let t = template("Metal3MachineTemplate", "t", true);
        let r = vec![referrer(MachineSet, "ms", &[INFRA])];
        assert_eq!(after_referrers(&t, &r), Some(Decision::Keep(r.clone())));
    }

    #[test]
    fn used_template_with_cluster_owner_needs_the_clusters() {
        let mut t = template("Metal3MachineTemplate", "t", true);
        t.cluster_owners = vec!["edge-a".into()];
        assert_eq!(
            after_referrers(&t, &[referrer(MachineSet, "ms", &[INFRA])]),
            None
        );
    }

    #[rstest]
    #[case::owner_deleting(vec![ClusterState::Deleting], true)]
    #[case::owner_gone(vec![ClusterState::Gone], true)]
    #[case::owners_deleting_and_gone(vec![ClusterState::Deleting, ClusterState::Gone], true)]
    #[case::owner_live(vec![ClusterState::Live], false)]
    #[case::one_owner_live(vec![ClusterState::Deleting, ClusterState::Live], false)]
    #[case::no_owner_known(vec![], false)]
    fn row6_owning_clusters(#[case] clusters: Vec<ClusterState>, #[case] released: bool) {
        let r = vec![referrer(MachineSet, "ms", &[INFRA])];
        let expected = if released {
            Decision::Release(Release::ClusterDeleted)
        } else {
            Decision::Keep(r.clone())
        };
        assert_eq!(after_clusters(r, &clusters), expected);
    }
}
