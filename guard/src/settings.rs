//! Policy settings: camelCase, every field optional, unknown fields refused.
//!
//! Settings are read by hand from JSON so that every mistake is reported as an [`Error`] naming
//! the setting (made into a sentence in `message.rs`), not as raw deserializer text.

use serde_json::{Map, Value};

use crate::capi::is_dns_subdomain;
use crate::catalogue::{self, TemplateClass, V1BETA1, V1BETA2, VersionSetting};
use crate::error::{Error, KeyProblem, NoTemplateProblem};
use crate::metadata::ReadKey;

pub const DEFAULT_NODE_REUSE_ANNOTATION: &str = "capi-template-guard.kubewarden.io/node-reuse";
pub const DEFAULT_SOURCE_TEMPLATE_ANNOTATION: &str =
    "capi-template-guard.kubewarden.io/source-template";
/// The account of the `default` PolicyServer as the Kubewarden charts install it
/// (kubewarden-controller@v1.36.0-beta.1 `charts/kubewarden-defaults/values.yaml`
/// `serviceAccountName: policy-server`, in the release namespace, usually `kubewarden`).
pub const DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT: &str =
    "system:serviceaccount:kubewarden:policy-server";

/// The version a group is read at: the newest its CRDs serve (`auto`), or fixed by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionChoice {
    /// The newest version the kind's CRD serves among those the policy can read.
    #[default]
    Auto,
    Fixed(&'static str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Version used to read MachineDeployments, MachineSets, MachineHealthChecks, ClusterClasses
    /// and Clusters.
    pub capi_api_version: VersionChoice,
    /// Version used to read KubeadmControlPlanes and RKE2ControlPlanes (the other control planes
    /// are served at versions of their own, always read at the newest their CRD serves).
    pub control_plane_api_version: VersionChoice,
    /// Version used to read Metal3Machines, Metal3MachineTemplates, Metal3DataClaims and
    /// Metal3Datas.
    pub metal3_api_version: VersionChoice,
    /// Whether a MachineSet of an old revision of its MachineDeployment, scaled to zero, still
    /// keeps its templates (see `decision::read_by_revision`).
    pub count_scaled_down_machine_sets: bool,
    /// Whether a failed lookup accepts the deletion (with a warning) instead of rejecting it.
    pub fail_open_on_lookup_error: bool,
    /// Whether new Metal3Machines get the node-reuse and cleaning intent of their template.
    pub mutate_metal3_machines: bool,
    pub node_reuse_annotation: String,
    pub source_template_annotation: String,
    /// Kinds the operator declares to name no template, as (group, kind): never scanned, so that
    /// a provider the catalogue does not know yet needs no grant and no policy release.
    pub kinds_naming_no_template: Vec<(String, String)>,
    /// The policy server's service account as Kubernetes names it
    /// (`system:serviceaccount:<namespace>:<name>`): before listing a kind its RBAC example does
    /// not grant, the policy asks the host whether this account may list it.
    pub policy_server_service_account: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            capi_api_version: VersionChoice::Auto,
            control_plane_api_version: VersionChoice::Auto,
            metal3_api_version: VersionChoice::Auto,
            count_scaled_down_machine_sets: false,
            fail_open_on_lookup_error: false,
            mutate_metal3_machines: true,
            node_reuse_annotation: DEFAULT_NODE_REUSE_ANNOTATION.to_string(),
            source_template_annotation: DEFAULT_SOURCE_TEMPLATE_ANNOTATION.to_string(),
            kinds_naming_no_template: Vec::new(),
            policy_server_service_account: DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT.to_string(),
        }
    }
}

impl Settings {
    pub fn version(&self, setting: VersionSetting) -> VersionChoice {
        match setting {
            VersionSetting::Capi => self.capi_api_version,
            VersionSetting::ControlPlane => self.control_plane_api_version,
            VersionSetting::Metal3 => self.metal3_api_version,
        }
    }

    /// Whether the operator declared `kind` of `group` to name no template.
    pub fn names_no_template(&self, group: &str, kind: &str) -> bool {
        self.kinds_naming_no_template
            .iter()
            .any(|(g, k)| g == group && k == kind)
    }
}

/// The names of the settings that are not version settings (those are
/// [`VersionSetting::name`]): each written once, here.
pub const COUNT_SCALED_DOWN_MACHINE_SETS: &str = "countScaledDownMachineSets";
pub const FAIL_OPEN_ON_LOOKUP_ERROR: &str = "failOpenOnLookupError";
pub const MUTATE_METAL3_MACHINES: &str = "mutateMetal3Machines";
pub const NODE_REUSE_ANNOTATION: &str = "nodeReuseAnnotation";
pub const SOURCE_TEMPLATE_ANNOTATION: &str = "sourceTemplateAnnotation";
pub const KINDS_NAMING_NO_TEMPLATE: &str = "kindsNamingNoTemplate";
pub const POLICY_SERVER_SERVICE_ACCOUNT: &str = "policyServerServiceAccount";

/// One known setting: its name and how its value is read into [`Settings`].
pub struct Known {
    pub name: &'static str,
    read: fn(&mut Settings, &'static str, &Value) -> Result<(), Error>,
}

/// Every setting the policy knows, in the order messages list them: the one table settings are
/// parsed from.
pub const KNOWN: [Known; 10] = [
    Known {
        name: VersionSetting::Capi.name(),
        read: |s, name, value| {
            s.capi_api_version = version(name, value)?;
            Ok(())
        },
    },
    Known {
        name: VersionSetting::ControlPlane.name(),
        read: |s, name, value| {
            s.control_plane_api_version = version(name, value)?;
            Ok(())
        },
    },
    Known {
        name: VersionSetting::Metal3.name(),
        read: |s, name, value| {
            s.metal3_api_version = version(name, value)?;
            Ok(())
        },
    },
    Known {
        name: COUNT_SCALED_DOWN_MACHINE_SETS,
        read: |s, name, value| {
            s.count_scaled_down_machine_sets = boolean(name, value)?;
            Ok(())
        },
    },
    Known {
        name: FAIL_OPEN_ON_LOOKUP_ERROR,
        read: |s, name, value| {
            s.fail_open_on_lookup_error = boolean(name, value)?;
            Ok(())
        },
    },
    Known {
        name: MUTATE_METAL3_MACHINES,
        read: |s, name, value| {
            s.mutate_metal3_machines = boolean(name, value)?;
            Ok(())
        },
    },
    Known {
        name: NODE_REUSE_ANNOTATION,
        read: |s, name, value| {
            s.node_reuse_annotation = string(name, value)?;
            Ok(())
        },
    },
    Known {
        name: SOURCE_TEMPLATE_ANNOTATION,
        read: |s, name, value| {
            s.source_template_annotation = string(name, value)?;
            Ok(())
        },
    },
    Known {
        name: KINDS_NAMING_NO_TEMPLATE,
        read: |s, name, value| {
            s.kinds_naming_no_template = group_kinds(name, value)?;
            Ok(())
        },
    },
    Known {
        name: POLICY_SERVER_SERVICE_ACCOUNT,
        read: |s, name, value| {
            s.policy_server_service_account = service_account(name, value)?;
            Ok(())
        },
    },
];

/// The names of the known settings, in table order.
pub fn known_names() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|k| k.name)
}

fn wrong(setting: &'static str, expected: &'static str, value: &Value) -> Error {
    Error::SettingValue {
        setting,
        expected,
        value: value.to_string(),
    }
}

fn version(setting: &'static str, value: &Value) -> Result<VersionChoice, Error> {
    match value.as_str() {
        Some("auto") => Ok(VersionChoice::Auto),
        Some(V1BETA1) => Ok(VersionChoice::Fixed(V1BETA1)),
        Some(V1BETA2) => Ok(VersionChoice::Fixed(V1BETA2)),
        _ => Err(wrong(
            setting,
            "\"auto\", \"v1beta1\" or \"v1beta2\"",
            value,
        )),
    }
}

fn boolean(setting: &'static str, value: &Value) -> Result<bool, Error> {
    value
        .as_bool()
        .ok_or_else(|| wrong(setting, "true or false", value))
}

fn string(setting: &'static str, value: &Value) -> Result<String, Error> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| wrong(setting, "a string", value))
}

/// A list of `Kind.group` strings (the form of Cluster API's cloned-from-groupkind annotation),
/// each a kind the policy would scan: a group it scans for machine and bootstrap templates, and a
/// kind it neither reads nor guards (declaring one of those would switch off a rule). Duplicates
/// are kept once, in the order given.
fn group_kinds(setting: &'static str, value: &Value) -> Result<Vec<(String, String)>, Error> {
    let expected = "a list of strings of the form Kind.group";
    let Value::Array(items) = value else {
        return Err(wrong(setting, expected, value));
    };
    let mut kinds: Vec<(String, String)> = Vec::new();
    for item in items {
        let Some(entry) = item.as_str() else {
            return Err(wrong(setting, expected, value));
        };
        let problem = |problem| Error::NoTemplateKind {
            entry: entry.to_string(),
            problem,
        };
        let (kind, group) = entry
            .split_once('.')
            .filter(|(kind, group)| is_kind(kind) && is_dns_subdomain(group))
            .ok_or_else(|| problem(NoTemplateProblem::Form))?;
        if !TemplateClass::Machine.scanned_groups().contains(&group) {
            return Err(problem(NoTemplateProblem::NotScanned));
        }
        if catalogue::template_class(group, kind).is_some() || catalogue::is_read(group, kind) {
            return Err(problem(NoTemplateProblem::Known));
        }
        let pair = (group.to_string(), kind.to_string());
        if !kinds.contains(&pair) {
            kinds.push(pair);
        }
    }
    Ok(kinds)
}

/// A service account's user name: `system:serviceaccount:`, a namespace (a DNS label) and a
/// name (a DNS subdomain), as `kubectl auth can-i --as` takes it.
fn service_account(setting: &'static str, value: &Value) -> Result<String, Error> {
    let account = value
        .as_str()
        .and_then(|text| text.strip_prefix("system:serviceaccount:"))
        .and_then(|rest| rest.split_once(':'))
        .filter(|(namespace, name)| {
            is_dns_subdomain(namespace) && !namespace.contains('.') && is_dns_subdomain(name)
        });
    match account {
        Some(_) => Ok(value.as_str().unwrap_or_default().to_string()),
        None => Err(wrong(
            setting,
            "a service account's user name, system:serviceaccount:NAMESPACE:NAME",
            value,
        )),
    }
}

/// A Kubernetes kind as CRDs declare it: a letter first, then letters and digits, at most 63.
fn is_kind(kind: &str) -> bool {
    kind.len() <= 63
        && kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.chars().all(|c| c.is_ascii_alphanumeric())
}

impl TryFrom<Value> for Settings {
    type Error = Error;

    fn try_from(value: Value) -> Result<Self, Error> {
        let fields = match value {
            Value::Object(fields) => fields,
            Value::Null => Map::new(),
            other => return Err(Error::SettingsNotAnObject(other.to_string())),
        };
        let mut unknown: Vec<String> = fields
            .keys()
            .filter(|key| !known_names().any(|name| name == key.as_str()))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(Error::UnknownSettings(unknown));
        }
        let mut settings = Settings::default();
        for known in &KNOWN {
            match fields.get(known.name) {
                // An explicit null means "use the default", as Helm values often render it.
                None | Some(Value::Null) => {}
                Some(value) => (known.read)(&mut settings, known.name, value)?,
            }
        }
        Ok(settings)
    }
}

/// Why `key` is not a valid Kubernetes annotation key: an optional DNS-subdomain prefix and `/`,
/// then a name of at most 63 characters that starts and ends with an alphanumeric character.
pub fn annotation_key_problem(key: &str) -> Option<KeyProblem> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    // The prefix is a DNS-1123 subdomain: the rule object names follow, checked in one place.
    if prefix.is_some_and(|prefix| !is_dns_subdomain(prefix)) {
        return Some(KeyProblem::Prefix);
    }
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > 63 {
        return Some(KeyProblem::NameLength);
    }
    if !edge_ok(name.chars().next()) || !edge_ok(name.chars().last()) {
        return Some(KeyProblem::NameEdges);
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Some(KeyProblem::NameCharacters);
    }
    None
}

/// Prefixes the policy must never write under: Cluster API's own (its controllers and clusterctl
/// read them) and the ones Kubernetes reserves, each with its subdomains.
const RESERVED_PREFIXES: [&str; 3] = ["cluster.x-k8s.io", "kubernetes.io", "k8s.io"];

/// Whether writing `key` could overwrite an annotation that Cluster API, Kubernetes or the policy
/// itself reads.
pub fn is_reserved_annotation_key(key: &str) -> bool {
    let reserved_prefix = key.rsplit_once('/').is_some_and(|(prefix, _)| {
        RESERVED_PREFIXES.iter().any(|reserved| {
            prefix == *reserved
                || prefix
                    .strip_suffix(reserved)
                    .is_some_and(|sub| sub.ends_with('.'))
        })
    });
    reserved_prefix || ReadKey::ALL.iter().any(|read| read.key() == key)
}

impl Settings {
    pub fn validate(&self) -> Result<(), Error> {
        for (setting, key) in [
            (NODE_REUSE_ANNOTATION, &self.node_reuse_annotation),
            (SOURCE_TEMPLATE_ANNOTATION, &self.source_template_annotation),
        ] {
            if let Some(problem) = annotation_key_problem(key) {
                return Err(Error::AnnotationKey {
                    setting,
                    key: key.clone(),
                    problem,
                });
            }
            if is_reserved_annotation_key(key) {
                return Err(Error::ReservedAnnotationKey {
                    setting,
                    key: key.clone(),
                });
            }
        }
        if self.node_reuse_annotation == self.source_template_annotation {
            return Err(Error::SameAnnotationKeys);
        }
        Ok(())
    }
}

/// Parses and validates settings given as JSON.
pub fn parse_and_validate(value: Value) -> Result<Settings, Error> {
    let settings = Settings::try_from(value)?;
    settings.validate()?;
    Ok(settings)
}

/// Parses and validates a settings payload. Generic over how the bytes are held (any `&[u8]`
/// will do) so that the calling crate instantiates the JSON reader, as
/// [`crate::capi::owners_of`] explains.
pub fn parse_payload(payload: &(impl AsRef<[u8]> + ?Sized)) -> Result<Settings, Error> {
    let value: Value = serde_json::from_slice(payload.as_ref())
        .map_err(|e| Error::SettingsNotJson(e.to_string()))?;
    parse_and_validate(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::describe;
    use rstest::rstest;

    /// The sentence a user reads for a settings payload.
    fn sentence(payload: &[u8]) -> Result<Settings, String> {
        parse_payload(payload).map_err(|e| describe(&e))
    }
    use serde_json::json;

    #[test]
    fn empty_settings_take_every_default() {
        assert_eq!(sentence(b"{}"), Ok(Settings::default()));
        assert_eq!(sentence(b"null"), Ok(Settings::default()));
    }

    #[test]
    fn every_setting_is_read() {
        let settings = sentence(
            json!({
                "capiApiVersion": "v1beta2",
                "controlPlaneApiVersion": "v1beta1",
                "metal3ApiVersion": "auto",
                "countScaledDownMachineSets": true,
                "failOpenOnLookupError": true,
                "mutateMetal3Machines": false,
                "nodeReuseAnnotation": "example.com/reuse",
                "sourceTemplateAnnotation": "example.com/from",
                "kindsNamingNoTemplate": ["FooControlPlane.controlplane.cluster.x-k8s.io",
                    "FooControlPlane.controlplane.cluster.x-k8s.io"],
                "policyServerServiceAccount": "system:serviceaccount:guard:ps"
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            settings,
            Settings {
                capi_api_version: VersionChoice::Fixed(V1BETA2),
                control_plane_api_version: VersionChoice::Fixed(V1BETA1),
                metal3_api_version: VersionChoice::Auto,
                count_scaled_down_machine_sets: true,
                fail_open_on_lookup_error: true,
                mutate_metal3_machines: false,
                node_reuse_annotation: "example.com/reuse".into(),
                source_template_annotation: "example.com/from".into(),
                kinds_naming_no_template: vec![(
                    "controlplane.cluster.x-k8s.io".into(),
                    "FooControlPlane".into()
                )],
                policy_server_service_account: "system:serviceaccount:guard:ps".into(),
            }
        );
    }

    #[test]
    fn null_means_default() {
        assert_eq!(
            sentence(br#"{"capiApiVersion": null}"#),
            Ok(Settings::default())
        );
    }

    #[rstest]
    #[case::unknown_field(json!({"capiVersion": "v1beta2", "alpha": 1}), "Unknown setting(s): alpha, capiVersion. The known settings are: capiApiVersion, controlPlaneApiVersion, metal3ApiVersion, countScaledDownMachineSets, failOpenOnLookupError, mutateMetal3Machines, nodeReuseAnnotation, sourceTemplateAnnotation, kindsNamingNoTemplate, policyServerServiceAccount.")]
    #[case::bad_version(json!({"metal3ApiVersion": "v1alpha5"}), "The setting metal3ApiVersion must be \"auto\", \"v1beta1\" or \"v1beta2\", not \"v1alpha5\".")]
    #[case::bad_bool(json!({"failOpenOnLookupError": "yes"}), "The setting failOpenOnLookupError must be true or false, not \"yes\".")]
    #[case::bad_string(json!({"nodeReuseAnnotation": 3}), "The setting nodeReuseAnnotation must be a string, not 3.")]
    #[case::not_an_object(json!(["v1beta2"]), "The settings must be an object of named settings, not [\"v1beta2\"].")]
    #[case::bad_key_prefix(json!({"nodeReuseAnnotation": "Example.com/reuse"}), "The setting nodeReuseAnnotation is not a valid annotation key (\"Example.com/reuse\"): its prefix must be a lowercase DNS subdomain such as example.com.")]
    #[case::bad_key_name(json!({"sourceTemplateAnnotation": "example.com/-from"}), "The setting sourceTemplateAnnotation is not a valid annotation key (\"example.com/-from\"): its name part must start and end with a letter or digit.")]
    #[case::capi_owned_key(json!({"nodeReuseAnnotation": "cluster.x-k8s.io/cloned-from-name"}), "The setting nodeReuseAnnotation names \"cluster.x-k8s.io/cloned-from-name\", a key that Cluster API, Kubernetes or this policy owns (prefixes cluster.x-k8s.io, kubernetes.io, k8s.io and their subdomains); choose a key under your own domain, such as example.com/node-reuse.")]
    #[case::capi_subdomain_key(json!({"sourceTemplateAnnotation": "clusterctl.cluster.x-k8s.io/delete-for-move"}), "The setting sourceTemplateAnnotation names \"clusterctl.cluster.x-k8s.io/delete-for-move\", a key that Cluster API, Kubernetes or this policy owns (prefixes cluster.x-k8s.io, kubernetes.io, k8s.io and their subdomains); choose a key under your own domain, such as example.com/node-reuse.")]
    #[case::kubernetes_key(json!({"nodeReuseAnnotation": "node.kubernetes.io/reuse"}), "The setting nodeReuseAnnotation names \"node.kubernetes.io/reuse\", a key that Cluster API, Kubernetes or this policy owns (prefixes cluster.x-k8s.io, kubernetes.io, k8s.io and their subdomains); choose a key under your own domain, such as example.com/node-reuse.")]
    #[case::k8s_io_key(json!({"nodeReuseAnnotation": "k8s.io/reuse"}), "The setting nodeReuseAnnotation names \"k8s.io/reuse\", a key that Cluster API, Kubernetes or this policy owns (prefixes cluster.x-k8s.io, kubernetes.io, k8s.io and their subdomains); choose a key under your own domain, such as example.com/node-reuse.")]
    #[case::no_template_not_a_list(json!({"kindsNamingNoTemplate": "FooControlPlane.controlplane.cluster.x-k8s.io"}), "The setting kindsNamingNoTemplate must be a list of strings of the form Kind.group, not \"FooControlPlane.controlplane.cluster.x-k8s.io\".")]
    #[case::no_template_not_strings(json!({"kindsNamingNoTemplate": [3]}), "The setting kindsNamingNoTemplate must be a list of strings of the form Kind.group, not [3].")]
    #[case::no_template_no_group(json!({"kindsNamingNoTemplate": ["FooControlPlane"]}), "The setting kindsNamingNoTemplate lists \"FooControlPlane\", which is not of the form Kind.group (for example HostedControlPlane.controlplane.cluster.x-k8s.io).")]
    #[case::no_template_bad_group(json!({"kindsNamingNoTemplate": ["Foo.Controlplane"]}), "The setting kindsNamingNoTemplate lists \"Foo.Controlplane\", which is not of the form Kind.group (for example HostedControlPlane.controlplane.cluster.x-k8s.io).")]
    #[case::no_template_other_group(json!({"kindsNamingNoTemplate": ["FooMachine.infrastructure.cluster.x-k8s.io"]}), "The setting kindsNamingNoTemplate lists \"FooMachine.infrastructure.cluster.x-k8s.io\", but the policy scans only kinds of controlplane.cluster.x-k8s.io and etcdcluster.cluster.x-k8s.io, so the entry would change nothing: remove it.")]
    #[case::no_template_read_kind(json!({"kindsNamingNoTemplate": ["KubeadmControlPlane.controlplane.cluster.x-k8s.io"]}), "The setting kindsNamingNoTemplate lists \"KubeadmControlPlane.controlplane.cluster.x-k8s.io\", a kind this policy reads or guards itself: remove it.")]
    #[case::no_template_a_template(json!({"kindsNamingNoTemplate": ["FooControlPlaneTemplate.controlplane.cluster.x-k8s.io"]}), "The setting kindsNamingNoTemplate lists \"FooControlPlaneTemplate.controlplane.cluster.x-k8s.io\", a kind this policy reads or guards itself: remove it.")]
    #[case::account_without_prefix(json!({"policyServerServiceAccount": "kubewarden:policy-server"}), "The setting policyServerServiceAccount must be a service account's user name, system:serviceaccount:NAMESPACE:NAME, not \"kubewarden:policy-server\".")]
    #[case::account_bad_namespace(json!({"policyServerServiceAccount": "system:serviceaccount:Kube_warden:ps"}), "The setting policyServerServiceAccount must be a service account's user name, system:serviceaccount:NAMESPACE:NAME, not \"system:serviceaccount:Kube_warden:ps\".")]
    #[case::same_keys(json!({"nodeReuseAnnotation": "a/b", "sourceTemplateAnnotation": "a/b"}), "The settings nodeReuseAnnotation and sourceTemplateAnnotation must name two different annotation keys.")]
    fn invalid_settings_are_explained(#[case] value: Value, #[case] message: &str) {
        assert_eq!(
            sentence(value.to_string().as_bytes()),
            Err(message.to_string())
        );
    }

    #[test]
    fn settings_that_are_not_json_are_explained() {
        let err = sentence(b"{capiApiVersion").unwrap_err();
        assert!(
            err.starts_with("The settings are not valid JSON: "),
            "{err}"
        );
    }

    #[rstest]
    #[case::plain_name("node-reuse", None)]
    #[case::prefixed("capi-template-guard.kubewarden.io/node-reuse", None)]
    #[case::dots_and_underscores("example.com/a_b.c", None)]
    #[case::empty("", Some("its name part must have 1 to 63 characters"))]
    #[case::empty_prefix(
        "/name",
        Some("its prefix must be a lowercase DNS subdomain such as example.com")
    )]
    #[case::long_name(&"a".repeat(64), Some("its name part must have 1 to 63 characters"))]
    #[case::space(
        "example.com/a b",
        Some("its name part may only hold letters, digits, '-', '_' and '.'")
    )]
    #[case::two_slashes(
        "a/b/c",
        Some("its prefix must be a lowercase DNS subdomain such as example.com")
    )]
    fn annotation_keys(#[case] key: &str, #[case] problem: Option<&str>) {
        let sentence = |p: KeyProblem| {
            describe(&Error::AnnotationKey {
                setting: "s",
                key: String::new(),
                problem: p,
            })
        };
        assert_eq!(
            annotation_key_problem(key).map(sentence),
            problem.map(|p| format!("The setting s is not a valid annotation key (\"\"): {p}."))
        );
    }

    #[rstest]
    #[case::own_domain("example.com/node-reuse", false)]
    #[case::lookalike_domain("mycluster.x-k8s.io.example.com/a", false)]
    #[case::not_a_subdomain("notcluster.x-k8s.io/a", false)]
    #[case::capi("cluster.x-k8s.io/a", true)]
    #[case::capi_subdomain("clusterctl.cluster.x-k8s.io/a", true)]
    #[case::kubernetes("kubernetes.io/a", true)]
    #[case::kubernetes_subdomain("node.kubernetes.io/a", true)]
    #[case::k8s("k8s.io/a", true)]
    #[case::k8s_subdomain("x.k8s.io/a", true)]
    #[case::unprefixed("node-reuse", false)]
    fn reserved_annotation_keys(#[case] key: &str, #[case] reserved: bool) {
        assert_eq!(is_reserved_annotation_key(key), reserved);
    }
}
