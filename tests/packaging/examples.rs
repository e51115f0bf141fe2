//! Every example manifest parses, and its policies stay within metadata.yml.

use super::*;

// ---------------------------------------------------------------------------------------------
// examples/

fn example_files() -> Vec<PathBuf> {
    let dir = root().join("examples");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("unreadable directory entry").path())
        .filter(|path| {
            matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            )
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "examples/ holds no YAML manifest");
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every document of every manifest under examples/, with the file it came from.
fn example_documents() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for path in example_files() {
        let name = relative(&path);
        let text = fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        for document in yaml_documents(&name, &text) {
            out.push((name.clone(), document));
        }
    }
    out
}

fn admission_policies() -> Vec<(String, Value)> {
    let policies: Vec<(String, Value)> = example_documents()
        .into_iter()
        .filter(|(_, doc)| {
            doc["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("policies.kubewarden.io/"))
                && matches!(
                    doc["kind"].as_str(),
                    Some("ClusterAdmissionPolicy" | "AdmissionPolicy")
                )
        })
        .collect();
    assert!(
        !policies.is_empty(),
        "examples/ holds no ClusterAdmissionPolicy"
    );
    policies
}

fn policy_label(file: &str, policy: &Value) -> String {
    format!(
        "{file}: {} {}",
        policy["kind"].as_str().unwrap_or("?"),
        policy["metadata"]["name"].as_str().unwrap_or("?")
    )
}

#[test]
fn every_example_manifest_is_a_kubernetes_object() {
    for (file, doc) in example_documents() {
        let what = format!("{file}: a document");
        let api_version = str_at(&doc, "/apiVersion", &what);
        let kind = str_at(&doc, "/kind", &what);
        let name = str_at(&doc, "/metadata/name", &format!("{file}: {kind}"));
        assert!(
            !api_version.is_empty() && !kind.is_empty() && !name.is_empty(),
            "{file}: apiVersion, kind and metadata.name must not be empty"
        );
        assert!(
            name.len() <= 253
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'),
            "{file}: {kind} name {name:?} is not a valid Kubernetes object name"
        );
    }
}

#[test]
fn example_policies_stay_within_metadata() {
    let metadata = Metadata::load();
    let metadata_rules = metadata.rules();
    let metadata_resources = metadata.context_aware_resources();
    let known_settings = readme::question_variables();
    let module = format!("registry://{}", metadata.oci_reference());

    for (file, policy) in admission_policies() {
        let what = policy_label(&file, &policy);
        let spec = &policy["spec"];

        assert_eq!(
            str_at(&policy, "/spec/module", &what),
            module,
            "{what}: spec.module must be the OCI reference of metadata.yml"
        );

        let mutating = spec["mutating"]
            .as_bool()
            .unwrap_or_else(|| panic!("{what}: spec.mutating must be set to true or false"));
        assert!(
            !mutating || metadata.mutating(),
            "{what} is mutating, but metadata.yml says the policy is not"
        );

        for (i, rule) in seq_at(&policy, "/spec/rules", &what).iter().enumerate() {
            let rule = Rule::parse(rule, &format!("{what} rules[{i}]"));
            for (group, version, resource, operation) in rule.tuples() {
                assert!(
                    metadata_rules
                        .iter()
                        .any(|m| m.covers(&group, &version, &resource, &operation)),
                    "{what}: rules[{i}] matches {operation} of {resource} in group {group:?} \
                     version {version:?}, which no rule of metadata.yml covers"
                );
            }
        }

        let listed = resources(
            spec.get("contextAwareResources")
                .unwrap_or(&Value::Array(Vec::new())),
            &format!("{what} contextAwareResources"),
        );
        let unknown: Vec<String> = listed
            .difference(&metadata_resources)
            .map(ToString::to_string)
            .collect();
        assert!(
            unknown.is_empty(),
            "{what}: contextAwareResources {unknown:?} are not in metadata.yml contextAwareResources"
        );

        let settings = spec
            .get("settings")
            .cloned()
            .unwrap_or(Value::Object(Default::default()));
        let settings = settings
            .as_object()
            .unwrap_or_else(|| panic!("{what}: spec.settings must be a mapping"));
        for key in settings.keys() {
            assert!(
                known_settings.contains(key),
                "{what}: spec.settings.{key} is not a setting of the policy (the policy rejects \
                 unknown settings); known: {known_settings:?}"
            );
        }

        // The policy reads each group at the version its setting names (`auto`, the default:
        // v1beta2, then v1beta1), and may only read what contextAwareResources lists at that
        // exact apiVersion: with `auto` a kind must be listed at both versions.
        for resource in &listed {
            let setting = match resource.group() {
                "cluster.x-k8s.io" => "capiApiVersion",
                "controlplane.cluster.x-k8s.io" => "controlPlaneApiVersion",
                "infrastructure.cluster.x-k8s.io" => "metal3ApiVersion",
                _ => continue,
            };
            let configured = settings
                .get(setting)
                .and_then(Value::as_str)
                .unwrap_or("auto");
            if configured == "auto" {
                let other = if resource.version() == "v1beta1" {
                    "v1beta2"
                } else {
                    "v1beta1"
                };
                assert!(
                    listed.iter().any(|r| r.group() == resource.group()
                        && r.kind == resource.kind
                        && r.version() == other),
                    "{what}: contextAwareResources lists {resource} but not its {other} version, \
                     which {setting}: auto reads where v1beta2 is not served"
                );
            } else {
                assert_eq!(
                    resource.version(),
                    configured,
                    "{what}: contextAwareResources lists {resource}, but the setting {setting} \
                     makes the policy read that group at {configured}"
                );
            }
        }
    }
}
