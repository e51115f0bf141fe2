//! The scan of a catalogue kind served only at a version the policy does not know: the
//! catalogue's implied kinds and keeper rules still apply (docs/design.md, "the scan").
use super::tests::template;
use super::*;
use crate::catalogue::{BOOTSTRAP_GROUP, INFRASTRUCTURE_GROUP};
use crate::testing::Memory;
use rstest::rstest;
use serde_json::{Value, json};

fn kept_by(decision: Decision) -> Vec<(String, Vec<String>)> {
    match decision {
        Decision::Keep(referrers) => referrers
            .into_iter()
            .map(|r| {
                let fields = r.fields.into_iter().map(|f| f.into_owned()).collect();
                (r.kind.kind().to_string(), fields)
            })
            .collect(),
        Decision::Release(_) => vec![],
    }
}

/// KairosControlPlane served at a newer version names its bootstrap template by name only
/// (`kairosConfigTemplate: {name}`): the catalogue's implied kind keeps the template, as at the
/// version it knows. An unknown kind with the same field implies nothing.
#[rstest]
#[case::known_kind("KairosControlPlane", true)]
#[case::unknown_kind("FooControlPlane", false)]
fn a_name_only_reference_of_a_known_kind_keeps_its_template(
    #[case] kind: &str,
    #[case] is_kept: bool,
) {
    let object = json!({"kind": kind, "metadata": {"name": "cp"},
        "spec": {"kairosConfigTemplate": {"name": "k"}}});
    let mut memory = Memory::default().scanning(Ok(vec![(kind, vec![object])]));
    let t = template(BOOTSTRAP_GROUP, "KairosConfigTemplate", "k");
    let kept = kept_by(decide(&t, &Settings::default(), &mut memory).unwrap());
    let expected = vec![(
        kind.to_string(),
        vec!["spec.kairosConfigTemplate".to_string()],
    )];
    assert_eq!(kept, if is_kept { expected } else { vec![] });
}

/// A MachineSet of MachineDeployment `md`.
fn machine_set(deleting: bool, replicas: Value, machines: Value) -> Value {
    let mut meta =
        json!({"name": "ms", "labels": {crate::metadata::ReadKey::DeploymentName.key(): "md"}});
    if deleting {
        meta["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
    }
    json!({"kind": "MachineSet", "metadata": meta,
        "spec": {"replicas": replicas, "template": {"spec": {"infrastructureRef":
            {"apiGroup": INFRASTRUCTURE_GROUP, "kind": "Metal3MachineTemplate", "name": "t"}}}},
        "status": {"replicas": machines}})
}

/// A MachineSet served only at a future version keeps its rules: being deleted it keeps nothing
/// (but a nodeReuse template while it has machines); scaled to zero it still keeps its
/// templates, since its MachineDeployment's revision is not read field by field at such a
/// version and the release is not known to read the owner first; a field of another shape falls
/// back to the scan's rule (keeps).
#[rstest]
#[case::running(false, json!(1), json!(1), false, true)]
#[case::deleting(true, json!(1), json!(1), false, false)]
#[case::deleting_node_reuse_with_machines(true, json!(1), json!(1), true, true)]
#[case::deleting_node_reuse_without_machines(true, json!(0), json!(0), true, false)]
#[case::scaled_down(false, json!(0), json!(0), false, true)]
#[case::replicas_of_another_shape(true, json!("one"), json!(0), false, true)]
fn a_machine_set_at_a_future_version_keeps_its_rules(
    #[case] deleting: bool,
    #[case] replicas: Value,
    #[case] machines: Value,
    #[case] node_reuse: bool,
    #[case] is_kept: bool,
) {
    let object = machine_set(deleting, replicas, machines);
    let mut memory = Memory::default().scanning(Ok(vec![("MachineSet", vec![object])]));
    let t = Template {
        node_reuse,
        ..template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t")
    };
    let kept = kept_by(decide(&t, &Settings::default(), &mut memory).unwrap());
    assert_eq!(!kept.is_empty(), is_kept, "{kept:?}");
}

#[test]
fn a_standalone_machine_set_at_a_future_version_keeps_its_templates_scaled_down() {
    let mut object = machine_set(false, json!(0), json!(0));
    object["metadata"]["labels"] = json!({});
    let mut memory = Memory::default().scanning(Ok(vec![("MachineSet", vec![object])]));
    let t = template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t");
    let kept = kept_by(decide(&t, &Settings::default(), &mut memory).unwrap());
    assert_eq!(kept.len(), 1, "{kept:?}");
}

/// A scanned catalogue kind sorts with the catalogue kinds (MachineSet before a control plane
/// read field by field), and is named as the catalogue names it.
#[test]
fn a_scanned_catalogue_kind_sorts_in_catalogue_order() {
    let kcp = crate::references::Candidate {
        name: "kcp".into(),
        named: vec![crate::references::NamedTemplate {
            field: "spec.machineTemplate.spec.infrastructureRef".into(),
            reference: serde_json::from_value(
                json!({"apiGroup": INFRASTRUCTURE_GROUP, "kind": "Metal3MachineTemplate", "name": "t"}),
            )
            .unwrap(),
        }],
        ..Default::default()
    };
    let mut memory = Memory::default()
        .with("KubeadmControlPlane", vec![kcp])
        .scanning(Ok(vec![(
            "MachineSet",
            vec![machine_set(false, json!(1), json!(1))],
        )]));
    let t = template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t");
    let kinds: Vec<String> = kept_by(decide(&t, &Settings::default(), &mut memory).unwrap())
        .into_iter()
        .map(|(kind, _)| kind)
        .collect();
    assert_eq!(kinds, ["MachineSet", "KubeadmControlPlane"]);
}
