//! The Metal3Machine mutation: a pure function over the [`Lookups`] trait, like the deletion
//! decision. It finds the template a new machine was cloned from, reads its intent and writes it
//! onto a clone of the machine.

use serde_json::{Map, Value};

use crate::capi::{Object, OwnerReference, group_of, is_object_name, owners_of, view_of};
use crate::catalogue::{self, INFRASTRUCTURE_GROUP, ReferrerKind};
use crate::error::Error;
use crate::lookups::Lookups;
use crate::metadata::Metadata;
use crate::references::{self, Candidate};
use crate::settings::Settings;

/// The object present at creation that names a new machine's template: a MachineSet or a control
/// plane, as the catalogue knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub kind: &'static ReferrerKind,
    pub name: String,
}

/// Where to find the template a new Metal3Machine was cloned from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// The cloned-from annotations name a Metal3MachineTemplate.
    Annotation(String),
    /// No usable annotations: the owner present at creation names the template.
    Owner(Owner),
    None,
}

fn is_metal3_template(group: Option<&str>, kind: &str) -> bool {
    kind == catalogue::METAL3_MACHINE_TEMPLATE.kind
        && group.is_none_or(|g| g == INFRASTRUCTURE_GROUP)
}

/// Finds where the template is named. A name that is not a valid object name counts as absent.
pub fn template_source(meta: &Metadata, owners: &[OwnerReference]) -> TemplateSource {
    if let Some(reference) = references::cloned_from(meta)
        && is_metal3_template(reference.group(), &reference.kind)
        && is_object_name(&reference.name)
    {
        return TemplateSource::Annotation(reference.name);
    }
    // In catalogue order: a MachineSet (a worker's template) before a control plane.
    catalogue::REFERRERS
        .iter()
        .filter(|kind| kind.creates_machines)
        .find_map(|kind| {
            owners.iter().find_map(|o| {
                (o.kind == kind.kind()
                    && group_of(&o.api_version) == kind.resource.group
                    && is_object_name(&o.name))
                .then(|| Owner {
                    kind,
                    name: o.name.clone(),
                })
            })
        })
        .map_or(TemplateSource::None, TemplateSource::Owner)
}

/// The Metal3MachineTemplate an owner names, if any.
pub fn metal3_template_named_by(owner: &Candidate) -> Option<String> {
    owner
        .named
        .iter()
        .map(|n| &n.reference)
        .find(|r| is_metal3_template(r.group(), &r.kind) && is_object_name(&r.name))
        .map(|r| r.name.clone())
}

/// What a template says about the machines cloned from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    pub template: String,
    pub node_reuse: bool,
    /// Non-empty `spec.template.spec.automatedCleaningMode`.
    pub cleaning_mode: Option<String>,
}

impl Intent {
    pub fn of(name: &str, template: &Object) -> Intent {
        Intent {
            template: name.to_string(),
            node_reuse: template.at("spec.nodeReuse") == Some(&Value::Bool(true)),
            cleaning_mode: template
                .at("spec.template.spec.automatedCleaningMode")
                .and_then(Value::as_str)
                .filter(|mode| !mode.is_empty())
                .map(str::to_string),
        }
    }
}

/// The name of the Metal3MachineTemplate a new machine comes from.
fn source_template(
    meta: &Metadata,
    owners: &[OwnerReference],
    lookups: &mut impl Lookups,
) -> Result<String, Error> {
    let owner = match template_source(meta, owners) {
        TemplateSource::Annotation(name) => return Ok(name),
        TemplateSource::None => return Err(Error::NoTemplateSource),
        TemplateSource::Owner(owner) => owner,
    };
    lookups
        .referrer(owner.kind, &owner.name)?
        .and_then(|candidate| metal3_template_named_by(&candidate))
        .ok_or(Error::OwnerNamesNoTemplate {
            kind: owner.kind.kind(),
            name: owner.name,
        })
}

/// The new `machine` with its template's intent written on it; `None` when it already carries
/// it. `namespace` is where the machine and its template live.
pub fn record_intent(
    machine: &Value,
    namespace: &str,
    settings: &Settings,
    lookups: &mut impl Lookups,
) -> Result<Option<Value>, Error> {
    let unreadable = |e: serde_json::Error| Error::UnreadableMachine(e.to_string());
    let meta = view_of::<Object>(machine).map_err(unreadable)?.metadata;
    let owners = owners_of(machine).map_err(unreadable)?;
    let name = source_template(&meta, &owners, lookups)?;
    let template = lookups
        .metal3_machine_template(&name)?
        .ok_or_else(|| Error::TemplateMissing(format!("{namespace}/{name}")))?;
    apply(machine, &Intent::of(&name, &template), settings)
}

fn object_at<'a>(
    parent: &'a mut Map<String, Value>,
    key: &'static str,
) -> Result<&'a mut Map<String, Value>, Error> {
    let slot = parent
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().ok_or(Error::PartNotAnObject(key))
}

/// The machine with the template's intent written on it, or `None` when it already carries it.
/// Works on a clone of the request's JSON so every field the policy does not touch survives.
pub fn apply(
    machine: &Value,
    intent: &Intent,
    settings: &Settings,
) -> Result<Option<Value>, Error> {
    let mut mutated = machine.clone();
    let root = mutated.as_object_mut().ok_or(Error::MachineNotAnObject)?;

    let annotations = object_at(object_at(root, "metadata")?, "annotations")?;
    annotations.insert(
        settings.node_reuse_annotation.clone(),
        Value::String(intent.node_reuse.to_string()),
    );
    annotations.insert(
        settings.source_template_annotation.clone(),
        Value::String(intent.template.clone()),
    );

    if let Some(mode) = &intent.cleaning_mode {
        let spec = object_at(root, "spec")?;
        // Never override a value the machine already has.
        let unset = match spec.get("automatedCleaningMode") {
            None | Some(Value::Null) => true,
            Some(Value::String(current)) => current.is_empty(),
            Some(_) => false,
        };
        if unset {
            spec.insert("automatedCleaningMode".into(), Value::String(mode.clone()));
        }
    }

    Ok((mutated != *machine).then_some(mutated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::ReadKey;
    const CLONED_FROM_NAME: &str = ReadKey::ClonedFromName.key();
    const CLONED_FROM_GROUPKIND: &str = ReadKey::ClonedFromGroupKind.key();
    use crate::error::Failure;
    use crate::testing::{Memory, fixture, referrer_kind as kind};
    use rstest::rstest;
    use serde_json::json;

    const KEY: &str = "capi-template-guard.kubewarden.io/node-reuse";
    const FROM: &str = "capi-template-guard.kubewarden.io/source-template";

    fn intent(node_reuse: bool, mode: Option<&str>) -> Intent {
        Intent {
            template: "edge-a-workers-7f3c9d2e".into(),
            node_reuse,
            cleaning_mode: mode.map(str::to_string),
        }
    }

    fn created() -> Value {
        fixture("admission/metal3machine-as-created-by-machineset.v1beta2.json")
    }

    #[rstest]
    #[case::reuse_true_mode_from_template(
        intent(true, Some("disabled")),
        None,
        "true",
        Some("disabled")
    )]
    #[case::reuse_false_mode_from_template(
        intent(false, Some("metadata")),
        None,
        "false",
        Some("metadata")
    )]
    #[case::template_without_mode(intent(true, None), None, "true", None)]
    #[case::machine_mode_is_kept(intent(true, Some("disabled")), Some(json!("metadata")), "true", Some("metadata"))]
    #[case::empty_machine_mode_is_filled(intent(true, Some("disabled")), Some(json!("")), "true", Some("disabled"))]
    #[case::null_machine_mode_is_filled(
        intent(true, Some("disabled")),
        Some(Value::Null),
        "true",
        Some("disabled")
    )]
    fn writes_the_intent(
        #[case] intent: Intent,
        #[case] machine_mode: Option<Value>,
        #[case] reuse: &str,
        #[case] mode: Option<&str>,
    ) {
        let mut machine = created();
        if let Some(m) = machine_mode {
            machine["spec"]["automatedCleaningMode"] = m;
        }
        let mutated = apply(&machine, &intent, &Settings::default())
            .unwrap()
            .unwrap();
        assert_eq!(mutated["metadata"]["annotations"][KEY], json!(reuse));
        assert_eq!(
            mutated["metadata"]["annotations"][FROM],
            json!("edge-a-workers-7f3c9d2e")
        );
        assert_eq!(
            mutated["spec"]
                .get("automatedCleaningMode")
                .and_then(Value::as_str),
            mode
        );
    }

    #[test]
    fn everything_else_survives() {
        let mut machine = created();
        machine["spec"]["someFutureField"] = json!({"nested": [1, 2, {"x": null}]});
        machine["status"] = json!({"ready": false});
        let mutated = apply(
            &machine,
            &intent(true, Some("disabled")),
            &Settings::default(),
        )
        .unwrap()
        .unwrap();
        let mut expected = machine.clone();
        expected["metadata"]["annotations"][KEY] = json!("true");
        expected["metadata"]["annotations"][FROM] = json!("edge-a-workers-7f3c9d2e");
        expected["spec"]["automatedCleaningMode"] = json!("disabled");
        assert_eq!(mutated, expected);
    }

    #[test]
    fn already_mutated_machine_gets_no_patch() {
        let machine = apply(
            &created(),
            &intent(true, Some("disabled")),
            &Settings::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            apply(
                &machine,
                &intent(true, Some("disabled")),
                &Settings::default()
            ),
            Ok(None)
        );
    }

    #[test]
    fn stale_marker_is_corrected() {
        let mut machine = created();
        machine["metadata"]["annotations"][KEY] = json!("true");
        let mutated = apply(&machine, &intent(false, None), &Settings::default())
            .unwrap()
            .unwrap();
        assert_eq!(mutated["metadata"]["annotations"][KEY], json!("false"));
    }

    #[test]
    fn machine_without_metadata_or_spec() {
        let mutated = apply(
            &json!({"kind": "Metal3Machine"}),
            &intent(true, Some("disabled")),
            &Settings::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            mutated,
            json!({"kind": "Metal3Machine", "metadata": {"annotations": {KEY: "true", FROM: "edge-a-workers-7f3c9d2e"}}, "spec": {"automatedCleaningMode": "disabled"}})
        );
    }

    #[test]
    fn custom_annotation_keys() {
        let settings = Settings {
            node_reuse_annotation: "example.com/reuse".into(),
            source_template_annotation: "example.com/from".into(),
            ..Default::default()
        };
        let mutated = apply(&created(), &intent(true, None), &settings)
            .unwrap()
            .unwrap();
        assert_eq!(
            mutated["metadata"]["annotations"]["example.com/reuse"],
            json!("true")
        );
        assert_eq!(
            mutated["metadata"]["annotations"]["example.com/from"],
            json!("edge-a-workers-7f3c9d2e")
        );
        assert!(mutated["metadata"]["annotations"].get(KEY).is_none());
    }

    #[rstest]
    #[case::not_an_object(json!([1]), Error::MachineNotAnObject)]
    #[case::metadata_not_an_object(json!({"metadata": "x"}), Error::PartNotAnObject("metadata"))]
    #[case::annotations_not_an_object(json!({"metadata": {"annotations": [1]}}), Error::PartNotAnObject("annotations"))]
    #[case::spec_not_an_object(json!({"spec": 1}), Error::PartNotAnObject("spec"))]
    fn malformed_machines(#[case] machine: Value, #[case] problem: Error) {
        assert_eq!(
            apply(
                &machine,
                &intent(true, Some("disabled")),
                &Settings::default()
            ),
            Err(problem)
        );
    }

    #[rstest]
    #[case::v1beta1_template(
        "v1beta1/01-metal3machinetemplate-workers.json",
        true,
        Some("disabled")
    )]
    #[case::v1beta2_template(
        "v1beta2/01-metal3machinetemplate-workers.json",
        true,
        Some("disabled")
    )]
    #[case::topology_copy_without_reuse_or_mode(
        "admission/topology-cloned-metal3machinetemplate.v1beta2.json",
        false,
        None
    )]
    fn intent_of_templates(
        #[case] file: &str,
        #[case] node_reuse: bool,
        #[case] mode: Option<&str>,
    ) {
        let template: Object = fixture(file);
        let got = Intent::of("n", &template);
        assert_eq!(got.node_reuse, node_reuse);
        assert_eq!(got.cleaning_mode.as_deref(), mode);
    }

    #[test]
    fn empty_cleaning_mode_on_template_is_no_mode() {
        let template: Object =
            serde_json::from_value(json!({"spec": {"nodeReuse": false, "template": {"spec": {"automatedCleaningMode": ""}}}})).unwrap();
        assert_eq!(Intent::of("n", &template).cleaning_mode, None);
    }

    fn meta(value: Value) -> (Metadata, Vec<OwnerReference>) {
        let object = json!({ "metadata": value });
        let owners = owners_of(&object).unwrap();
        (
            serde_json::from_value::<Object>(object).unwrap().metadata,
            owners,
        )
    }

    #[rstest]
    #[case::annotations(json!({"annotations": {CLONED_FROM_NAME: "t", CLONED_FROM_GROUPKIND: "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"}}), TemplateSource::Annotation("t".into()))]
    #[case::v1beta1_machine_set_owner(json!({"ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "name": "ms"}]}), TemplateSource::Owner(Owner{kind: kind("MachineSet"), name: "ms".into()}))]
    #[case::kcp_owner(json!({"ownerReferences": [{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane", "name": "cp"}]}), TemplateSource::Owner(Owner{kind: kind("KubeadmControlPlane"), name: "cp".into()}))]
    #[case::wrong_groupkind_falls_back(json!({"annotations": {CLONED_FROM_NAME: "t", CLONED_FROM_GROUPKIND: "Other.example.com"}, "ownerReferences": [{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "RKE2ControlPlane", "name": "cp"}]}), TemplateSource::Owner(Owner{kind: kind("RKE2ControlPlane"), name: "cp".into()}))]
    #[case::machine_set_preferred(json!({"ownerReferences": [{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane", "name": "cp"}, {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "ms"}]}), TemplateSource::Owner(Owner{kind: kind("MachineSet"), name: "ms".into()}))]
    #[case::machine_owner_is_not_usable(json!({"ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "m"}]}), TemplateSource::None)]
    #[case::nothing(json!({}), TemplateSource::None)]
    #[case::invalid_annotation_name_falls_back(json!({"annotations": {CLONED_FROM_NAME: "w-1/status", CLONED_FROM_GROUPKIND: "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"}, "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "ms"}]}), TemplateSource::Owner(Owner{kind: kind("MachineSet"), name: "ms".into()}))]
    #[case::invalid_owner_name(json!({"ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "../ms"}]}), TemplateSource::None)]
    #[case::owner_of_another_group(json!({"ownerReferences": [{"apiVersion": "example.com/v1", "kind": "MachineSet", "name": "ms"}]}), TemplateSource::None)]
    fn where_the_template_is_found(#[case] metadata: Value, #[case] expected: TemplateSource) {
        let (meta, owners) = meta(metadata);
        assert_eq!(template_source(&meta, &owners), expected);
    }

    #[rstest]
    #[case::v1beta1("v1beta1/05-machineset-old-revision.json")]
    #[case::v1beta2("v1beta2/05-machineset-old-revision.json")]
    fn owner_machine_set_names_the_template(#[case] file: &str) {
        let ms: Object = fixture(file);
        let candidate = references::candidate_of(kind("MachineSet"), &ms).unwrap();
        assert_eq!(
            metal3_template_named_by(&candidate),
            Some("edge-a-workers-1b8e4a60".into())
        );
    }

    #[test]
    fn owner_naming_another_provider_names_nothing() {
        let ms: Object = serde_json::from_value(json!({"spec": {"template": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachineTemplate", "name": "a"}}}}})).unwrap();
        let candidate = references::candidate_of(kind("MachineSet"), &ms).unwrap();
        assert_eq!(metal3_template_named_by(&candidate), None);
    }

    fn owned_by(kind_name: &str, name: &str) -> Value {
        let mut machine = created();
        machine["metadata"]["annotations"] = json!({});
        machine["metadata"]["ownerReferences"] = json!([{
            "apiVersion": format!("{}/v1beta2", kind(kind_name).resource.group),
            "kind": kind_name, "name": name}]);
        machine
    }

    fn naming(name: &str, template: &str) -> Candidate {
        Candidate {
            name: name.into(),
            named: vec![references::NamedTemplate {
                field: "spec.template.spec.infrastructureRef".into(),
                reference: serde_json::from_value(json!({"apiGroup": INFRASTRUCTURE_GROUP, "kind": "Metal3MachineTemplate", "name": template})).unwrap(),
            }],
            ..Candidate::default()
        }
    }

    fn reuse_template() -> Result<Value, Failure> {
        Ok(
            json!({"spec": {"nodeReuse": true, "template": {"spec": {"automatedCleaningMode": "disabled"}}}}),
        )
    }

    /// The mutation end to end over the lookups: where the template comes from, what is asked,
    /// and what a missing or failing lookup gives.
    #[rstest]
    #[case::annotations(created(), Memory::default().template("edge-a-workers-7f3c9d2e", reuse_template()), Ok(Some("edge-a-workers-7f3c9d2e")), vec!["Metal3MachineTemplate edge-a-workers-7f3c9d2e"])]
    #[case::machine_set_owner(owned_by("MachineSet", "ms"), Memory::default().object("MachineSet", Ok(naming("ms", "t1"))).template("t1", reuse_template()), Ok(Some("t1")), vec!["MachineSet ms", "Metal3MachineTemplate t1"])]
    #[case::control_plane_owner(owned_by("KubeadmControlPlane", "cp"), Memory::default().object("KubeadmControlPlane", Ok(naming("cp", "t2"))).template("t2", reuse_template()), Ok(Some("t2")), vec!["KubeadmControlPlane cp", "Metal3MachineTemplate t2"])]
    #[case::owner_missing(owned_by("MachineSet", "gone"), Memory::default(), Err(Error::OwnerNamesNoTemplate { kind: "MachineSet", name: "gone".into() }), vec!["MachineSet gone"])]
    #[case::template_missing(created(), Memory::default(), Err(Error::TemplateMissing("ns/edge-a-workers-7f3c9d2e".into())), vec!["Metal3MachineTemplate edge-a-workers-7f3c9d2e"])]
    #[case::template_lookup_fails(created(), Memory::default().template("edge-a-workers-7f3c9d2e", Err(Failure::Other)), Err(Error::Lookup(crate::testing::lookup_error("Metal3MachineTemplate", Failure::Other))), vec!["Metal3MachineTemplate edge-a-workers-7f3c9d2e"])]
    #[case::no_source(json!({"metadata": {"name": "m"}}), Memory::default(), Err(Error::NoTemplateSource), vec![])]
    #[case::not_an_object(json!("machine"), Memory::default(), Err(Error::UnreadableMachine("invalid type: string \"machine\", expected struct Object at line 1 column 9".into())), vec![])]
    fn record_intent_over_the_lookups(
        #[case] machine: Value,
        #[case] mut memory: Memory,
        #[case] source: Result<Option<&str>, Error>,
        #[case] asked: Vec<&str>,
    ) {
        let result = record_intent(&machine, "ns", &Settings::default(), &mut memory);
        let got = result.map(|mutated| {
            mutated.map(|m| {
                m["metadata"]["annotations"][FROM]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
        });
        assert_eq!(got, source.map(|s| s.map(str::to_string)));
        assert_eq!(memory.asked, asked);
    }
}
