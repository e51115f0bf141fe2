//! Which templates does an object name, and under which field? Every referrer kind's typed view
//! becomes the same [`Candidate`], so the decision treats every kind alike.

use crate::capi::{
    ClusterClass, ControlPlane, MachineSetLike, MetadataOnly, Object, ObjectRef, TemplateSlot,
    WorkerClass, CLONED_FROM_GROUPKIND, CLONED_FROM_NAME,
};
use crate::catalogue::Shape;

/// A field of an object that names a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate {
    /// Path of the field, as a user would look it up (`kubectl explain` style).
    pub field: String,
    pub reference: ObjectRef,
}

/// A listed object that may keep a template: what the decision needs of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Candidate {
    pub name: String,
    pub deleting: bool,
    /// A MachineSet scaled to zero with no machines left.
    pub scaled_down: bool,
    pub named: Vec<NamedTemplate>,
}

fn named(field: impl Into<String>, reference: &Option<ObjectRef>) -> Option<NamedTemplate> {
    reference.as_ref().map(|reference| NamedTemplate {
        field: field.into(),
        reference: reference.clone(),
    })
}

fn candidate(
    meta: &crate::capi::Metadata,
    scaled_down: bool,
    named: Vec<NamedTemplate>,
) -> Candidate {
    Candidate {
        name: meta.name.clone(),
        deleting: meta.is_deleting(),
        scaled_down,
        named,
    }
}

/// MachineDeployment / MachineSet: the infrastructure and bootstrap template of its machines.
pub fn of_machine_set(object: &MachineSetLike) -> Candidate {
    let spec = &object.spec.template.spec;
    let scaled_down = object.spec.replicas == Some(0) && object.status.replicas == Some(0);
    let named = [
        named(
            "spec.template.spec.infrastructureRef",
            &spec.infrastructure_ref,
        ),
        named(
            "spec.template.spec.bootstrap.configRef",
            &spec.bootstrap.config_ref,
        ),
    ];
    candidate(
        &object.metadata,
        scaled_down,
        named.into_iter().flatten().collect(),
    )
}

/// KubeadmControlPlane / RKE2ControlPlane: the machine template, in every place it has lived.
pub fn of_control_plane(object: &ControlPlane) -> Candidate {
    let spec = &object.spec;
    let named = [
        named(
            "spec.machineTemplate.infrastructureRef",
            &spec.machine_template.infrastructure_ref,
        ),
        named(
            "spec.machineTemplate.spec.infrastructureRef",
            &spec.machine_template.spec.infrastructure_ref,
        ),
        named("spec.infrastructureRef", &spec.infrastructure_ref),
    ];
    candidate(
        &object.metadata,
        false,
        named.into_iter().flatten().collect(),
    )
}

fn of_slot(prefix: &str, slot: &TemplateSlot, out: &mut Vec<NamedTemplate>) {
    out.extend(named(format!("{prefix}.ref"), &slot.reference));
    out.extend(named(format!("{prefix}.templateRef"), &slot.template_ref));
}

fn of_worker_classes(list: &str, classes: &[WorkerClass], out: &mut Vec<NamedTemplate>) {
    for worker in classes {
        let at = format!("spec.workers.{list}[class={}]", worker.class);
        of_slot(
            &format!("{at}.template.infrastructure"),
            &worker.template.infrastructure,
            out,
        );
        of_slot(
            &format!("{at}.template.bootstrap"),
            &worker.template.bootstrap,
            out,
        );
        of_slot(&format!("{at}.infrastructure"), &worker.infrastructure, out);
        of_slot(&format!("{at}.bootstrap"), &worker.bootstrap, out);
    }
}

/// ClusterClass: its infrastructure and control-plane templates, the control plane's machine
/// infrastructure and every worker class template.
pub fn of_cluster_class(object: &ClusterClass) -> Candidate {
    let spec = &object.spec;
    let mut out = Vec::new();
    of_slot("spec.infrastructure", &spec.infrastructure, &mut out);
    out.extend(named(
        "spec.controlPlane.ref",
        &spec.control_plane.reference,
    ));
    out.extend(named(
        "spec.controlPlane.templateRef",
        &spec.control_plane.template_ref,
    ));
    of_slot(
        "spec.controlPlane.machineInfrastructure",
        &spec.control_plane.machine_infrastructure,
        &mut out,
    );
    of_worker_classes(
        "machineDeployments",
        &spec.workers.machine_deployments,
        &mut out,
    );
    of_worker_classes("machinePools", &spec.workers.machine_pools, &mut out);
    candidate(&object.metadata, false, out)
}

/// The template an object was cloned from, as its cloned-from annotations name it: the name and
/// `Kind.group` (split at the first dot, as kinds have none).
pub fn cloned_from(meta: &crate::capi::Metadata) -> Option<ObjectRef> {
    let name = meta.annotation(CLONED_FROM_NAME)?;
    let (kind, group) = meta.annotation(CLONED_FROM_GROUPKIND)?.split_once('.')?;
    Some(ObjectRef {
        api_version: None,
        api_group: Some(group.to_string()),
        kind: kind.to_string(),
        name: name.to_string(),
    })
}

/// What a listed object of a referrer kind's shape names.
pub fn candidate_of(shape: Shape, object: &Object) -> Candidate {
    match shape {
        Shape::MachineSetLike => of_machine_set(object),
        Shape::ControlPlane => of_control_plane(object),
        Shape::ClusterClass => of_cluster_class(object),
        Shape::ClonedFrom => of_cloned(object),
    }
}

/// Metal3Machine: the template named by its cloned-from annotations.
pub fn of_cloned(object: &MetadataOnly) -> Candidate {
    let named = cloned_from(&object.metadata).map(|reference| NamedTemplate {
        field: format!("metadata.annotations[{CLONED_FROM_NAME}]"),
        reference,
    });
    candidate(&object.metadata, false, named.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::TemplateRef;
    use crate::catalogue::INFRASTRUCTURE_GROUP;
    use crate::testing::fixture;
    use rstest::rstest;
    use serde_json::json;

    fn fields(candidate: Candidate) -> Vec<(String, String)> {
        candidate
            .named
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
                    &format!("spec.infrastructure.{slot}"),
                    "metal3-kubeadm-cluster"
                ),
                pair(&format!("spec.controlPlane.{slot}"), "metal3-kubeadm-cp"),
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
    #[case::metal3_template(
        "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io",
        Some(("infrastructure.cluster.x-k8s.io", "Metal3MachineTemplate"))
    )]
    #[case::bootstrap_template(
        "KubeadmConfigTemplate.bootstrap.cluster.x-k8s.io",
        Some(("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate"))
    )]
    #[case::no_dot("Metal3MachineTemplate", None)]
    fn metal3_machine_clone_source(
        #[case] groupkind: &str,
        #[case] expected: Option<(&str, &str)>,
    ) {
        let mut machine: MetadataOnly = fixture("v1beta2/06-metal3machine-worker.json");
        machine
            .metadata
            .annotations
            .insert(CLONED_FROM_GROUPKIND.into(), groupkind.into());
        let candidate = of_cloned(&machine);
        let got: Option<(String, String, String)> = candidate.named.first().map(|n| {
            (
                n.reference.group().unwrap_or_default().to_string(),
                n.reference.kind.clone(),
                n.reference.name.clone(),
            )
        });
        assert_eq!(
            got,
            expected.map(|(g, k)| (
                g.to_string(),
                k.to_string(),
                "edge-a-workers-1b8e4a60".to_string()
            ))
        );
    }

    #[test]
    fn metal3_machine_without_annotations_names_nothing() {
        assert_eq!(of_cloned(&MetadataOnly::default()).named, vec![]);
    }

    #[rstest]
    #[case::scaled_down(json!({"spec": {"replicas": 0}, "status": {"replicas": 0}}), true)]
    #[case::machines_left(json!({"spec": {"replicas": 0}, "status": {"replicas": 1}}), false)]
    #[case::status_unknown(json!({"spec": {"replicas": 0}}), false)]
    #[case::scaled_up(json!({"spec": {"replicas": 2}, "status": {"replicas": 0}}), false)]
    fn scaled_down_machine_sets(#[case] value: serde_json::Value, #[case] expected: bool) {
        let ms: MachineSetLike = serde_json::from_value(value).unwrap();
        assert_eq!(of_machine_set(&ms).scaled_down, expected);
    }
}
