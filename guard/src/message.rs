//! Every sentence the policy shows a user: deterministic (sorted, bounded) and saying what to do.

use std::fmt;

use crate::capi::{Template, group_of};
use crate::catalogue::{self, Advice, CRD, TemplateClass, plural_of};
use crate::decision::{Referrer, ReleaseReason};
use crate::error::{Error, Failure, KeyProblem, Lookup, LookupError, NoTemplateProblem};
use crate::settings::{KINDS_NAMING_NO_TEMPLATE, known_names};

/// Every error reads as the sentence [`describe`] makes of it. The `Display` impls live here,
/// beside the sentences, so that `error.rs` does not call up into this module.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(self))
    }
}

impl std::error::Error for Error {}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&lookup_error(self))
    }
}

/// Names shown per kind before "and K more".
pub const MAX_NAMES_PER_KIND: usize = 3;
/// Kubernetes may cut an admission warning longer than this.
pub const MAX_WARNING: usize = 256;

/// The longest message the policy sends; every part that comes from a request or a host answer
/// is clipped too, so that no input makes a message unreadable.
pub const MAX_MESSAGE: usize = 4096;
/// Object names have at most 253 characters, namespaces and kinds 63.
const MAX_NAME: usize = 253;
const MAX_SHORT: usize = 63;
/// Texts from a parser or the host.
const MAX_DETAIL: usize = 300;

/// `text` cut to at most `max` characters, the cut marked.
fn clip(text: &str, max: usize) -> String {
    bounded(text.to_string(), max)
}

fn template_name(template: &Template) -> String {
    object_name(
        &template.reference.kind,
        &template.namespace,
        &template.reference.name,
    )
}

fn object_name(kind: &str, namespace: &str, name: &str) -> String {
    format!(
        "{} {}/{}",
        clip(kind, MAX_SHORT),
        clip(namespace, MAX_SHORT),
        clip(name, MAX_NAME)
    )
}

fn plural_kind(kind: &str, count: usize) -> String {
    match count {
        1 => kind.to_string(),
        _ => plural_of(kind),
    }
}

/// Cuts `text` to at most `max` characters, marking the cut.
pub fn bounded(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// "MachineSets a, b (f) and 2 more": one group of referrers of the same kind.
fn describe_group(group: &[&Referrer]) -> String {
    let shown = &group[..group.len().min(MAX_NAMES_PER_KIND)];
    let same_fields = shown.iter().all(|r| r.fields == shown[0].fields);
    let mut names: Vec<String> = shown
        .iter()
        .map(|r| {
            // A referrer in another namespace is named with it, as kubectl names objects.
            let name = match &r.namespace {
                Some(namespace) => {
                    format!("{}/{}", clip(namespace, MAX_NAME), clip(&r.name, MAX_NAME))
                }
                None => clip(&r.name, MAX_NAME),
            };
            if same_fields {
                name
            } else {
                format!("{name} ({})", r.fields.join(", "))
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
    format!(
        "{} {list}{fields}",
        plural_kind(&clip(shown[0].kind.kind(), MAX_SHORT), group.len())
    )
}

fn advice(advice: Advice) -> &'static str {
    match advice {
        Advice::Rollout => {
            "Point them at another template and let the rollout finish, or delete them first."
        }
        Advice::ClusterClass => "Change or delete the ClusterClass first.",
        Advice::HealthCheck => {
            "Point the health checks at another remediation template, or delete them first."
        }
        Advice::NodeReuse => {
            "The template sets nodeReuse: true, which CAPM3 reads when it deletes these Metal3Machines, so wait until they are gone."
        }
        Advice::DataTemplate => {
            "A Metal3DataTemplate being deleted is gone once no claim or data names it, and a machine created from them after that would wait forever for it: point them at another Metal3DataTemplate, or delete them first."
        }
    }
}

/// The rejection of a template that is still in use. `referrers` are sorted by kind, then name.
pub fn in_use(template: &Template, referrers: &[Referrer]) -> String {
    let mut groups: Vec<Vec<&Referrer>> = Vec::new();
    for referrer in referrers {
        match groups.last_mut() {
            Some(group) if group[0].kind == referrer.kind => group.push(referrer),
            _ => groups.push(vec![referrer]),
        }
    }
    let described: Vec<String> = groups.iter().map(|group| describe_group(group)).collect();
    let mut advices: Vec<Advice> = groups
        .iter()
        .map(|group| group[0].kind.advice(template.class))
        .collect();
    advices.sort();
    advices.dedup();
    let advices: Vec<&str> = advices.into_iter().map(advice).collect();
    format!(
        "{} is still in use and was not deleted. It is referenced by {}. {} Then delete the template again.",
        template_name(template),
        described.join("; "),
        advices.join(" ")
    )
}

/// Why a deletion went through, for the policy server's log.
pub fn released(template: &Template, release: ReleaseReason) -> String {
    let why = match release {
        ReleaseReason::Moving => "clusterctl move is deleting it (delete-for-move annotation)",
        ReleaseReason::Unused => "nothing refers to it",
        ReleaseReason::ClusterDeleted => {
            "every Cluster that owns it is being deleted or gone, and only their own objects still refer to it"
        }
    };
    format!("{} may be deleted: {why}.", template_name(template))
}

fn lookup_text(lookup: &Lookup) -> String {
    match lookup {
        Lookup::ListAll {
            api_version,
            resource,
        } if **resource == crate::catalogue::CRD => {
            format!("listing {} objects ({api_version})", resource.kind)
        }
        // A namespaced kind listed cluster-wide: its references may name another namespace.
        Lookup::ListAll {
            api_version,
            resource,
        } => format!(
            "listing {} objects ({api_version}) in every namespace",
            resource.kind
        ),
        Lookup::List {
            api_version,
            resource,
            namespace,
        } => format!(
            "listing {} objects ({api_version}) in namespace {}",
            resource.kind,
            clip(namespace, MAX_SHORT)
        ),
        Lookup::Get {
            api_version,
            resource,
            namespace,
            name,
        } => format!(
            "getting {} ({api_version})",
            object_name(resource.kind, namespace, name)
        ),
        Lookup::Scan(scan) => format!(
            "listing {} objects ({}) in namespace {} to scan them for references",
            clip(&scan.kind, MAX_SHORT),
            clip(&scan.api_version, MAX_SHORT * 2),
            clip(&scan.namespace, MAX_SHORT)
        ),
    }
}

/// "listing X failed: detail".
pub fn lookup_error(error: &LookupError) -> String {
    // The host's texts may end in a period; the sentence adds its own.
    let detail = clip(error.detail.trim_end_matches('.'), MAX_DETAIL);
    let kind = clip(error.lookup.kind(), MAX_SHORT);
    let detail = match error.failure {
        Failure::NoReadableVersion => format!(
            "the policy can read {kind} only at {}, and {detail}",
            readable_versions(error)
        ),
        Failure::WrongVersion { setting } => format!(
            "{} pins {kind} to {}, and {detail}",
            setting.name(),
            version_of(error.lookup.api_version())
        ),
        _ => detail,
    };
    format!("{} failed: {detail}", lookup_text(&error.lookup))
}

fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or_default()
}

fn readable_versions(error: &LookupError) -> String {
    error
        .lookup
        .resource()
        .map_or_else(String::new, |resource| resource.versions.join(" or "))
}

/// What an operator should do after a failed lookup.
pub fn lookup_hint(error: &LookupError) -> String {
    let kind = clip(error.lookup.kind(), MAX_SHORT);
    let api_version = clip(error.lookup.api_version(), MAX_SHORT * 2);
    let group = group_of(&api_version);
    let plural = clip(error.lookup.plural(), MAX_SHORT);
    match error.failure {
        Failure::AccessDenied if kind == CRD.kind => format!(
            "The policy learns which providers are installed from the CRDs: add apiVersion {}, kind {kind} to its contextAwareResources, and let the policy server's service account get, list and watch {plural}.{group}.",
            error.lookup.api_version()
        ),
        Failure::AccessDenied if matches!(error.lookup, Lookup::Scan(_)) => format!(
            "The policy does not know {kind} at {api_version} and scans it for references to the template: add apiVersion {api_version}, kind {kind} to its contextAwareResources, and let the policy server's service account get, list and watch {plural}.{group}.{}",
            or_declare(&kind, group)
        ),
        Failure::AccessDenied => format!(
            "Add apiVersion {api_version}, kind {kind} to the policy's contextAwareResources."
        ),
        Failure::CapabilityDenied => "Kubewarden 1.36 and newer lets a policy use only the host capabilities it is granted: grant this policy the host capability the error names (kubernetes/list_resources_all, kubernetes/list_resources_by_namespace, kubernetes/get_resource and kubernetes/can_i are the ones it uses).".to_string(),
        Failure::NotPermitted => format!(
            "A list the API server refuses never answers the policy, and the evaluation timeout cannot stop it: it would hold a policy-server worker until the API server gives up on the webhook, and a thread until the RBAC is fixed, so the policy asked first: add a rule with apiGroups [\"{group}\"], resources [\"{plural}\"] and verbs [\"get\", \"list\", \"watch\"] to the ClusterRole capi-template-guard-reader (examples/rbac.yaml), and apiVersion {api_version}, kind {kind} to the policy's contextAwareResources; if the policy runs on another policy server, set policyServerServiceAccount to that server's service account, which needs create on subjectaccessreviews.authorization.k8s.io to ask (the kubewarden-defaults chart grants it to the default PolicyServer's).{}",
            or_declare(&kind, group)
        ),
        Failure::NoClusterCrd => "The template has Cluster owners, and without the Cluster CRD they would all read as gone: check that Cluster API is installed and that the policy server's service account may list and watch customresourcedefinitions.apiextensions.k8s.io.".to_string(),
        Failure::WrongVersion { setting } => format!("Set {} to auto.", setting.name()),
        Failure::NoReadableVersion => format!(
            "The provider that serves {kind} ({group}) serves none of the versions this policy reads ({}): if the provider is newer than this policy, upgrade the policy to a release that reads its versions; if it is older, upgrade the provider.",
            readable_versions(error)
        ),
        Failure::Unreadable => "Check that the policy server is Kubewarden 1.33 or newer (field masks), and report this with its version if it persists.".to_string(),
        Failure::NotFound | Failure::Other => format!(
            "Check that the policy server's service account may get, list and watch {plural}.{group}."
        ),
    }
}

/// The alternative to a grant for a kind the catalogue does not know: declaring that it names no
/// template. A kind the policy reads (known at another version) cannot be declared.
fn or_declare(kind: &str, group: &str) -> String {
    if catalogue::is_read(group, kind) {
        String::new()
    } else {
        format!(
            " Or, if {kind} names no machine or bootstrap template (a control plane that runs no machines), add \"{kind}.{group}\" to the policy's {KINDS_NAMING_NO_TEMPLATE} setting instead."
        )
    }
}

/// The rejection when a lookup failed (fail closed).
pub fn lookup_failed(template: &Template, error: &LookupError) -> String {
    format!(
        "capi-template-guard could not check whether {} is still in use, so the deletion was refused: {}. {} To accept deletions when a lookup fails, set failOpenOnLookupError to true.",
        template_name(template),
        lookup_error(error),
        lookup_hint(error)
    )
}

/// The warning when a lookup failed and failOpenOnLookupError accepted the deletion: what to do
/// first, within the warning bound.
pub fn lookup_failed_accepted(template: &Template, error: &LookupError) -> String {
    bounded(
        format!(
            "{} Deleted {} unchecked (failOpenOnLookupError): {}.",
            lookup_hint(error),
            template_name(template),
            lookup_error(error)
        ),
        MAX_WARNING,
    )
}

fn key_problem(problem: KeyProblem) -> &'static str {
    match problem {
        KeyProblem::Prefix => "its prefix must be a lowercase DNS subdomain such as example.com",
        KeyProblem::NameLength => "its name part must have 1 to 63 characters",
        KeyProblem::NameEdges => "its name part must start and end with a letter or digit",
        KeyProblem::NameCharacters => {
            "its name part may only hold letters, digits, '-', '_' and '.'"
        }
    }
}

/// The sentence for any [`Error`], as its own words (no prefix).
pub fn describe(error: &Error) -> String {
    match error {
        Error::SettingsNotJson(e) => {
            format!("The settings are not valid JSON: {}.", clip(e, MAX_DETAIL))
        }
        Error::SettingsNotAnObject(value) => format!(
            "The settings must be an object of named settings, not {}.",
            clip(value, MAX_DETAIL)
        ),
        Error::UnknownSettings(unknown) => {
            let unknown: Vec<String> = unknown.iter().map(|u| clip(u, MAX_SHORT)).collect();
            format!(
                "Unknown setting(s): {}. The known settings are: {}.",
                clip(&unknown.join(", "), MAX_DETAIL),
                known_names().collect::<Vec<_>>().join(", ")
            )
        }
        Error::SettingValue {
            setting,
            expected,
            value,
        } => format!(
            "The setting {setting} must be {expected}, not {}.",
            clip(value, MAX_DETAIL)
        ),
        Error::AnnotationKey {
            setting,
            key,
            problem,
        } => format!(
            "The setting {setting} is not a valid annotation key ({:?}): {}.",
            clip(key, MAX_DETAIL),
            key_problem(*problem)
        ),
        Error::ReservedAnnotationKey { setting, key } => format!(
            "The setting {setting} names {key:?}, a key that Cluster API, Kubernetes or this policy owns (prefixes cluster.x-k8s.io, kubernetes.io, k8s.io and their subdomains); choose a key under your own domain, such as example.com/node-reuse."
        ),
        Error::SameAnnotationKeys => "The settings nodeReuseAnnotation and sourceTemplateAnnotation must name two different annotation keys.".to_string(),
        Error::NoTemplateKind { entry, problem } => {
            let entry = clip(entry, MAX_DETAIL);
            match problem {
                NoTemplateProblem::Form => format!("The setting {KINDS_NAMING_NO_TEMPLATE} lists {entry:?}, which is not of the form Kind.group (for example HostedControlPlane.controlplane.cluster.x-k8s.io)."),
                NoTemplateProblem::NotScanned => format!(
                    "The setting {KINDS_NAMING_NO_TEMPLATE} lists {entry:?}, but the policy scans only kinds of {}, so the entry would change nothing: remove it.",
                    TemplateClass::Machine.scanned_groups().join(" and ")
                ),
                NoTemplateProblem::Known => format!("The setting {KINDS_NAMING_NO_TEMPLATE} lists {entry:?}, a kind this policy reads or guards itself: remove it."),
            }
        }
        Error::UnreadableRequest(e) => format!(
            "the admission request cannot be read ({})",
            clip(e, MAX_DETAIL)
        ),
        Error::NoOldObject => "the API server sent no oldObject with the DELETE, so the template cannot be read; the API server must send oldObject on DELETE (every supported Kubernetes release does), so check what stands between it and the policy server".to_string(),
        Error::UnreadableOldObject(e) => {
            format!("its oldObject cannot be read ({})", clip(e, MAX_DETAIL))
        }
        Error::Unnamed => "neither the request nor its oldObject names the template".to_string(),
        Error::Lookup(error) => lookup_error(error),
        Error::UnreadableMachine(e) => {
            format!("the object cannot be read ({})", clip(e, MAX_DETAIL))
        }
        Error::MachineNotAnObject => "the object is not a JSON object".to_string(),
        Error::PartNotAnObject(part) => format!("its {part} is not an object"),
        Error::NoTemplateSource => format!(
            "it has no valid {} annotation naming a Metal3MachineTemplate and no MachineSet or control-plane owner to find its template",
            crate::metadata::ReadKey::ClonedFromName.key()
        ),
        Error::OwnerNamesNoTemplate { kind, name } => format!(
            "its owner {kind} {} does not exist or names no Metal3MachineTemplate",
            clip(name, MAX_NAME)
        ),
        Error::TemplateMissing(name) => format!(
            "its template Metal3MachineTemplate {} does not exist",
            clip(name, MAX_NAME + MAX_SHORT)
        ),
    }
}

/// A DELETE request that does not say which template it deletes.
pub fn malformed_delete(kind: &str, namespace: &str, name: &str, error: &Error) -> String {
    format!(
        "capi-template-guard cannot check the deletion of {} and refused it: {}.",
        object_name(kind, namespace, name),
        describe(error)
    )
}

/// The settings carried by a validate request are unusable.
pub fn invalid_settings(error: &Error) -> String {
    format!(
        "capi-template-guard cannot evaluate this request because its settings are invalid: {}",
        describe(error)
    )
}

/// The validate payload itself cannot be read.
pub fn unreadable_request(error: &Error) -> String {
    format!(
        "capi-template-guard cannot evaluate this request: {}.",
        describe(error)
    )
}

/// Why a new Metal3Machine was accepted without the template's intent, within the warning bound.
pub fn machine_not_mutated(namespace: &str, name: &str, error: &Error) -> String {
    let hint = match error {
        Error::Lookup(lookup) => format!("{} ", lookup_hint(lookup)),
        _ => String::new(),
    };
    bounded(
        format!(
            "{hint}Metal3Machine {}/{} created without its template's nodeReuse and automatedCleaningMode: {}.",
            clip(namespace, MAX_SHORT),
            clip(name, MAX_NAME),
            describe(error)
        ),
        MAX_WARNING,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::VersionSetting;
    use crate::testing::{known_referrer, metal3_template};
    use rstest::rstest;

    fn template() -> Template {
        metal3_template("t", "ns")
    }

    fn r(kind_name: &str, name: &str, field: &str) -> Referrer {
        known_referrer(kind_name, name, field)
    }

    #[test]
    fn a_referrer_in_another_namespace_is_named_with_it() {
        let mut md = r(
            "MachineDeployment",
            "md-0",
            "spec.template.spec.infrastructureRef",
        );
        md.namespace = Some("edge-east".into());
        let text = in_use(&template(), &[md]);
        assert!(text.contains("MachineDeployment edge-east/md-0"), "{text}");
    }

    #[test]
    fn one_referrer() {
        assert_eq!(
            in_use(
                &template(),
                &[r(
                    "MachineDeployment",
                    "md",
                    "spec.template.spec.infrastructureRef"
                )]
            ),
            "Metal3MachineTemplate ns/t is still in use and was not deleted. It is referenced by MachineDeployment md (spec.template.spec.infrastructureRef). Point them at another template and let the rollout finish, or delete them first. Then delete the template again."
        );
    }

    #[test]
    fn many_referrers_are_grouped_and_bounded() {
        let mut referrers: Vec<Referrer> = (1..=5)
            .map(|i| r("Metal3Machine", &format!("m{i}"), "metadata.annotations[x]"))
            .collect();
        referrers.insert(
            0,
            r(
                "ClusterClass",
                "cc",
                "spec.controlPlane.machineInfrastructure.ref",
            ),
        );
        referrers.insert(
            0,
            r("MachineSet", "b", "spec.template.spec.infrastructureRef"),
        );
        referrers.insert(
            0,
            r("MachineSet", "a", "spec.template.spec.bootstrap.configRef"),
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
            .map(|i| r("Metal3Machine", &format!("m{i}"), "f"))
            .collect();
        let group: Vec<&Referrer> = referrers.iter().collect();
        assert_eq!(describe_group(&group), expected);
    }

    fn error(failure: Failure, api_version: &str, kind: &'static str) -> LookupError {
        crate::testing::lookup_error_at(api_version, kind, failure)
    }

    #[rstest]
    #[case::denied(
        Failure::AccessDenied,
        "cluster.x-k8s.io/v1beta1",
        "MachineSet",
        "Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineSet to the policy's contextAwareResources."
    )]
    #[case::crds_denied(
        Failure::AccessDenied,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "The policy learns which providers are installed from the CRDs: add apiVersion apiextensions.k8s.io/v1, kind CustomResourceDefinition to its contextAwareResources, and let the policy server's service account get, list and watch customresourcedefinitions.apiextensions.k8s.io."
    )]
    #[case::wrong_version(Failure::WrongVersion { setting: VersionSetting::ControlPlane }, "controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", "Set controlPlaneApiVersion to auto.")]
    #[case::no_readable_version(
        Failure::NoReadableVersion,
        "cluster.x-k8s.io/v1beta2",
        "MachineSet",
        "The provider that serves MachineSet (cluster.x-k8s.io) serves none of the versions this policy reads (v1beta2 or v1beta1): if the provider is newer than this policy, upgrade the policy to a release that reads its versions; if it is older, upgrade the provider."
    )]
    #[case::talos_no_readable_version(
        Failure::NoReadableVersion,
        "controlplane.cluster.x-k8s.io/v1alpha3",
        "TalosControlPlane",
        "The provider that serves TalosControlPlane (controlplane.cluster.x-k8s.io) serves none of the versions this policy reads (v1alpha3): if the provider is newer than this policy, upgrade the policy to a release that reads its versions; if it is older, upgrade the provider."
    )]
    // crates/policy-evaluator/src/runtimes/callback.rs `host_capability_denied` (Kubewarden 1.36).
    #[case::capability_denied(
        Failure::CapabilityDenied,
        "cluster.x-k8s.io/v1beta2",
        "MachineSet",
        "Kubewarden 1.36 and newer lets a policy use only the host capabilities it is granted: grant this policy the host capability the error names (kubernetes/list_resources_all, kubernetes/list_resources_by_namespace, kubernetes/get_resource and kubernetes/can_i are the ones it uses)."
    )]
    #[case::no_cluster_crd(
        Failure::NoClusterCrd,
        "cluster.x-k8s.io/v1beta2",
        "Cluster",
        "The template has Cluster owners, and without the Cluster CRD they would all read as gone: check that Cluster API is installed and that the policy server's service account may list and watch customresourcedefinitions.apiextensions.k8s.io."
    )]
    #[case::unreadable(
        Failure::Unreadable,
        "cluster.x-k8s.io/v1beta2",
        "MachineSet",
        "Check that the policy server is Kubewarden 1.33 or newer (field masks), and report this with its version if it persists."
    )]
    #[case::rbac(
        Failure::Other,
        "cluster.x-k8s.io/v1beta1",
        "ClusterClass",
        "Check that the policy server's service account may get, list and watch clusterclasses.cluster.x-k8s.io."
    )]
    fn hints(
        #[case] failure: Failure,
        #[case] api_version: &str,
        #[case] kind: &'static str,
        #[case] hint: &str,
    ) {
        assert_eq!(lookup_hint(&error(failure, api_version, kind)), hint);
    }

    #[test]
    fn failed_lookup_message() {
        assert_eq!(
            lookup_failed(
                &template(),
                &error(Failure::Other, "cluster.x-k8s.io/v1beta1", "MachineSet")
            ),
            "capi-template-guard could not check whether Metal3MachineTemplate ns/t is still in use, so the deletion was refused: listing MachineSet objects (cluster.x-k8s.io/v1beta1) in namespace ns failed: boom. Check that the policy server's service account may get, list and watch machinesets.cluster.x-k8s.io. To accept deletions when a lookup fails, set failOpenOnLookupError to true."
        );
    }

    #[test]
    fn wrong_version_message_names_the_setting() {
        let e = error(
            Failure::WrongVersion {
                setting: VersionSetting::Capi,
            },
            "cluster.x-k8s.io/v1beta2",
            "MachineSet",
        );
        let e = LookupError {
            detail: "its CRD serves v1beta1".into(),
            ..e
        };
        assert_eq!(
            lookup_error(&e),
            "listing MachineSet objects (cluster.x-k8s.io/v1beta2) in namespace ns failed: capiApiVersion pins MachineSet to v1beta2, and its CRD serves v1beta1"
        );
    }

    #[test]
    fn warnings_fit_in_256_characters_and_start_with_what_to_do() {
        let mut long = template();
        long.reference.name = "n".repeat(253);
        long.namespace = "s".repeat(63);
        let mut e = error(
            Failure::AccessDenied,
            "cluster.x-k8s.io/v1beta2",
            "MachineDeployment",
        );
        e.detail = "x".repeat(300);
        let warning = lookup_failed_accepted(&long, &e);
        assert_eq!(warning.chars().count(), MAX_WARNING);
        assert!(
            warning.starts_with("Add apiVersion cluster.x-k8s.io/v1beta2, kind MachineDeployment")
        );
        assert!(warning.ends_with('…'));
        let warning = machine_not_mutated(&"s".repeat(63), &"m".repeat(253), &Error::Lookup(e));
        assert!(warning.chars().count() <= MAX_WARNING, "{warning}");
        assert!(warning.starts_with("Add apiVersion"), "{warning}");
    }

    #[test]
    fn huge_names_and_parser_texts_are_clipped() {
        let mut huge = template();
        huge.reference.name = "n".repeat(300_000);
        huge.namespace = "s".repeat(300_000);
        let e = Error::UnreadableOldObject("x".repeat(300_000));
        let message =
            malformed_delete(&"K".repeat(1000), &huge.namespace, &huge.reference.name, &e);
        assert!(
            message.chars().count() < 1000,
            "{}",
            message.chars().count()
        );
        let referrers = [r("MachineSet", &"m".repeat(300_000), "f")];
        assert!(in_use(&huge, &referrers).chars().count() < 1000);
        let mut lookup = error(Failure::Unreadable, "v", "MachineSet");
        lookup.detail = "d".repeat(300_000);
        assert!(lookup_failed(&huge, &lookup).chars().count() < 1500);
    }

    #[test]
    fn short_warnings_are_not_cut() {
        assert_eq!(bounded("abc".into(), 3), "abc");
        assert_eq!(bounded("abcd".into(), 3), "ab…");
    }
}
