//! The deletion decision: one pure function over the template, the settings and a typed
//! [`Lookups`] trait. The rows run in the order of the README's table; nothing else decides.

use std::collections::BTreeMap;

use crate::capi::Template;
use crate::catalogue::{ReferrerKind, REFERRERS};
use crate::error::{Failure, LookupError};
use crate::references::Candidate;
use crate::settings::Settings;

/// What the decision needs to know of the cluster. `lookups.rs` answers it from the host; tests
/// answer it from memory.
pub trait Lookups {
    /// The objects of `kind` in the template's namespace. A kind served at no version fails with
    /// [`Failure::NotServed`].
    fn referrers(&mut self, kind: &'static ReferrerKind) -> Result<Vec<Candidate>, LookupError>;

    /// The state of the Cluster `name` in the template's namespace.
    fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError>;
}

/// What is known of one owning Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    Live,
    Deleting,
    Gone,
}

/// An object that still needs the template, and the fields that name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referrer {
    pub kind: &'static ReferrerKind,
    pub name: String,
    pub fields: Vec<String>,
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
    /// Sorted by kind (catalogue order), then name; each referrer's fields sorted.
    Keep(Vec<Referrer>),
}

/// Decides whether `template` may be deleted.
pub fn decide(
    template: &Template,
    settings: &Settings,
    lookups: &mut impl Lookups,
) -> Result<Decision, LookupError> {
    // Row 5, before any lookup: clusterctl move retries each delete for a bounded time only.
    if template.moving {
        return Ok(Decision::Release(Release::Moving));
    }
    // Rows 1 to 4.
    let referrers = referrers_keeping(template, settings, lookups)?;
    if referrers.is_empty() {
        return Ok(Decision::Release(Release::Unused));
    }
    // Row 6, read only when something still refers to the template.
    if every_owning_cluster_is_going(template, lookups)? {
        return Ok(Decision::Release(Release::ClusterDeleted));
    }
    Ok(Decision::Keep(referrers))
}

/// Rows 1 to 4: every object of a kind that can keep the template and whose fields name it. Every
/// list is read, even after a first referrer, so that the message names them all.
fn referrers_keeping(
    template: &Template,
    settings: &Settings,
    lookups: &mut impl Lookups,
) -> Result<Vec<Referrer>, LookupError> {
    let mut found = Vec::new();
    for kind in REFERRERS
        .iter()
        .filter(|kind| kind.can_keep(template.class, template.node_reuse))
    {
        let candidates = match lookups.referrers(kind) {
            Ok(candidates) => candidates,
            // An optional provider that is not installed keeps nothing.
            Err(error) if error.failure == Failure::NotServed && kind.optional => continue,
            Err(error) => return Err(error),
        };
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for candidate in candidates
            .iter()
            .filter(|c| counts(kind, c, settings.count_scaled_down_machine_sets))
        {
            for named in &candidate.named {
                if template.reference.is_named_by(&named.reference) {
                    by_name
                        .entry(candidate.name.clone())
                        .or_default()
                        .push(named.field.clone());
                }
            }
        }
        found.extend(by_name.into_iter().map(|(name, mut fields)| {
            fields.sort();
            fields.dedup();
            Referrer { kind, name, fields }
        }));
    }
    Ok(found)
}

/// Whether a listed object can keep anything. Referrers being deleted never count (the topology
/// controller deletes a MachineSet's templates before it lets the MachineSet go), except kinds
/// whose deletion never waits for the template. A scaled-down MachineSet keeps nothing unless
/// `countScaledDownMachineSets` is set.
fn counts(kind: &ReferrerKind, candidate: &Candidate, count_scaled_down: bool) -> bool {
    (!candidate.deleting || kind.counts_while_deleting)
        && !(kind.scaled_down_keeps_nothing && candidate.scaled_down && !count_scaled_down)
}

/// Row 6: the template has owning Clusters and every one is being deleted or gone.
fn every_owning_cluster_is_going(
    template: &Template,
    lookups: &mut impl Lookups,
) -> Result<bool, LookupError> {
    if template.cluster_owners.is_empty() {
        return Ok(false);
    }
    for name in &template.cluster_owners {
        if lookups.cluster(name)? == ClusterState::Live {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::TemplateRef;
    use crate::catalogue::{self, TemplateClass, BOOTSTRAP_GROUP, INFRASTRUCTURE_GROUP};
    use crate::error::Lookup;
    use crate::references::NamedTemplate;
    use crate::testing::referrer_kind as kind;
    use rstest::rstest;
    use serde_json::json;

    /// Answers from memory and records what was asked, in order.
    #[derive(Default)]
    struct Memory {
        lists: BTreeMap<&'static str, Result<Vec<Candidate>, Failure>>,
        clusters: BTreeMap<String, Result<ClusterState, Failure>>,
        asked: Vec<String>,
    }

    fn error(kind: &'static str, failure: Failure) -> LookupError {
        LookupError {
            lookup: Lookup::List {
                api_version: "x/v1beta2".into(),
                resource: catalogue::resources_read()
                    .find(|r| r.kind == kind)
                    .expect("a kind of the catalogue"),
                namespace: "ns".into(),
            },
            failure,
            detail: "boom".into(),
        }
    }

    impl Lookups for Memory {
        fn referrers(
            &mut self,
            kind: &'static ReferrerKind,
        ) -> Result<Vec<Candidate>, LookupError> {
            self.asked.push(kind.kind().to_string());
            match self.lists.get(kind.kind()) {
                Some(Ok(list)) => Ok(list.clone()),
                Some(Err(failure)) => Err(error(kind.kind(), *failure)),
                None => Ok(vec![]),
            }
        }

        fn cluster(&mut self, name: &str) -> Result<ClusterState, LookupError> {
            self.asked.push(format!("Cluster {name}"));
            match self.clusters.get(name) {
                Some(Ok(state)) => Ok(*state),
                Some(Err(failure)) => Err(error("Cluster", *failure)),
                None => Ok(ClusterState::Gone),
            }
        }
    }

    impl Memory {
        fn with(mut self, kind: &'static str, candidates: Vec<Candidate>) -> Self {
            self.lists.insert(kind, Ok(candidates));
            self
        }

        fn failing(mut self, kind: &'static str, failure: Failure) -> Self {
            self.lists.insert(kind, Err(failure));
            self
        }

        fn cluster_is(mut self, name: &str, state: Result<ClusterState, Failure>) -> Self {
            self.clusters.insert(name.into(), state);
            self
        }
    }

    fn template(group: &str, kind: &str, name: &str) -> Template {
        Template {
            reference: TemplateRef {
                group: group.into(),
                kind: kind.into(),
                name: name.into(),
            },
            class: catalogue::template_class(group, kind).expect("a guarded kind"),
            namespace: "ns".into(),
            node_reuse: false,
            moving: false,
            cluster_owners: vec![],
        }
    }

    fn metal3(name: &str) -> Template {
        template(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", name)
    }

    fn names(field: &str, group: &str, kind: &str, name: &str) -> NamedTemplate {
        NamedTemplate {
            field: field.into(),
            reference: serde_json::from_value(
                json!({"apiGroup": group, "kind": kind, "name": name}),
            )
            .unwrap(),
        }
    }

    const INFRA: &str = "spec.template.spec.infrastructureRef";

    fn candidate(name: &str, named: Vec<NamedTemplate>) -> Candidate {
        Candidate {
            name: name.into(),
            named,
            ..Default::default()
        }
    }

    fn naming_t(name: &str) -> Candidate {
        candidate(
            name,
            vec![names(
                INFRA,
                INFRASTRUCTURE_GROUP,
                "Metal3MachineTemplate",
                "t",
            )],
        )
    }

    fn kept(decision: Decision) -> Vec<(String, String, Vec<String>)> {
        match decision {
            Decision::Keep(referrers) => referrers
                .into_iter()
                .map(|r| (r.kind.kind().to_string(), r.name, r.fields))
                .collect(),
            Decision::Release(release) => panic!("released: {release:?}"),
        }
    }

    fn decide_with(template: &Template, memory: &mut Memory) -> Result<Decision, LookupError> {
        decide(template, &Settings::default(), memory)
    }

    #[rstest]
    #[case::row1_a_machine_deployment("MachineDeployment")]
    #[case::row1_a_machine_set("MachineSet")]
    #[case::row2_a_control_plane("RKE2ControlPlane")]
    fn a_listed_referrer_keeps_the_template_it_names(#[case] referrer: &'static str) {
        let mut memory = Memory::default().with(referrer, vec![naming_t("r")]);
        assert_eq!(
            kept(decide_with(&metal3("t"), &mut memory).unwrap()),
            vec![(referrer.into(), "r".into(), vec![INFRA.into()])]
        );
    }

    #[test]
    fn row1_a_machine_set_being_deleted_keeps_nothing() {
        let mut deleting = naming_t("ms");
        deleting.deleting = true;
        let mut memory = Memory::default().with("MachineSet", vec![deleting]);
        assert_eq!(
            decide_with(&metal3("t"), &mut memory),
            Ok(Decision::Release(Release::Unused))
        );
    }

    #[rstest]
    #[case::scaled_down_released(true, false, false)]
    #[case::scaled_down_counted_by_setting(true, true, true)]
    #[case::running_kept(false, false, true)]
    fn row1_scaled_down_machine_sets(
        #[case] scaled_down: bool,
        #[case] count_scaled_down: bool,
        #[case] is_kept: bool,
    ) {
        let mut ms = naming_t("ms");
        ms.scaled_down = scaled_down;
        let mut memory = Memory::default().with("MachineSet", vec![ms]);
        let settings = Settings {
            count_scaled_down_machine_sets: count_scaled_down,
            ..Settings::default()
        };
        let decision = decide(&metal3("t"), &settings, &mut memory).unwrap();
        assert_eq!(matches!(decision, Decision::Keep(_)), is_kept);
    }

    #[test]
    fn row1_scaled_down_machine_deployment_still_counts() {
        let mut md = naming_t("md");
        md.scaled_down = true;
        let mut memory = Memory::default().with("MachineDeployment", vec![md]);
        assert!(matches!(
            decide_with(&metal3("t"), &mut memory),
            Ok(Decision::Keep(_))
        ));
    }

    #[rstest]
    #[case::same_everything(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t", true)]
    #[case::other_name(INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "u", false)]
    #[case::other_kind(INFRASTRUCTURE_GROUP, "AWSMachineTemplate", "t", false)]
    #[case::other_group("infrastructure.example.com", "Metal3MachineTemplate", "t", false)]
    fn row1_a_reference_names_kind_name_and_group(
        #[case] group: &str,
        #[case] kind_name: &str,
        #[case] name: &str,
        #[case] is_kept: bool,
    ) {
        let mut memory = Memory::default().with(
            "MachineSet",
            vec![candidate("ms", vec![names(INFRA, group, kind_name, name)])],
        );
        let decision = decide_with(&metal3("t"), &mut memory).unwrap();
        assert_eq!(matches!(decision, Decision::Keep(_)), is_kept);
    }

    #[rstest]
    #[case::optional_control_plane_not_installed("KubeadmControlPlane", Failure::NotServed, true)]
    #[case::capi_not_served("MachineSet", Failure::NotServed, false)]
    #[case::control_plane_wrong_version("KubeadmControlPlane", Failure::WrongVersion { setting: catalogue::VersionSetting::ControlPlane, served: catalogue::Version::V1beta1 }, false)]
    #[case::control_plane_denied("KubeadmControlPlane", Failure::AccessDenied, false)]
    #[case::unreadable_list("ClusterClass", Failure::Unreadable, false)]
    fn row2_only_an_optional_kind_not_served_counts_as_none(
        #[case] failing: &'static str,
        #[case] failure: Failure,
        #[case] forgiven: bool,
    ) {
        let mut memory = Memory::default().failing(failing, failure);
        let decision = decide_with(&metal3("t"), &mut memory);
        if forgiven {
            assert_eq!(decision, Ok(Decision::Release(Release::Unused)));
        } else {
            assert_eq!(decision.unwrap_err().failure, failure);
        }
    }

    #[rstest]
    #[case::infrastructure_cluster_template(
        INFRASTRUCTURE_GROUP,
        "Metal3ClusterTemplate",
        "spec.infrastructure.templateRef"
    )]
    #[case::control_plane_template(
        "controlplane.cluster.x-k8s.io",
        "KubeadmControlPlaneTemplate",
        "spec.controlPlane.templateRef"
    )]
    #[case::managed_control_plane_template(
        INFRASTRUCTURE_GROUP,
        "AzureManagedControlPlaneTemplate",
        "spec.controlPlane.ref"
    )]
    #[case::machine_pool_template(
        INFRASTRUCTURE_GROUP,
        "DockerMachinePoolTemplate",
        "spec.workers.machinePools[class=p].infrastructure.templateRef"
    )]
    fn row3_cluster_class_templates_are_kept_by_cluster_classes_only(
        #[case] group: &str,
        #[case] kind_name: &str,
        #[case] field: &str,
    ) {
        let mut memory = Memory::default().with(
            "ClusterClass",
            vec![candidate("cc", vec![names(field, group, kind_name, "t")])],
        );
        let t = template(group, kind_name, "t");
        assert_eq!(
            kept(decide_with(&t, &mut memory).unwrap()),
            vec![("ClusterClass".into(), "cc".into(), vec![field.into()])]
        );
        assert_eq!(memory.asked, vec!["ClusterClass"]);
    }

    #[test]
    fn row3_a_cluster_class_being_deleted_releases_its_templates() {
        let mut cc = candidate(
            "cc",
            vec![names(
                "spec.infrastructure.ref",
                INFRASTRUCTURE_GROUP,
                "Metal3ClusterTemplate",
                "t",
            )],
        );
        cc.deleting = true;
        let mut memory = Memory::default().with("ClusterClass", vec![cc]);
        let t = template(INFRASTRUCTURE_GROUP, "Metal3ClusterTemplate", "t");
        assert_eq!(
            decide_with(&t, &mut memory),
            Ok(Decision::Release(Release::Unused))
        );
    }

    fn cloned_from_t(name: &str, deleting: bool) -> Candidate {
        let mut c = candidate(
            name,
            vec![names(
                "metadata.annotations[cluster.x-k8s.io/cloned-from-name]",
                INFRASTRUCTURE_GROUP,
                "Metal3MachineTemplate",
                "t",
            )],
        );
        c.deleting = deleting;
        c
    }

    #[rstest]
    #[case::node_reuse_live_machine(true, false, true)]
    #[case::node_reuse_deleting_machine(true, true, true)]
    #[case::no_node_reuse(false, false, false)]
    fn row4_metal3_machines_keep_a_node_reuse_template(
        #[case] node_reuse: bool,
        #[case] deleting: bool,
        #[case] is_kept: bool,
    ) {
        let mut t = metal3("t");
        t.node_reuse = node_reuse;
        let mut memory =
            Memory::default().with("Metal3Machine", vec![cloned_from_t("m", deleting)]);
        let decision = decide_with(&t, &mut memory).unwrap();
        assert_eq!(matches!(decision, Decision::Keep(_)), is_kept);
        assert_eq!(
            memory.asked.contains(&"Metal3Machine".to_string()),
            node_reuse
        );
    }

    #[test]
    fn rows_1_to_4_read_only_the_kinds_that_can_name_the_template() {
        let mut memory = Memory::default();
        let mut t = metal3("t");
        t.node_reuse = true;
        decide_with(&t, &mut memory).unwrap();
        assert_eq!(
            memory.asked,
            vec![
                "MachineDeployment",
                "MachineSet",
                "KubeadmControlPlane",
                "RKE2ControlPlane",
                "ClusterClass",
                "Metal3Machine"
            ]
        );
        let mut memory = Memory::default();
        decide_with(
            &template(BOOTSTRAP_GROUP, "TalosConfigTemplate", "t"),
            &mut memory,
        )
        .unwrap();
        assert_eq!(
            memory.asked,
            vec!["MachineDeployment", "MachineSet", "ClusterClass"]
        );
        let mut memory = Memory::default();
        decide_with(
            &template(INFRASTRUCTURE_GROUP, "OpenStackMachineTemplate", "t"),
            &mut memory,
        )
        .unwrap();
        assert_eq!(
            memory.asked,
            vec![
                "MachineDeployment",
                "MachineSet",
                "KubeadmControlPlane",
                "RKE2ControlPlane",
                "ClusterClass"
            ]
        );
    }

    #[test]
    fn referrers_are_sorted_by_kind_then_name_with_sorted_fields() {
        let both = candidate(
            "b",
            vec![
                names(INFRA, INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t"),
                names(
                    "spec.infrastructureRef",
                    INFRASTRUCTURE_GROUP,
                    "Metal3MachineTemplate",
                    "t",
                ),
                names(INFRA, INFRASTRUCTURE_GROUP, "Metal3MachineTemplate", "t"),
            ],
        );
        let mut memory = Memory::default()
            .with("ClusterClass", vec![naming_t("a")])
            .with("MachineSet", vec![naming_t("z"), naming_t("a")])
            .with("RKE2ControlPlane", vec![both]);
        assert_eq!(
            kept(decide_with(&metal3("t"), &mut memory).unwrap()),
            vec![
                ("MachineSet".into(), "a".into(), vec![INFRA.into()]),
                ("MachineSet".into(), "z".into(), vec![INFRA.into()]),
                (
                    "RKE2ControlPlane".into(),
                    "b".into(),
                    vec!["spec.infrastructureRef".into(), INFRA.into()]
                ),
                ("ClusterClass".into(), "a".into(), vec![INFRA.into()]),
            ]
        );
    }

    #[test]
    fn row5_move_is_released_before_any_lookup() {
        let mut t = metal3("t");
        t.moving = true;
        let mut memory = Memory::default().with("MachineDeployment", vec![naming_t("md")]);
        assert_eq!(
            decide_with(&t, &mut memory),
            Ok(Decision::Release(Release::Moving))
        );
        assert!(memory.asked.is_empty());
    }

    #[rstest]
    #[case::one_deleting(vec![("c", Ok(ClusterState::Deleting))], Ok(true))]
    #[case::one_gone(vec![("c", Ok(ClusterState::Gone))], Ok(true))]
    #[case::one_live(vec![("c", Ok(ClusterState::Live))], Ok(false))]
    #[case::one_of_two_live(vec![("a", Ok(ClusterState::Deleting)), ("b", Ok(ClusterState::Live))], Ok(false))]
    #[case::lookup_fails(vec![("c", Err(Failure::Other))], Err(Failure::Other))]
    fn row6_owning_clusters(
        #[case] clusters: Vec<(&str, Result<ClusterState, Failure>)>,
        #[case] released: Result<bool, Failure>,
    ) {
        let mut t = metal3("t");
        let mut memory = Memory::default().with("MachineDeployment", vec![naming_t("md")]);
        for (name, state) in clusters {
            t.cluster_owners.push(name.into());
            memory = memory.cluster_is(name, state);
        }
        let decision = decide_with(&t, &mut memory);
        assert_eq!(
            decision
                .map(|d| d == Decision::Release(Release::ClusterDeleted))
                .map_err(|e| e.failure),
            released
        );
    }

    #[test]
    fn row6_clusters_are_read_only_when_something_refers_to_the_template() {
        let mut t = metal3("t");
        t.cluster_owners = vec!["c".into()];
        let mut memory = Memory::default();
        assert_eq!(
            decide_with(&t, &mut memory),
            Ok(Decision::Release(Release::Unused))
        );
        assert!(!memory.asked.iter().any(|a| a.starts_with("Cluster ")));
    }

    #[test]
    fn row6_without_cluster_owners_keeps_without_a_cluster_lookup() {
        let mut memory = Memory::default().with("MachineDeployment", vec![naming_t("md")]);
        assert!(matches!(
            decide_with(&metal3("t"), &mut memory),
            Ok(Decision::Keep(_))
        ));
        assert!(!memory.asked.iter().any(|a| a.starts_with("Cluster ")));
    }

    #[test]
    fn every_template_class_has_a_referrer() {
        for class in [
            TemplateClass::Machine,
            TemplateClass::MachinePool,
            TemplateClass::Cluster,
            TemplateClass::ControlPlane,
            TemplateClass::Bootstrap,
        ] {
            assert!(
                REFERRERS.iter().any(|k| k.can_keep(class, false)),
                "{class:?}"
            );
        }
        assert!(kind("Metal3Machine").only_node_reuse);
    }
}
