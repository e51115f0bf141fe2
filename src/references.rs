//! Which templates does an object name, and under which field?

use crate::capi::{
    ClusterClass, ControlPlane, MachineSetLike, MetadataOnly, ObjectRef, TemplateSlot, WorkerClass,
    CLONED_FROM_GROUPKIND, CLONED_FROM_NAME, METAL3_TEMPLATE_GROUPKIND,
};

/// The template a request is about: kind, group and name (its namespace is the request's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}

impl TemplateRef {
    /// Kind and name must match; the group too when the reference carries one.
    pub fn is_named_by(&self, reference: &ObjectRef) -> bool {
        reference.kind == self.kind
            && reference.name == self.name
            && reference.group().is_none_or(|group| group == self.group)
    }

    pub fn groupkind(&self) -> String {
        format!("{}.{}", self.kind, self.group)
    }
}

/// A field of an object that names a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate<'a> {
    /// Path of the field, as a user would look it up (`kubectl explain` style).
    pub field: String,
    pub reference: &'a ObjectRef,
}

fn named<'a>(
    field: impl Into<String>,
    reference: &'a Option<ObjectRef>,
) -> Option<NamedTemplate<'a>> {
    reference.as_ref().map(|reference| NamedTemplate {
        field: field.into(),
        reference,
    })
}

/// MachineDeployment / MachineSet: the infrastructure and bootstrap template of its machines.
pub fn of_machine_set(object: &MachineSetLike) -> Vec<NamedTemplate<'_>> {
    let spec = &object.spec.template.spec;
    [
        named(
            "spec.template.spec.infrastructureRef",
            &spec.infrastructure_ref,
        ),
        named(
            "spec.template.spec.bootstrap.configRef",
            &spec.bootstrap.config_ref,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// KubeadmControlPlane / RKE2ControlPlane: the machine template, in every place it has lived.
pub fn of_control_plane(object: &ControlPlane) -> Vec<NamedTemplate<'_>> {
    let spec = &object.spec;
    [
        named(
            "spec.machineTemplate.infrastructureRef",
            &spec.machine_template.infrastructure_ref,
        ),
        named(
            "spec.machineTemplate.spec.infrastructureRef",
            &spec.machine_template.spec.infrastructure_ref,
        ),
        named("spec.infrastructureRef", &spec.infrastructure_ref),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn of_slot<'a>(prefix: &str, slot: &'a TemplateSlot) -> impl Iterator<Item = NamedTemplate<'a>> {
    [
        named(format!("{prefix}.ref"), &slot.reference),
        named(format!("{prefix}.templateRef"), &slot.template_ref),
    ]
    .into_iter()
    .flatten()
}

fn of_worker_classes<'a>(
    list: &'static str,
    classes: &'a [WorkerClass],
) -> impl Iterator<Item = NamedTemplate<'a>> {
    classes.iter().flat_map(move |worker| {
        let at = format!("spec.workers.{list}[class={}]", worker.class);
        of_slot(
            &format!("{at}.template.infrastructure"),
            &worker.template.infrastructure,
        )
        .chain(of_slot(
            &format!("{at}.template.bootstrap"),
            &worker.template.bootstrap,
        ))
        .chain(of_slot(
            &format!("{at}.infrastructure"),
            &worker.infrastructure,
        ))
        .chain(of_slot(&format!("{at}.bootstrap"), &worker.bootstrap))
        .collect::<Vec<_>>()
    })
}

/// ClusterClass: the control plane's machine infrastructure and every worker class template.
pub fn of_cluster_class(object: &ClusterClass) -> Vec<NamedTemplate<'_>> {
    let spec = &object.spec;
    of_slot(
        "spec.controlPlane.machineInfrastructure",
        &spec.control_plane.machine_infrastructure,
    )
    .chain(of_worker_classes(
        "machineDeployments",
        &spec.workers.machine_deployments,
    ))
    .chain(of_worker_classes(
        "machinePools",
        &spec.workers.machine_pools,
    ))
    .collect()
}

/// Whether a Metal3Machine was cloned from the Metal3MachineTemplate `name`.
pub fn metal3_machine_cloned_from(machine: &MetadataOnly, name: &str) -> bool {
    let meta = &machine.metadata;
    meta.annotation(CLONED_FROM_NAME) == Some(name)
        && meta.annotation(CLONED_FROM_GROUPKIND) == Some(METAL3_TEMPLATE_GROUPKIND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::INFRASTRUCTURE_GROUP;
    use crate::testing::fixture;
    use rstest::rstest;

    fn fields(named: Vec<NamedTemplate<'_>>) -> Vec<(String, String)> {
        named
            .into_iter()
            .map(|n| (n.field, n.reference.name.clone()))
            .collect()
    }

    fn pair(field: &str, name: &str) -> (String, String) {
        (field.to_string(), name.to_string())
    }

    #[rstest]
    #[case::v1beta1("v1beta1/04-machinedeployment.json")]
    #[case::v1beta2("v1beta2/04-machinedeployment.json")]
    fn machine_deployment_names_both_templates(#[case] file: &str) {
        let md: MachineSetLike = fixture(file);
        assert_eq!(
            fields(of_machine_set(&md)),
            vec![
                pair(
                    "spec.template.spec.infrastructureRef",
                    "edge-a-workers-7f3c9d2e"
                ),
                pair(
                    "spec.template.spec.bootstrap.configRef",
                    "edge-a-workers-kct-9a4f01"
                ),
            ]
        );
    }

    #[rstest]
    #[case::kcp_v1beta1(
        "v1beta1/07-kubeadmcontrolplane.json",
        "spec.machineTemplate.infrastructureRef",
        "edge-a-cp-5d21c0aa"
    )]
    #[case::kcp_v1beta2(
        "v1beta2/08-kubeadmcontrolplane.json",
        "spec.machineTemplate.spec.infrastructureRef",
        "edge-a-cp-5d21c0aa"
    )]
    #[case::rke2_v1beta1(
        "v1beta1/08-rke2controlplane.json",
        "spec.machineTemplate.infrastructureRef",
        "edge-b-cp-0c7e11f2"
    )]
    #[case::rke2_v1beta1_legacy(
        "v1beta1/09-rke2controlplane-legacy-infraref.json",
        "spec.infrastructureRef",
        "edge-c-cp-9b02d4e1"
    )]
    #[case::rke2_v1beta2(
        "v1beta2/10-rke2controlplane.json",
        "spec.machineTemplate.spec.infrastructureRef",
        "edge-b-cp-0c7e11f2"
    )]
    fn control_plane_names_its_machine_template(
        #[case] file: &str,
        #[case] field: &str,
        #[case] name: &str,
    ) {
        let cp: ControlPlane = fixture(file);
        assert_eq!(fields(of_control_plane(&cp)), vec![pair(field, name)]);
    }

    #[rstest]
    #[case::v1beta1("v1beta1/11-clusterclass.json", "ref", "template.")]
    #[case::v1beta2("v1beta2/13-clusterclass.json", "templateRef", "")]
    fn cluster_class_names_machine_templates(
        #[case] file: &str,
        #[case] slot: &str,
        #[case] nesting: &str,
    ) {
        let class: ClusterClass = fixture(file);
        let worker = "spec.workers.machineDeployments[class=storage]";
        assert_eq!(
            fields(of_cluster_class(&class)),
            vec![
                pair(
                    &format!("spec.controlPlane.machineInfrastructure.{slot}"),
                    "metal3-kubeadm-cp-machines"
                ),
                pair(
                    &format!("{worker}.{nesting}infrastructure.{slot}"),
                    "metal3-kubeadm-storage-machines"
                ),
                pair(
                    &format!("{worker}.{nesting}bootstrap.{slot}"),
                    "metal3-kubeadm-storage-bootstrap"
                ),
            ]
        );
    }

    #[test]
    fn cluster_class_machine_pools_count_too() {
        let class: ClusterClass = serde_json::from_value(serde_json::json!({
            "spec": {"workers": {"machinePools": [{"class": "pool", "bootstrap": {"templateRef": {
                "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate", "name": "b"}}}]}}
        }))
        .unwrap();
        assert_eq!(
            fields(of_cluster_class(&class)),
            vec![pair(
                "spec.workers.machinePools[class=pool].bootstrap.templateRef",
                "b"
            )]
        );
    }

    fn template(group: &str, kind: &str, name: &str) -> TemplateRef {
        TemplateRef {
            group: group.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    #[rstest]
    #[case::same_everything(r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"Metal3MachineTemplate","name":"t"}"#, true)]
    #[case::api_version_shape(r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"Metal3MachineTemplate","name":"t"}"#, true)]
    #[case::no_group_in_reference(r#"{"kind":"Metal3MachineTemplate","name":"t"}"#, true)]
    #[case::other_name(r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"Metal3MachineTemplate","name":"u"}"#, false)]
    #[case::other_kind_same_name(
        r#"{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachineTemplate","name":"t"}"#,
        false
    )]
    #[case::other_group_same_kind(
        r#"{"apiGroup":"infrastructure.example.com","kind":"Metal3MachineTemplate","name":"t"}"#,
        false
    )]
    #[case::other_group_in_api_version(
        r#"{"apiVersion":"example.com/v1","kind":"Metal3MachineTemplate","name":"t"}"#,
        false
    )]
    fn reference_matching(#[case] json: &str, #[case] expected: bool) {
        let reference: ObjectRef = serde_json::from_str(json).unwrap();
        assert_eq!(
            template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t").is_named_by(&reference),
            expected
        );
    }

    #[rstest]
    #[case::cloned_from_it(
        "edge-a-workers-1b8e4a60",
        "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io",
        true
    )]
    #[case::other_template(
        "edge-a-workers-7f3c9d2e",
        "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io",
        false
    )]
    #[case::other_groupkind(
        "edge-a-workers-1b8e4a60",
        "KubeadmConfigTemplate.bootstrap.cluster.x-k8s.io",
        false
    )]
    fn metal3_machine_clone_source(
        #[case] name: &str,
        #[case] groupkind: &str,
        #[case] expected: bool,
    ) {
        let mut machine: MetadataOnly = fixture("v1beta2/06-metal3machine-worker.json");
        machine
            .metadata
            .annotations
            .insert(CLONED_FROM_GROUPKIND.into(), groupkind.into());
        assert_eq!(metal3_machine_cloned_from(&machine, name), expected);
    }

    #[test]
    fn metal3_machine_without_annotations_is_no_clone() {
        let machine = MetadataOnly::default();
        assert!(!metal3_machine_cloned_from(&machine, ""));
    }
}
