//! Every sentence the policy shows a user: deterministic (sorted, bounded) and saying what to do.

use crate::capi::{group_of, CAPI_GROUP, CONTROL_PLANE_GROUP, INFRASTRUCTURE_GROUP};
use crate::cluster::{Failure, LookupError};
use crate::decision::{Referrer, ReferrerKind, Template};

/// Names shown per kind before "and K more".
pub const MAX_NAMES_PER_KIND: usize = 3;

fn template_name(template: &Template) -> String {
    format!(
        "{} {}/{}",
        template.reference.kind, template.namespace, template.reference.name
    )
}

fn plural_kind(kind: ReferrerKind, count: usize) -> String {
    match (kind, count) {
        (_, 1) => kind.to_string(),
        (ReferrerKind::ClusterClass, _) => "ClusterClasses".to_string(),
        _ => format!("{kind}s"),
    }
}

/// The resource name RBAC rules use for a kind (`MachineSet` -> `machinesets`).
pub fn resource_name(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// "MachineSets a, b (f) and 2 more": one group of referrers of the same kind.
fn describe_group(kind: ReferrerKind, group: &[&Referrer]) -> String {
    let shown = &group[..group.len().min(MAX_NAMES_PER_KIND)];
    let same_fields = shown.iter().all(|r| r.fields == shown[0].fields);
    let mut names: Vec<String> = shown
        .iter()
        .map(|r| {
            if same_fields {
                r.name.clone()
            } else {
                format!("{} ({})", r.name, r.fields.join(", "))
            }
        })
        .collect();
    let more = group.len() - shown.len();
    let last = if more > 0 {
        format!("{more} more")
    } else {
        names.pop().unwrap_or_default()
    };
    let list = if names.is_empty() {
        last
    } else {
        format!("{} and {last}", names.join(", "))
    };
    let fields = if same_fields {
        format!(" ({})", shown[0].fields.join(", "))
    } else {
        String::new()
    };
    format!("{} {list}{fields}", plural_kind(kind, group.len()))
}

/// The rejection of a template that is still in use. `referrers` must be sorted (kind, name).
pub fn in_use(template: &Template, referrers: &[Referrer]) -> String {
    let mut groups: Vec<(ReferrerKind, Vec<&Referrer>)> = Vec::new();
    for referrer in referrers {
        match groups.last_mut() {
            Some((kind, group)) if *kind == referrer.kind => group.push(referrer),
            _ => groups.push((referrer.kind, vec![referrer])),
        }
    }
    let described: Vec<String> = groups
        .iter()
        .map(|(kind, group)| describe_group(*kind, group))
        .collect();
    let has = |wanted: &[ReferrerKind]| groups.iter().any(|(kind, _)| wanted.contains(kind));
    let mut advice = Vec::new();
    if has(&[
        ReferrerKind::MachineDeployment,
        ReferrerKind::MachineSet,
        ReferrerKind::KubeadmControlPlane,
        ReferrerKind::RKE2ControlPlane,
    ]) {
        advice.push(
            "Point them at another template and let the rollout finish, or delete them first.",
        );
    }
    if has(&[ReferrerKind::ClusterClass]) {
        advice.push("Change or delete the ClusterClass first.");
    }
    if has(&[ReferrerKind::Metal3Machine]) {
        advice.push("The template sets nodeReuse: true, which CAPM3 reads when it deletes these Metal3Machines, so wait until they are gone.");
    }
    format!(
        "{} is still in use and was not deleted. It is referenced by {}. {} Then delete the template again.",
        template_name(template),
        described.join("; "),
        advice.join(" ")
    )
}

/// A DELETE request that does not say which template it deletes.
pub fn malformed_delete(kind: &str, namespace: &str, name: &str, problem: &str) -> String {
    format!(
        "capi-template-guard cannot check the deletion of {kind} {namespace}/{name}: {problem}. The deletion was refused; retry it, and report this if it persists."
    )
}

fn version_setting(api_version: &str) -> &'static str {
    match group_of(api_version) {
        CAPI_GROUP => "capiApiVersion",
        CONTROL_PLANE_GROUP => "controlPlaneApiVersion",
        INFRASTRUCTURE_GROUP => "metal3ApiVersion",
        _ => "the matching API version setting",
    }
}

/// What an operator should change after a failed lookup.
pub fn lookup_hint(error: &LookupError) -> String {
    match error.failure {
        Failure::AccessDenied => format!(
            "Add apiVersion {}, kind {} to the policy's contextAwareResources.",
            error.api_version, error.kind
        ),
        Failure::NotServed => format!(
            "Set {} to a version your installed provider serves.",
            version_setting(&error.api_version)
        ),
        Failure::NotFound | Failure::Other => format!(
            "Check that the policy server's service account may get, list and watch {}.{}.",
            resource_name(&error.kind),
            group_of(&error.api_version)
        ),
    }
}

/// The rejection when a lookup failed (fail closed).
pub fn lookup_failed(template: &Template, error: &LookupError) -> String {
    format!(
        "capi-template-guard could not check whether {} is still in use, so the deletion was refused: {}. {} To accept deletions when a lookup fails, set failOpenOnLookupError to true.",
        template_name(template),
        error,
        lookup_hint(error)
    )
}

/// The warning when a lookup failed and failOpenOnLookupError accepted the deletion.
pub fn lookup_failed_accepted(template: &Template, error: &LookupError) -> String {
    format!(
        "capi-template-guard could not check whether {} is still in use and accepted the deletion because failOpenOnLookupError is true: {}. {}",
        template_name(template),
        error,
        lookup_hint(error)
    )
}

/// The settings carried by a validate request are unusable.
pub fn invalid_settings(problem: &str) -> String {
    format!("capi-template-guard cannot evaluate this request because its settings are invalid: {problem}")
}

/// The validate payload itself cannot be read.
pub fn unreadable_request(problem: &str) -> String {
    format!("capi-template-guard cannot read this admission request: {problem}.")
}

/// Why a new Metal3Machine was accepted without the template's intent.
pub fn machine_not_mutated(namespace: &str, name: &str, reason: &str) -> String {
    format!(
        "capi-template-guard did not copy nodeReuse and automatedCleaningMode onto Metal3Machine {namespace}/{name}: {reason}."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::references::TemplateRef;
    use rstest::rstest;
    use ReferrerKind::*;

    fn template() -> Template {
        Template {
            reference: TemplateRef {
                group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "Metal3MachineTemplate".into(),
                name: "t".into(),
            },
            namespace: "ns".into(),
            node_reuse: true,
            moving: false,
            cluster_owners: vec![],
        }
    }

    fn r(kind: ReferrerKind, name: &str, field: &str) -> Referrer {
        Referrer {
            kind,
            name: name.into(),
            fields: vec![field.into()],
        }
    }

    #[test]
    fn one_referrer() {
        assert_eq!(
            in_use(&template(), &[r(MachineDeployment, "md", "spec.template.spec.infrastructureRef")]),
            "Metal3MachineTemplate ns/t is still in use and was not deleted. It is referenced by MachineDeployment md (spec.template.spec.infrastructureRef). Point them at another template and let the rollout finish, or delete them first. Then delete the template again."
        );
    }

    #[test]
    fn many_referrers_are_grouped_and_bounded() {
        let mut referrers: Vec<Referrer> = (1..=5)
            .map(|i| r(Metal3Machine, &format!("m{i}"), "metadata.annotations[x]"))
            .collect();
        referrers.insert(
            0,
            r(
                ClusterClass,
                "cc",
                "spec.controlPlane.machineInfrastructure.ref",
            ),
        );
        referrers.insert(
            0,
            r(MachineSet, "b", "spec.template.spec.infrastructureRef"),
        );
        referrers.insert(
            0,
            r(MachineSet, "a", "spec.template.spec.bootstrap.configRef"),
        );
        assert_eq!(
            in_use(&template(), &referrers),
            "Metal3MachineTemplate ns/t is still in use and was not deleted. It is referenced by MachineSets a (spec.template.spec.bootstrap.configRef) and b (spec.template.spec.infrastructureRef); ClusterClass cc (spec.controlPlane.machineInfrastructure.ref); Metal3Machines m1, m2, m3 and 2 more (metadata.annotations[x]). Point them at another template and let the rollout finish, or delete them first. Change or delete the ClusterClass first. The template sets nodeReuse: true, which CAPM3 reads when it deletes these Metal3Machines, so wait until they are gone. Then delete the template again."
        );
    }

    #[rstest]
    #[case::exactly_max(3, "Metal3Machines m1, m2 and m3 (f)")]
    #[case::one_more(4, "Metal3Machines m1, m2, m3 and 1 more (f)")]
    #[case::two(2, "Metal3Machines m1 and m2 (f)")]
    fn group_bounds(#[case] count: usize, #[case] expected: &str) {
        let referrers: Vec<Referrer> = (1..=count)
            .map(|i| r(Metal3Machine, &format!("m{i}"), "f"))
            .collect();
        let group: Vec<&Referrer> = referrers.iter().collect();
        assert_eq!(describe_group(Metal3Machine, &group), expected);
    }

    #[rstest]
    #[case("MachineSet", "machinesets")]
    #[case("ClusterClass", "clusterclasses")]
    #[case("Metal3Machine", "metal3machines")]
    fn resource_names(#[case] kind: &str, #[case] expected: &str) {
        assert_eq!(resource_name(kind), expected);
    }

    fn error(failure: Failure, api_version: &str, kind: &str) -> LookupError {
        LookupError::of_list(api_version, kind, "ns", failure, "boom".into())
    }

    #[rstest]
    #[case::denied(Failure::AccessDenied, "cluster.x-k8s.io/v1beta1", "MachineSet", "Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineSet to the policy's contextAwareResources.")]
    #[case::capi_not_served(
        Failure::NotServed,
        "cluster.x-k8s.io/v1beta2",
        "MachineSet",
        "Set capiApiVersion to a version your installed provider serves."
    )]
    #[case::metal3_not_served(
        Failure::NotServed,
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "Metal3Machine",
        "Set metal3ApiVersion to a version your installed provider serves."
    )]
    #[case::rbac(Failure::Other, "cluster.x-k8s.io/v1beta1", "ClusterClass", "Check that the policy server's service account may get, list and watch clusterclasses.cluster.x-k8s.io.")]
    fn hints(
        #[case] failure: Failure,
        #[case] api_version: &str,
        #[case] kind: &str,
        #[case] hint: &str,
    ) {
        assert_eq!(lookup_hint(&error(failure, api_version, kind)), hint);
    }

    #[test]
    fn failed_lookup_message() {
        assert_eq!(
            lookup_failed(&template(), &error(Failure::Other, "cluster.x-k8s.io/v1beta1", "MachineSet")),
            "capi-template-guard could not check whether Metal3MachineTemplate ns/t is still in use, so the deletion was refused: listing MachineSet objects (cluster.x-k8s.io/v1beta1) in namespace ns failed: boom. Check that the policy server's service account may get, list and watch machinesets.cluster.x-k8s.io. To accept deletions when a lookup fails, set failOpenOnLookupError to true."
        );
    }
}
