//! Row 1 for MachineSets, by their MachineDeployment's revision, and Kairos' one namespace: the
//! decision's tables for what Cluster API's MachineSet controller and Kairos still read.
use super::tests::{candidate, decide_with, metal3, names, naming_t};
use super::*;
use crate::catalogue::INFRASTRUCTURE_GROUP;
use crate::testing::Memory;
use rstest::rstest;

/// The MachineSet `ms` with its MachineDeployment `md` at `owner_revision` (`Some(None)`: none),
/// which names another template (the rollout has moved on); `None`: only another
/// MachineDeployment is listed, `md` is gone.
fn with_its_deployment(ms: Candidate, owner_revision: Option<Option<&str>>) -> Memory {
    let mut md = candidate("md", vec![]);
    let deployments = match owner_revision {
        Some(rev) => {
            md.revision = rev.map(str::to_string);
            vec![md]
        }
        None => vec![candidate("other-md", vec![])],
    };
    Memory::default()
        .with("MachineDeployment", deployments)
        .with("MachineSet", vec![ms])
}

/// What Cluster API's MachineSet controller still reads (`Reconcile`,
/// `reconcileExternalTemplateReference`, `isCurrentMachineSet`, `syncReplicas` in
/// core/reconcilers/machineset/machineset_controller.go@v1.14.0): a standalone MachineSet and the
/// current revision keep their templates at any replica count; an old revision scaled to zero
/// keeps them while it has machines (Cluster API 1.12 and newer may update them in place,
/// `reconcileInPlaceUpdateIntent`@v1.14.0) and lets them go once they are gone; a MachineSet whose
/// MachineDeployment is gone reads none where the release is known to be 1.11 or newer (read at
/// `v1beta2`). A `nodeReuse` template stays while the MachineSet has machines (CAPM3 1.13 reads
/// it through the MachineSet).
#[rustfmt::skip]
#[rstest]
//                                label       owner's rev      own rev    spec st.  (v1beta2 setting reuse) kept
#[case::standalone_at_zero(       None,       None,            None,      0, 0,    (true,  false, false), true)]
#[case::current_at_zero(          Some("md"), Some(Some("2")), Some("2"), 0, 0,    (true,  false, false), true)]
#[case::current_at_zero_v1beta1(  Some("md"), Some(Some("2")), Some("2"), 0, 0,    (false, false, false), true)]
#[case::current_without_revisions(Some("md"), Some(None),      None,      0, 0,    (true,  false, false), true)]
#[case::current_running(          Some("md"), Some(Some("2")), Some("2"), 3, 3,    (true,  false, false), true)]
#[case::old_at_zero(              Some("md"), Some(Some("2")), Some("1"), 0, 0,    (true,  false, false), false)]
#[case::old_at_zero_v1beta1(      Some("md"), Some(Some("2")), Some("1"), 0, 0,    (false, false, false), false)]
#[case::old_draining(             Some("md"), Some(Some("2")), Some("1"), 0, 2,    (true,  false, false), true)]
#[case::old_draining_v1beta1(     Some("md"), Some(Some("2")), Some("1"), 0, 2,    (false, false, false), true)]
#[case::old_draining_node_reuse(  Some("md"), Some(Some("2")), Some("1"), 0, 2,    (true,  false, true),  true)]
#[case::old_at_zero_node_reuse(   Some("md"), Some(Some("2")), Some("1"), 0, 0,    (true,  false, true),  false)]
#[case::old_scaled_up(            Some("md"), Some(Some("2")), Some("1"), 1, 1,    (true,  false, false), true)]
#[case::old_counted_by_setting(   Some("md"), Some(Some("2")), Some("1"), 0, 0,    (true,  true,  false), true)]
#[case::old_without_revision(     Some("md"), Some(Some("2")), None,      0, 2,    (true,  false, false), true)]
#[case::old_drained_no_revision(  Some("md"), Some(Some("2")), None,      0, 0,    (true,  false, false), false)]
#[case::owner_gone_draining(      Some("md"), None,            Some("1"), 0, 2,    (true,  false, false), false)]
#[case::owner_gone(               Some("md"), None,            Some("2"), 3, 3,    (true,  false, false), false)]
#[case::owner_gone_v1beta1(       Some("md"), None,            Some("2"), 3, 3,    (false, false, false), true)]
#[case::owner_gone_node_reuse(    Some("md"), None,            Some("2"), 3, 3,    (true,  false, true),  true)]
#[case::owner_named_empty(        Some(""),   None,            Some("2"), 3, 3,    (true,  false, false), false)]
fn row1_machine_sets_by_revision(
    #[case] label: Option<&str>,
    #[case] owner_revision: Option<Option<&str>>,
    #[case] revision: Option<&str>,
    #[case] replicas: i64,
    #[case] machines: i64,
    #[case] (owner_read_first, count_scaled_down, node_reuse): (bool, bool, bool),
    #[case] is_kept: bool,
) {
    let mut ms = naming_t("ms");
    ms.replicas = Some(replicas);
    ms.machines = Some(machines);
    ms.deployment = label.map(str::to_string);
    ms.revision = revision.map(str::to_string);
    ms.owner_read_first = owner_read_first;
    let mut memory = with_its_deployment(ms, owner_revision);
    let settings = Settings {
        count_scaled_down_machine_sets: count_scaled_down,
        ..Settings::default()
    };
    let t = Template {
        node_reuse,
        ..metal3("t")
    };
    let decision = decide(&t, &settings, &mut memory).unwrap();
    assert_eq!(
        matches!(decision, Decision::Keep(_)),
        is_kept,
        "{decision:?}"
    );
}

/// A MachineSet being deleted keeps its templates while it has machines and its MachineDeployment
/// is there, at any revision and served version (the in-place path of Cluster API 1.12 and newer
/// reads every old MachineSet with replicas); once its machines are gone, or with no
/// MachineDeployment, only a `nodeReuse` template stays, and only while machines remain.
#[rustfmt::skip]
#[rstest]
//                                   label       owner's rev      own rev    machines  (v1beta2 reuse) kept
#[case::current_with_machines(       Some("md"), Some(Some("2")), Some("2"), Some(2),  (true,  false), true)]
#[case::current_drained(             Some("md"), Some(Some("2")), Some("2"), Some(0),  (true,  false), false)]
#[case::current_before_its_status(   Some("md"), Some(Some("2")), Some("2"), None,     (true,  false), true)]
#[case::old_with_machines(           Some("md"), Some(Some("2")), Some("1"), Some(1),  (true,  false), true)]
#[case::old_with_machines_v1beta1(   Some("md"), Some(Some("2")), Some("1"), Some(1),  (false, false), true)]
#[case::old_drained_v1beta1(         Some("md"), Some(Some("2")), Some("1"), Some(0),  (false, false), false)]
#[case::owner_gone_with_machines(    Some("md"), None,            Some("2"), Some(2),  (true,  false), false)]
#[case::owner_gone_node_reuse(       Some("md"), None,            Some("2"), Some(2),  (true,  true),  true)]
#[case::standalone_with_machines(    None,       None,            None,      Some(2),  (true,  false), false)]
#[case::drained_node_reuse(          Some("md"), Some(Some("2")), Some("2"), Some(0),  (true,  true),  false)]
fn row1_deleting_machine_sets(
    #[case] label: Option<&str>,
    #[case] owner_revision: Option<Option<&str>>,
    #[case] revision: Option<&str>,
    #[case] machines: Option<i64>,
    #[case] (owner_read_first, node_reuse): (bool, bool),
    #[case] is_kept: bool,
) {
    let mut ms = naming_t("ms");
    ms.deleting = true;
    ms.replicas = Some(0);
    ms.machines = machines;
    ms.deployment = label.map(str::to_string);
    ms.revision = revision.map(str::to_string);
    ms.owner_read_first = owner_read_first;
    let mut memory = with_its_deployment(ms, owner_revision);
    let t = Template {
        node_reuse,
        ..metal3("t")
    };
    let decision = decide(&t, &Settings::default(), &mut memory).unwrap();
    assert_eq!(
        matches!(decision, Decision::Keep(_)),
        is_kept,
        "{decision:?}"
    );
}

/// Where the MachineDeployments cannot be listed field by field, a MachineSet with machines is
/// taken to have its MachineDeployment, and one with none or no deployment label is not read in
/// place.
#[rstest]
#[case::with_machines(Some("md"), Some(3), true)]
#[case::drained(Some("md"), Some(0), false)]
#[case::standalone(None, Some(3), false)]
fn row1_in_place_reads_without_listed_deployments(
    #[case] label: Option<&str>,
    #[case] machines: Option<i64>,
    #[case] read: bool,
) {
    let mut ms = naming_t("ms");
    ms.deployment = label.map(str::to_string);
    ms.machines = machines;
    assert_eq!(read_for_in_place_update(&ms, "ns", None), read);
}

/// A MachineSet listed across namespaces finds its MachineDeployment in its own namespace only.
#[rstest]
#[case::owner_beside_it("edge-east", false)]
#[case::owner_only_in_the_templates_namespace("ns", true)]
fn row1_a_machine_sets_owner_is_in_its_namespace(#[case] owner_in: &str, #[case] released: bool) {
    let mut ms = naming_t("ms");
    ms.namespace = Some("edge-east".into());
    ms.named[0].reference.namespace = Some("ns".into());
    ms.deployment = Some("md".into());
    ms.revision = Some("2".into());
    ms.owner_read_first = true;
    let mut md = candidate("md", vec![]);
    md.namespace = Some(owner_in.into());
    md.revision = Some("2".into());
    let mut memory = Memory::default()
        .with("MachineDeployment", vec![md])
        .with("MachineSet", vec![ms]);
    let decision = decide_with(&metal3("t"), &mut memory).unwrap();
    assert_eq!(
        decision == Decision::Release(ReleaseReason::Unused),
        released
    );
}

/// Where the MachineDeployments cannot be listed field by field, a MachineSet reads its
/// templates as if its owner were current.
#[test]
fn row1_a_machine_set_without_listed_deployments_keeps() {
    let mut ms = naming_t("ms");
    ms.deployment = Some("md".into());
    ms.replicas = Some(0);
    ms.machines = Some(0);
    ms.owner_read_first = true;
    let settings = Settings::default();
    assert!(read_by_revision(&ms, "ns", &settings, None));
}

/// Kairos reads the machine template only in the namespace its reference names; Cluster API's
/// MachineDeployment, listed the same way at `v1beta1`, keeps the template in its own namespace
/// too, since 1.8 and older read the Cluster's.
#[rstest]
#[case::kairos_naming_another("KairosControlPlane", Some("edge-west"), false)]
#[case::kairos_naming_the_templates("KairosControlPlane", Some("ns"), true)]
#[case::kairos_naming_none("KairosControlPlane", None, true)]
#[case::kairos_naming_empty("KairosControlPlane", Some(""), true)]
#[case::machine_deployment_naming_another("MachineDeployment", Some("edge-west"), true)]
fn row2_kairos_reads_one_namespace(
    #[case] referrer: &'static str,
    #[case] reference_namespace: Option<&str>,
    #[case] is_kept: bool,
) {
    let mut cp = candidate(
        "cp",
        vec![names(
            "spec.machineTemplate.infrastructureRef",
            INFRASTRUCTURE_GROUP,
            "Metal3MachineTemplate",
            "t",
        )],
    );
    cp.namespace = Some("ns".into());
    cp.named[0].reference.namespace = reference_namespace.map(str::to_string);
    let mut memory = Memory::default().with(referrer, vec![cp]);
    let decision = decide_with(&metal3("t"), &mut memory).unwrap();
    assert_eq!(
        matches!(decision, Decision::Keep(_)),
        is_kept,
        "{decision:?}"
    );
}
