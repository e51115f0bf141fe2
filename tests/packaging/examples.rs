//! Every example manifest parses, and its policies stay within metadata.yml.

use super::*;

// ---------------------------------------------------------------------------------------------
// examples/

/// Every YAML manifest under examples/, subdirectories (the PolicyServer component) included;
/// not examples/sylva/, which holds a values file of the sylva-units chart.
fn example_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        if dir.ends_with("examples/sylva") {
            return;
        }
        let entries =
            fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("unreadable directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            ) {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("examples"), &mut files);
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
    let metadata = PolicyMetadata::load();
    let metadata_rules = metadata.rules();
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

        for setting in [
            "capiApiVersion",
            "controlPlaneApiVersion",
            "metal3ApiVersion",
        ] {
            let value = settings
                .get(setting)
                .and_then(Value::as_str)
                .unwrap_or("auto");
            assert_eq!(
                value, "auto",
                "{what}: the examples pin no version ({setting}: {value}); docs/design.md says when to"
            );
        }
    }
}

/// The mutation must never block: an evaluation stopped at timeoutEvalSeconds is a 500 refusal
/// that failurePolicy: Ignore does not cover, so it may not come before the webhook's timeout.
#[test]
fn the_mutation_never_refuses_on_its_evaluation_timeout() {
    let mut mutations = 0;
    for (file, policy) in admission_policies() {
        let spec = &policy["spec"];
        if spec["mutating"] != true {
            continue;
        }
        mutations += 1;
        let what = policy_label(&file, &policy);
        assert_eq!(spec["failurePolicy"], "Ignore", "{what}: failurePolicy");
        let eval = spec["timeoutEvalSeconds"].as_u64();
        let webhook = spec["timeoutSeconds"].as_u64();
        assert!(
            eval.is_some() && eval == webhook,
            "{what}: timeoutEvalSeconds ({eval:?}) must equal timeoutSeconds ({webhook:?})"
        );
    }
    assert!(mutations > 0, "no mutating example policy");
}

// ---------------------------------------------------------------------------------------------
// Kustomizations

/// The resources and components a kustomization file names, relative to the repository root.
fn kustomization_entries(relative: &str) -> (Value, Vec<String>) {
    let document = yaml_file(relative);
    let base = Path::new(relative)
        .parent()
        .expect("a kustomization has a directory");
    let mut entries = Vec::new();
    for key in ["resources", "components"] {
        if let Some(list) = document.get(key) {
            for entry in strings(list, &format!("{relative} {key}")) {
                let path = base.join(&entry);
                assert!(
                    root().join(&path).exists(),
                    "{relative}: {key} names {entry}, which does not exist"
                );
                entries.push(path.display().to_string());
            }
        }
    }
    (document, entries)
}

#[test]
fn the_kustomization_installs_rbac_and_both_policies() {
    let (document, entries) = kustomization_entries("examples/kustomization.yaml");
    assert_eq!(document["kind"], "Kustomization");
    assert_eq!(
        entries,
        vec![
            "examples/placement",
            "examples/rbac.yaml",
            "examples/guard",
            "examples/cluster-admission-policy-mutate.yaml",
            "examples/placement/follow",
        ],
        "examples/kustomization.yaml must install the placement, the RBAC, then both policies, \
         nothing optional (the PolicyServer is a component), and end with placement/follow"
    );
}

/// The optional PolicyServer: two replicas, minAvailable 1 (the Kubewarden controller makes the
/// PodDisruptionBudget of it), and its own account, which may create SubjectAccessReviews (the
/// guards' can_i). That the policies run on it and the reader role is bound to its account, in
/// every combination of the components, is checked on kustomize's output (placement.rs).
#[test]
fn the_policy_server_component_is_highly_available_with_its_own_account() {
    let (component, entries) = kustomization_entries("examples/policy-server/kustomization.yaml");
    assert_eq!(component["kind"], "Component");
    let documents: Vec<Value> = entries
        .iter()
        .filter(|file| file.ends_with(".yaml"))
        .flat_map(|file| yaml_documents(file, &read(file)))
        .collect();
    let server = documents
        .iter()
        .find(|d| d["kind"] == "PolicyServer")
        .expect("the component creates a PolicyServer");
    assert!(server["spec"]["replicas"].as_u64() >= Some(2), "replicas");
    assert_eq!(server["spec"]["minAvailable"], 1, "minAvailable");
    let review = documents
        .iter()
        .find(|d| {
            d["kind"] == "ClusterRole"
                && d["rules"].as_array().is_some_and(|rules| {
                    rules.iter().any(|r| {
                        r["resources"] == serde_json::json!(["subjectaccessreviews"])
                            && r["verbs"] == serde_json::json!(["create"])
                    })
                })
        })
        .expect("the component must let its account create SubjectAccessReviews");
    let review_name = str_at(review, "/metadata/name", "the ClusterRole");
    assert!(
        documents
            .iter()
            .any(|d| d["kind"] == "ClusterRoleBinding" && d["roleRef"]["name"] == review_name),
        "the SubjectAccessReview role must be bound"
    );
}

// ---------------------------------------------------------------------------------------------
// Rules: what the shipped files guard

/// (group, plural) of every DELETE rule.
fn guarded_plurals(rules: &Value, what: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (i, rule) in rules.as_array().unwrap_or(&Vec::new()).iter().enumerate() {
        let rule = Rule::parse(rule, &format!("{what} rules[{i}]"));
        for (group, _, resource, operation) in rule.tuples() {
            if operation == "DELETE" {
                out.insert((group, resource));
            }
        }
    }
    out
}

/// The DELETE rules are written from the provider table (`make manifests`), never by hand: in
/// metadata.yml and every example, a line that names the DELETE operation sits inside a
/// generated block (xtask/src/manifests.rs), comments and PromQL aside.
#[test]
fn no_delete_rule_sits_outside_a_generated_block() {
    let mut files = vec!["metadata.yml".to_string()];
    files.extend(example_files().iter().map(|p| relative(p)));
    let mut blocks = 0;
    for file in &files {
        let mut inside = false;
        for (number, line) in read(file).lines().enumerate() {
            let text = line.trim_start();
            if text.starts_with("# BEGIN generated:") {
                inside = true;
                blocks += 1;
            } else if text.starts_with("# END generated:") {
                inside = false;
            } else if !inside && !text.starts_with('#') && text.contains("operations:") {
                assert!(
                    !text.contains("DELETE"),
                    "{file}:{}: a DELETE rule outside a generated block: {text}",
                    number + 1
                );
            }
        }
    }
    assert!(blocks > 0, "no generated block found");
}

/// Every provider the README promises is among metadata.yml's DELETE rules.
#[test]
fn the_promised_providers_are_guarded() {
    let metadata = yaml_file("metadata.yml");
    let from_metadata = guarded_plurals(&metadata["rules"], "metadata.yml");
    for plural in [
        "metal3machinetemplates",
        "metal3clustertemplates",
        "metal3datatemplates",
        "openstackmachinetemplates",
        "vspheremachinetemplates",
        "dockermachinetemplates",
        "dockermachinepooltemplates",
        "awsmachinetemplates",
        "azuremachinetemplates",
        "azuremanagedcontrolplanetemplates",
        "gcpmachinetemplates",
        "hcloudmachinetemplates",
        "proxmoxmachinetemplates",
        "nutanixmachinetemplates",
        "ibmvpcmachinetemplates",
        "ocimachinetemplates",
        "kubevirtmachinetemplates",
        "byomachinetemplates",
        "cloudstackmachinetemplates",
        "oscmachinetemplates",
        "tinkerbellmachinetemplates",
        "maasmachinetemplates",
        "linodemachinetemplates",
        "domachinetemplates",
        "kubeadmconfigtemplates",
        "rke2configtemplates",
        "talosconfigtemplates",
        "k0sworkerconfigtemplates",
        "microk8sconfigtemplates",
        "eksconfigtemplates",
        "kubeadmcontrolplanetemplates",
        "rke2controlplanetemplates",
        "k0smotroncontrolplanetemplates",
    ] {
        assert!(
            from_metadata.iter().any(|(_, p)| p == plural),
            "{plural} is not guarded"
        );
    }
}

/// The guard (failurePolicy: Fail) leaves the first lists of a namespace room above the default
/// 2 s evaluation budget and below the webhook's own timeout, so the user reads the policy's
/// answer, not a webhook timeout (the mutation's side is the test above).
#[test]
fn the_guard_gives_the_first_lists_room() {
    let mut guards = 0;
    for (file, policy) in admission_policies() {
        let spec = &policy["spec"];
        if spec["mutating"] == true {
            continue;
        }
        guards += 1;
        let what = policy_label(&file, &policy);
        assert_eq!(spec["failurePolicy"], "Fail", "{what}: failurePolicy");
        let eval = spec["timeoutEvalSeconds"].as_u64().unwrap_or(2);
        let webhook = spec["timeoutSeconds"].as_u64().unwrap_or(10);
        assert!(
            eval > 2 && eval < webhook,
            "{what}: timeoutEvalSeconds {eval}, timeoutSeconds {webhook}"
        );
    }
    assert!(guards > 0, "no guard example policy");
}
