//! Policy settings: camelCase, every field optional, unknown fields refused.
//!
//! Settings are parsed by hand from JSON (through `TryFrom<Value>`) so that every mistake is
//! reported as a full sentence naming the setting, not as raw deserializer text.

use kubewarden_policy_sdk::settings::Validatable;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

pub const DEFAULT_NODE_REUSE_ANNOTATION: &str = "capi-template-guard.kubewarden.io/node-reuse";
pub const DEFAULT_SOURCE_TEMPLATE_ANNOTATION: &str =
    "capi-template-guard.kubewarden.io/source-template";

/// The served API versions of the CAPI, control-plane and Metal3 groups the policy can list at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum ApiVersion {
    #[default]
    #[serde(rename = "v1beta1")]
    V1beta1,
    #[serde(rename = "v1beta2")]
    V1beta2,
}

impl ApiVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1beta1 => "v1beta1",
            ApiVersion::V1beta2 => "v1beta2",
        }
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "Value", rename_all = "camelCase")]
pub struct Settings {
    /// Version used to read MachineDeployments, MachineSets, ClusterClasses and Clusters.
    pub capi_api_version: ApiVersion,
    /// Version used to read KubeadmControlPlanes and RKE2ControlPlanes.
    pub control_plane_api_version: ApiVersion,
    /// Version used to read Metal3Machines and Metal3MachineTemplates.
    pub metal3_api_version: ApiVersion,
    /// Whether a MachineSet scaled to zero with no machines left still keeps its templates.
    pub count_scaled_down_machine_sets: bool,
    /// Whether a failed lookup accepts the deletion (with a warning) instead of rejecting it.
    pub fail_open_on_lookup_error: bool,
    /// Whether new Metal3Machines get the node-reuse and cleaning intent of their template.
    pub mutate_metal3_machines: bool,
    pub node_reuse_annotation: String,
    pub source_template_annotation: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            capi_api_version: ApiVersion::V1beta1,
            control_plane_api_version: ApiVersion::V1beta1,
            metal3_api_version: ApiVersion::V1beta1,
            count_scaled_down_machine_sets: false,
            fail_open_on_lookup_error: false,
            mutate_metal3_machines: true,
            node_reuse_annotation: DEFAULT_NODE_REUSE_ANNOTATION.to_string(),
            source_template_annotation: DEFAULT_SOURCE_TEMPLATE_ANNOTATION.to_string(),
        }
    }
}

const KNOWN: [&str; 8] = [
    "capiApiVersion",
    "controlPlaneApiVersion",
    "metal3ApiVersion",
    "countScaledDownMachineSets",
    "failOpenOnLookupError",
    "mutateMetal3Machines",
    "nodeReuseAnnotation",
    "sourceTemplateAnnotation",
];

fn api_version(key: &str, value: &Value) -> Result<ApiVersion, String> {
    match value.as_str() {
        Some("v1beta1") => Ok(ApiVersion::V1beta1),
        Some("v1beta2") => Ok(ApiVersion::V1beta2),
        _ => Err(format!(
            "The setting {key} must be \"v1beta1\" or \"v1beta2\", not {value}."
        )),
    }
}

fn boolean(key: &str, value: &Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("The setting {key} must be true or false, not {value}."))
}

fn string(key: &str, value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("The setting {key} must be a string, not {value}."))
}

impl TryFrom<Value> for Settings {
    type Error = String;

    fn try_from(value: Value) -> Result<Self, String> {
        let fields = match value {
            Value::Object(fields) => fields,
            Value::Null => Map::new(),
            other => {
                return Err(format!(
                    "The settings must be an object of named settings, not {other}."
                ))
            }
        };
        let mut unknown: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|key| !KNOWN.contains(key))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(format!(
                "Unknown setting(s): {}. The known settings are: {}.",
                unknown.join(", "),
                KNOWN.join(", ")
            ));
        }
        let mut settings = Settings::default();
        for (key, value) in &fields {
            // An explicit null means "use the default", as Helm values often render it.
            if value.is_null() {
                continue;
            }
            match key.as_str() {
                "capiApiVersion" => settings.capi_api_version = api_version(key, value)?,
                "controlPlaneApiVersion" => {
                    settings.control_plane_api_version = api_version(key, value)?
                }
                "metal3ApiVersion" => settings.metal3_api_version = api_version(key, value)?,
                "countScaledDownMachineSets" => {
                    settings.count_scaled_down_machine_sets = boolean(key, value)?
                }
                "failOpenOnLookupError" => {
                    settings.fail_open_on_lookup_error = boolean(key, value)?
                }
                "mutateMetal3Machines" => settings.mutate_metal3_machines = boolean(key, value)?,
                "nodeReuseAnnotation" => settings.node_reuse_annotation = string(key, value)?,
                "sourceTemplateAnnotation" => {
                    settings.source_template_annotation = string(key, value)?
                }
                _ => {}
            }
        }
        Ok(settings)
    }
}

/// Whether `key` is a valid Kubernetes annotation key: an optional DNS-subdomain prefix and `/`,
/// then a name of at most 63 characters that starts and ends with an alphanumeric character.
pub fn annotation_key_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        if prefix.is_empty() || prefix.len() > 253 || !prefix.split('.').all(label_ok) {
            return Some("its prefix must be a lowercase DNS subdomain such as example.com");
        }
    }
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > 63 {
        return Some("its name part must have 1 to 63 characters");
    }
    if !edge_ok(name.chars().next()) || !edge_ok(name.chars().last()) {
        return Some("its name part must start and end with a letter or digit");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Some("its name part may only hold letters, digits, '-', '_' and '.'");
    }
    None
}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        for (setting, key) in [
            ("nodeReuseAnnotation", &self.node_reuse_annotation),
            ("sourceTemplateAnnotation", &self.source_template_annotation),
        ] {
            if let Some(problem) = annotation_key_problem(key) {
                return Err(format!(
                    "The setting {setting} is not a valid annotation key ({key:?}): {problem}."
                ));
            }
        }
        if self.node_reuse_annotation == self.source_template_annotation {
            return Err(
                "The settings nodeReuseAnnotation and sourceTemplateAnnotation must name two different annotation keys."
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// Parses and validates a settings payload; the error is the sentence to show the user.
pub fn parse_and_validate(payload: &[u8]) -> Result<Settings, String> {
    let value: Value = serde_json::from_slice(payload)
        .map_err(|e| format!("The settings are not valid JSON: {e}."))?;
    let settings = Settings::try_from(value)?;
    settings.validate()?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[test]
    fn empty_settings_take_every_default() {
        assert_eq!(parse_and_validate(b"{}"), Ok(Settings::default()));
        assert_eq!(parse_and_validate(b"null"), Ok(Settings::default()));
    }

    #[test]
    fn every_setting_is_read() {
        let settings = parse_and_validate(
            json!({
                "capiApiVersion": "v1beta2",
                "controlPlaneApiVersion": "v1beta2",
                "metal3ApiVersion": "v1beta2",
                "countScaledDownMachineSets": true,
                "failOpenOnLookupError": true,
                "mutateMetal3Machines": false,
                "nodeReuseAnnotation": "example.com/reuse",
                "sourceTemplateAnnotation": "example.com/from"
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            settings,
            Settings {
                capi_api_version: ApiVersion::V1beta2,
                control_plane_api_version: ApiVersion::V1beta2,
                metal3_api_version: ApiVersion::V1beta2,
                count_scaled_down_machine_sets: true,
                fail_open_on_lookup_error: true,
                mutate_metal3_machines: false,
                node_reuse_annotation: "example.com/reuse".into(),
                source_template_annotation: "example.com/from".into(),
            }
        );
    }

    #[test]
    fn null_means_default() {
        assert_eq!(
            parse_and_validate(br#"{"capiApiVersion": null}"#),
            Ok(Settings::default())
        );
    }

    #[rstest]
    #[case::unknown_field(json!({"capiVersion": "v1beta2", "alpha": 1}), "Unknown setting(s): alpha, capiVersion. The known settings are: capiApiVersion, controlPlaneApiVersion, metal3ApiVersion, countScaledDownMachineSets, failOpenOnLookupError, mutateMetal3Machines, nodeReuseAnnotation, sourceTemplateAnnotation.")]
    #[case::bad_version(json!({"metal3ApiVersion": "v1alpha5"}), "The setting metal3ApiVersion must be \"v1beta1\" or \"v1beta2\", not \"v1alpha5\".")]
    #[case::bad_bool(json!({"failOpenOnLookupError": "yes"}), "The setting failOpenOnLookupError must be true or false, not \"yes\".")]
    #[case::bad_string(json!({"nodeReuseAnnotation": 3}), "The setting nodeReuseAnnotation must be a string, not 3.")]
    #[case::not_an_object(json!(["v1beta2"]), "The settings must be an object of named settings, not [\"v1beta2\"].")]
    #[case::bad_key_prefix(json!({"nodeReuseAnnotation": "Example.com/reuse"}), "The setting nodeReuseAnnotation is not a valid annotation key (\"Example.com/reuse\"): its prefix must be a lowercase DNS subdomain such as example.com.")]
    #[case::bad_key_name(json!({"sourceTemplateAnnotation": "example.com/-from"}), "The setting sourceTemplateAnnotation is not a valid annotation key (\"example.com/-from\"): its name part must start and end with a letter or digit.")]
    #[case::same_keys(json!({"nodeReuseAnnotation": "a/b", "sourceTemplateAnnotation": "a/b"}), "The settings nodeReuseAnnotation and sourceTemplateAnnotation must name two different annotation keys.")]
    fn invalid_settings_are_explained(#[case] value: Value, #[case] message: &str) {
        assert_eq!(
            parse_and_validate(value.to_string().as_bytes()),
            Err(message.to_string())
        );
    }

    #[test]
    fn settings_that_are_not_json_are_explained() {
        let err = parse_and_validate(b"{capiApiVersion").unwrap_err();
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
        assert_eq!(annotation_key_problem(key), problem);
    }
}
