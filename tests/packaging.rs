//! Packaging drift checks: the files that ship with the policy must agree with each other.
//!
//! - Cargo.toml, metadata.yml and artifacthub-pkg.yml carry the same version.
//! - artifacthub-pkg.yml holds what `kwctl scaffold artifacthub` derives from metadata.yml and
//!   questions-ui.yml.
//! - questions-ui.yml asks for exactly the settings of the README settings table.
//! - Every manifest under examples/ parses, and its ClusterAdmissionPolicies stay within the
//!   rules and contextAwareResources that metadata.yml declares.
//! - examples/rbac.yaml grants get/list/watch on exactly the contextAwareResources.
//! - The release workflow pushes to the OCI repository named in metadata.yml.
//!
//! Run with `cargo test --test packaging`.

use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const ANNOTATION_VERSION: &str = "io.kubewarden.policy.version";
const ANNOTATION_TITLE: &str = "io.kubewarden.policy.title";
const ANNOTATION_DESCRIPTION: &str = "io.kubewarden.policy.description";
const ANNOTATION_OCI_URL: &str = "io.kubewarden.policy.ociUrl";
const ANNOTATION_URL: &str = "io.kubewarden.policy.url";
const ANNOTATION_SOURCE: &str = "io.kubewarden.policy.source";
const ANNOTATION_LICENSE: &str = "io.kubewarden.policy.license";
const ANNOTATION_AUTHOR: &str = "io.kubewarden.policy.author";
const ANNOTATION_DISPLAY_NAME: &str = "io.artifacthub.displayName";
const ANNOTATION_KEYWORDS: &str = "io.artifacthub.keywords";
const ANNOTATION_RESOURCES: &str = "io.artifacthub.resources";
const ANNOTATION_HIDDEN_UI: &str = "io.kubewarden.hidden-ui";

const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

// ---------------------------------------------------------------------------------------------
// Reading files

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every non-empty YAML document of a file, as JSON values.
fn yaml_documents(relative: &str, text: &str) -> Vec<Value> {
    let mut documents = Vec::new();
    for (index, document) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).unwrap_or_else(|e| {
            panic!(
                "{relative}: YAML document #{} does not parse: {e}",
                index + 1
            )
        });
        if !value.is_null() {
            documents.push(value);
        }
    }
    documents
}

fn yaml_file(relative: &str) -> Value {
    let text = read(relative);
    let mut documents = yaml_documents(relative, &text);
    assert_eq!(
        documents.len(),
        1,
        "{relative} must hold exactly one YAML document"
    );
    documents.remove(0)
}

fn yaml_str(relative: &str, text: &str) -> Value {
    yaml_serde::from_str(text).unwrap_or_else(|e| panic!("{relative} does not parse as YAML: {e}"))
}

fn str_at<'a>(value: &'a Value, pointer: &str, what: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}: {pointer} is missing or not a string"))
}

fn seq_at<'a>(value: &'a Value, pointer: &str, what: &str) -> &'a Vec<Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{what}: {pointer} is missing or not a list"))
}

fn strings(value: &Value, what: &str) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what} must be a list of strings"))
        .iter()
        .map(|item| {
            item.as_str()
                .unwrap_or_else(|| panic!("{what} must hold only strings, found {item}"))
                .to_string()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// metadata.yml

struct Metadata {
    raw: Value,
    annotations: BTreeMap<String, String>,
}

impl Metadata {
    fn load() -> Self {
        let raw = yaml_file("metadata.yml");
        let annotations = raw
            .get("annotations")
            .and_then(Value::as_object)
            .expect("metadata.yml has no annotations mapping")
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), text)
            })
            .collect();
        Metadata { raw, annotations }
    }

    fn annotation(&self, key: &str) -> &str {
        self.annotations
            .get(key)
            .unwrap_or_else(|| panic!("metadata.yml has no annotation {key}"))
    }

    fn version(&self) -> &str {
        self.annotation(ANNOTATION_VERSION)
    }

    fn oci_reference(&self) -> String {
        format!(
            "{}:v{}",
            self.annotation(ANNOTATION_OCI_URL),
            self.version()
        )
    }

    fn mutating(&self) -> bool {
        self.raw
            .get("mutating")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn rules(&self) -> Vec<Rule> {
        seq_at(&self.raw, "/rules", "metadata.yml")
            .iter()
            .enumerate()
            .map(|(i, rule)| Rule::parse(rule, &format!("metadata.yml rules[{i}]")))
            .collect()
    }

    fn context_aware_resources(&self) -> BTreeSet<Resource> {
        let list = self
            .raw
            .get("contextAwareResources")
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        resources(&list, "metadata.yml contextAwareResources")
    }
}

/// One admission rule, with every list as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
}

impl Rule {
    fn parse(value: &Value, what: &str) -> Self {
        let field = |key: &str| {
            strings(
                value
                    .get(key)
                    .unwrap_or_else(|| panic!("{what} has no {key}")),
                &format!("{what}.{key}"),
            )
        };
        Rule {
            api_groups: field("apiGroups"),
            api_versions: field("apiVersions"),
            resources: field("resources"),
            operations: field("operations"),
        }
    }

    /// Every (group, version, resource, operation) the rule matches, as written.
    fn tuples(&self) -> Vec<(String, String, String, String)> {
        let mut out = Vec::new();
        for group in &self.api_groups {
            for version in &self.api_versions {
                for resource in &self.resources {
                    for operation in &self.operations {
                        out.push((
                            group.clone(),
                            version.clone(),
                            resource.clone(),
                            operation.clone(),
                        ));
                    }
                }
            }
        }
        out
    }

    fn covers(&self, group: &str, version: &str, resource: &str, operation: &str) -> bool {
        let has = |list: &[String], item: &str| list.iter().any(|x| x == "*" || x == item);
        has(&self.api_groups, group)
            && has(&self.api_versions, version)
            && has(&self.resources, resource)
            && has(&self.operations, operation)
    }
}

/// A context-aware resource: apiVersion and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Resource {
    api_version: String,
    kind: String,
}

impl Resource {
    fn group(&self) -> &str {
        match self.api_version.rsplit_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    fn version(&self) -> &str {
        match self.api_version.rsplit_once('/') {
            Some((_, version)) => version,
            None => &self.api_version,
        }
    }

    /// The lowercase plural resource name RBAC uses for this kind.
    fn plural(&self) -> String {
        plural_of(&self.kind)
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)
    }
}

fn resources(list: &Value, what: &str) -> BTreeSet<Resource> {
    list.as_array()
        .unwrap_or_else(|| panic!("{what} must be a list"))
        .iter()
        .enumerate()
        .map(|(i, item)| Resource {
            api_version: str_at(item, "/apiVersion", &format!("{what}[{i}]")).to_string(),
            kind: str_at(item, "/kind", &format!("{what}[{i}]")).to_string(),
        })
        .collect()
}

/// The plural resource name of a kind the policy reads, from the policy's own catalogue
/// (test_data/catalogue.json, kept in sync with src/catalogue.rs by a unit test): one pluralizer.
fn plural_of(kind: &str) -> String {
    let catalogue: Value = serde_json::from_str(&read("test_data/catalogue.json"))
        .expect("test_data/catalogue.json is JSON");
    catalogue[kind]["plural"]
        .as_str()
        .unwrap_or_else(|| {
            panic!("{kind} is not a kind the policy reads (test_data/catalogue.json)")
        })
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// README settings table and questions-ui.yml

/// The setting names in the first column of the README table whose header contains `| Setting`.
fn readme_settings() -> BTreeSet<String> {
    let path = root().join("README.md");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "README.md cannot be read ({e}). It must hold the settings table, with the header \
             `| Setting | Type | Default | Description |` and one row per setting, the setting \
             name in backticks in the first column."
        )
    });
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|line| line.contains("| Setting"))
        .unwrap_or_else(|| {
            panic!(
                "README.md has no settings table: no line contains `| Setting`. Add the table \
                 with the header `| Setting | Type | Default | Description |` and one row per \
                 setting, the setting name in backticks in the first column."
            )
        });
    let mut names = BTreeSet::new();
    for line in lines[header + 1..]
        .iter()
        .take_while(|line| !line.trim().is_empty())
    {
        let first = line
            .trim()
            .trim_start_matches('|')
            .split('|')
            .next()
            .unwrap_or("")
            .trim();
        let separator = !first.is_empty() && first.chars().all(|c| matches!(c, '-' | ':' | ' '));
        if separator || first.is_empty() {
            continue;
        }
        let name = match (first.find('`'), first.rfind('`')) {
            (Some(start), Some(end)) if end > start => &first[start + 1..end],
            _ => first,
        };
        assert!(
            names.insert(name.to_string()),
            "README.md settings table lists `{name}` twice"
        );
    }
    assert!(
        !names.is_empty(),
        "README.md settings table (after the `| Setting` header) has no rows"
    );
    names
}

fn questions() -> Vec<Value> {
    seq_at(
        &yaml_file("questions-ui.yml"),
        "/questions",
        "questions-ui.yml",
    )
    .clone()
}

fn question_variables() -> BTreeSet<String> {
    let mut variables = BTreeSet::new();
    for (i, question) in questions().iter().enumerate() {
        let variable = str_at(
            question,
            "/variable",
            &format!("questions-ui.yml questions[{i}]"),
        );
        assert!(
            variables.insert(variable.to_string()),
            "questions-ui.yml asks for `{variable}` twice"
        );
    }
    variables
}

#[test]
fn questions_ui_covers_exactly_the_readme_settings() {
    let readme = readme_settings();
    let questions = question_variables();
    let missing: Vec<_> = readme.difference(&questions).collect();
    let extra: Vec<_> = questions.difference(&readme).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "questions-ui.yml and the README settings table disagree. \
         In the README but not in questions-ui.yml: {missing:?}. \
         In questions-ui.yml but not in the README: {extra:?}."
    );
}

#[test]
fn every_question_is_complete() {
    for (i, question) in questions().iter().enumerate() {
        let what = format!("questions-ui.yml questions[{i}]");
        for key in ["variable", "label", "type", "group"] {
            str_at(question, &format!("/{key}"), &what);
        }
        assert!(
            question.get("default").is_some(),
            "{what} ({}) has no default",
            question["variable"]
        );
        if question["type"] == "enum" {
            let options = strings(
                question
                    .get("options")
                    .unwrap_or_else(|| panic!("{what} is an enum without options")),
                &format!("{what}.options"),
            );
            let default = question["default"].as_str().unwrap_or_default();
            assert!(
                options.iter().any(|o| o == default),
                "{what}: the default {default:?} is not one of the options {options:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Versions and artifacthub-pkg.yml

#[test]
fn versions_agree() {
    let metadata = Metadata::load();
    let artifacthub = yaml_file("artifacthub-pkg.yml");
    let cargo = env!("CARGO_PKG_VERSION");
    assert_eq!(
        metadata.version(),
        cargo,
        "metadata.yml {ANNOTATION_VERSION} must equal the Cargo.toml version"
    );
    assert_eq!(
        str_at(&artifacthub, "/version", "artifacthub-pkg.yml"),
        cargo,
        "artifacthub-pkg.yml version must equal the Cargo.toml version"
    );
}

#[test]
fn artifacthub_pkg_is_what_kwctl_scaffold_derives_from_metadata() {
    let metadata = Metadata::load();
    let pkg = yaml_file("artifacthub-pkg.yml");
    let what = "artifacthub-pkg.yml";
    let version = metadata.version();
    let oci = metadata.oci_reference();

    let allowed_keys: BTreeSet<&str> = [
        "version",
        "name",
        "displayName",
        "createdAt",
        "description",
        "license",
        "homeURL",
        "containersImages",
        "keywords",
        "links",
        "install",
        "maintainers",
        "provider",
        "recommendations",
        "annotations",
        "readme",
        "containsSecurityUpdates",
        "prerelease",
        "changes",
    ]
    .into_iter()
    .collect();
    let object = pkg
        .as_object()
        .expect("artifacthub-pkg.yml must be a mapping");
    for key in object.keys() {
        assert!(
            allowed_keys.contains(key.as_str()),
            "{what} has an unexpected top-level key `{key}`"
        );
    }

    let same = |pointer: &str, annotation: &str| {
        assert_eq!(
            str_at(&pkg, pointer, what),
            metadata.annotation(annotation),
            "{what} {pointer} must equal metadata.yml {annotation}"
        );
    };
    same("/name", ANNOTATION_TITLE);
    same("/displayName", ANNOTATION_DISPLAY_NAME);
    same("/description", ANNOTATION_DESCRIPTION);
    same("/license", ANNOTATION_LICENSE);
    same("/homeURL", ANNOTATION_URL);

    let created = str_at(&pkg, "/createdAt", what);
    assert!(
        created.len() >= 20 && created.as_bytes()[4] == b'-' && created.as_bytes()[10] == b'T',
        "{what} createdAt must be an RFC 3339 timestamp, not {created:?}"
    );

    assert_eq!(
        pkg["containersImages"],
        serde_json::json!([{ "name": "policy", "image": oci }]),
        "{what} containersImages must be the one image {oci} (ociUrl and version of metadata.yml)"
    );

    let keywords: Vec<String> = metadata
        .annotation(ANNOTATION_KEYWORDS)
        .split(',')
        .map(|k| k.trim().to_string())
        .collect();
    assert_eq!(
        strings(&pkg["keywords"], &format!("{what} keywords")),
        keywords,
        "{what} keywords must be the comma-separated {ANNOTATION_KEYWORDS} of metadata.yml, in order"
    );

    let source = metadata.annotation(ANNOTATION_SOURCE);
    let mut links = Vec::new();
    if source.starts_with("https://github.com/") {
        links.push(serde_json::json!({
            "name": "policy",
            "url": format!("{source}/releases/download/v{version}/policy.wasm"),
        }));
    }
    links.push(serde_json::json!({ "name": "source", "url": source }));
    assert_eq!(
        pkg["links"],
        Value::Array(links),
        "{what} links must point at the release asset of v{version} and at {ANNOTATION_SOURCE}"
    );

    let install = str_at(&pkg, "/install", what);
    for needle in [
        format!("kwctl pull {oci}"),
        format!("kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{oci}"),
    ] {
        assert!(
            install.contains(&needle),
            "{what} install must contain `{needle}`"
        );
    }

    assert_eq!(
        pkg["provider"],
        serde_json::json!({ "name": "kubewarden" }),
        "{what} provider must be kubewarden"
    );
    assert_eq!(
        pkg["recommendations"],
        serde_json::json!([{
            "url": "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller"
        }]),
        "{what} recommendations must be the kubewarden-controller chart"
    );

    // No author annotation: kwctl scaffold writes no maintainers.
    match author_entries(
        metadata
            .annotations
            .get(ANNOTATION_AUTHOR)
            .map_or("", String::as_str),
    ) {
        Ok(maintainers) => {
            let expected: Vec<Value> = maintainers
                .into_iter()
                .map(|(name, email)| serde_json::json!({ "name": name, "email": email }))
                .collect();
            assert_eq!(
                pkg["maintainers"],
                Value::Array(expected),
                "{what} maintainers must be the `Name <email>` entries of {ANNOTATION_AUTHOR}"
            );
        }
        Err(_) => assert!(
            pkg.get("maintainers").is_none(),
            "{what} lists maintainers, but {ANNOTATION_AUTHOR} of metadata.yml has no \
             `Name <email>` entries to derive them from"
        ),
    }

    check_artifacthub_annotations(&metadata, &pkg);
}

fn check_artifacthub_annotations(metadata: &Metadata, pkg: &Value) {
    let what = "artifacthub-pkg.yml annotations";
    let annotations = pkg
        .get("annotations")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("{what} are missing"));

    let mut expected_keys: BTreeSet<&str> = ["kubewarden/mutation", "kubewarden/rules"]
        .into_iter()
        .collect();
    if !metadata.context_aware_resources().is_empty() {
        expected_keys.insert("kubewarden/contextAwareResources");
    }
    if root().join("questions-ui.yml").exists() {
        expected_keys.insert("kubewarden/questions-ui");
    }
    if metadata.annotations.contains_key(ANNOTATION_RESOURCES) {
        expected_keys.insert("kubewarden/resources");
    }
    if metadata.annotations.contains_key(ANNOTATION_HIDDEN_UI) {
        expected_keys.insert("kubewarden/hidden-ui");
    }
    let actual_keys: BTreeSet<&str> = annotations.keys().map(String::as_str).collect();
    assert_eq!(
        actual_keys, expected_keys,
        "{what} must hold exactly the keys kwctl scaffold derives from metadata.yml and questions-ui.yml"
    );

    let text = |key: &str| {
        annotations[key]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {key} must be a string"))
    };

    assert_eq!(
        text("kubewarden/mutation"),
        metadata.mutating().to_string(),
        "{what}: kubewarden/mutation must be the `mutating` of metadata.yml as a string"
    );

    let rules_value = yaml_str("kubewarden/rules", text("kubewarden/rules"));
    let rules: Vec<Rule> = rules_value
        .as_array()
        .unwrap_or_else(|| panic!("{what}: kubewarden/rules must hold a YAML list"))
        .iter()
        .enumerate()
        .map(|(i, r)| Rule::parse(r, &format!("kubewarden/rules[{i}]")))
        .collect();
    assert_eq!(
        rules,
        metadata.rules(),
        "{what}: kubewarden/rules must hold the rules of metadata.yml, in order"
    );

    if expected_keys.contains("kubewarden/contextAwareResources") {
        let listed = yaml_str(
            "kubewarden/contextAwareResources",
            text("kubewarden/contextAwareResources"),
        );
        assert_eq!(
            resources(&listed, "kubewarden/contextAwareResources"),
            metadata.context_aware_resources(),
            "{what}: kubewarden/contextAwareResources must list the contextAwareResources of metadata.yml"
        );
    }

    if expected_keys.contains("kubewarden/questions-ui") {
        assert_eq!(
            text("kubewarden/questions-ui"),
            read("questions-ui.yml"),
            "{what}: kubewarden/questions-ui must be the content of questions-ui.yml, byte for byte"
        );
    }

    if expected_keys.contains("kubewarden/resources") {
        assert_eq!(
            text("kubewarden/resources"),
            metadata.annotation(ANNOTATION_RESOURCES),
            "{what}: kubewarden/resources must equal {ANNOTATION_RESOURCES} of metadata.yml"
        );
    }
}

/// `Name <email>, Other <email>` as kwctl reads io.kubewarden.policy.author; the entries that
/// are not in that form are returned as the error.
fn author_entries(author: &str) -> Result<Vec<(String, String)>, Vec<String>> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for entry in author.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match (entry.find('<'), entry.rfind('>')) {
            (Some(open), Some(close))
                if close == entry.len() - 1 && entry[open + 1..close].contains('@') =>
            {
                good.push((
                    entry[..open].trim().to_string(),
                    entry[open + 1..close].trim().to_string(),
                ));
            }
            _ => bad.push(entry.to_string()),
        }
    }
    if bad.is_empty() && !good.is_empty() {
        Ok(good)
    } else {
        Err(bad)
    }
}

/// The release workflow regenerates artifacthub-pkg.yml with `kwctl scaffold artifacthub`, which
/// stops with "malformed email" unless every author entry is `Name <email>`. The annotation is
/// optional.
#[test]
fn author_annotation_is_accepted_by_kwctl_scaffold() {
    let metadata = Metadata::load();
    let Some(author) = metadata.annotations.get(ANNOTATION_AUTHOR) else {
        return;
    };
    if let Err(bad) = author_entries(author) {
        panic!(
            "metadata.yml {ANNOTATION_AUTHOR} must be a comma-separated list of `Name <email>`; \
             `kwctl scaffold artifacthub` (run by the release workflow) rejects {bad:?}"
        );
    }
}

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
    let known_settings = question_variables();
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

// ---------------------------------------------------------------------------------------------
// examples/rbac.yaml

#[test]
fn rbac_grants_read_access_to_exactly_the_context_aware_resources() {
    let metadata = Metadata::load();
    let what = "examples/rbac.yaml";
    let documents = yaml_documents(what, &read(what));

    let expected: BTreeSet<(String, String)> = metadata
        .context_aware_resources()
        .iter()
        .map(|r| (r.group().to_string(), r.plural()))
        .collect();

    let roles: Vec<&Value> = documents
        .iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("ClusterRole" | "Role")))
        .collect();
    assert!(!roles.is_empty(), "{what} holds no ClusterRole");

    let read_verbs: BTreeSet<String> = READ_VERBS.iter().map(|v| v.to_string()).collect();
    let mut granted = BTreeSet::new();
    for role in &roles {
        let role_name = role["metadata"]["name"].as_str().unwrap_or("?");
        assert_eq!(
            role["kind"], "ClusterRole",
            "{what}: {role_name} must be a ClusterRole (the policy reads every namespace)"
        );
        for (i, rule) in seq_at(role, "/rules", what).iter().enumerate() {
            let where_ = format!("{what}: ClusterRole {role_name} rules[{i}]");
            for key in ["resourceNames", "nonResourceURLs"] {
                assert!(
                    rule.get(key).is_none(),
                    "{where_} must not use {key}: the policy lists whole kinds"
                );
            }
            let verbs: BTreeSet<String> = strings(&rule["verbs"], &format!("{where_}.verbs"))
                .into_iter()
                .collect();
            assert_eq!(
                verbs, read_verbs,
                "{where_} must grant exactly get, list and watch"
            );
            for group in strings(&rule["apiGroups"], &format!("{where_}.apiGroups")) {
                for resource in strings(&rule["resources"], &format!("{where_}.resources")) {
                    granted.insert((group.clone(), resource));
                }
            }
        }
    }

    let missing: Vec<_> = expected.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what} must grant read access to exactly the contextAwareResources of metadata.yml. \
         Missing (group, resource): {missing:?}. Not needed: {extra:?}."
    );

    let role_names: BTreeSet<&str> = roles
        .iter()
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    let bindings: Vec<&Value> = documents
        .iter()
        .filter(|d| d["kind"] == "ClusterRoleBinding")
        .collect();
    assert!(
        bindings.iter().any(|b| {
            b["roleRef"]["kind"] == "ClusterRole"
                && b["roleRef"]["name"]
                    .as_str()
                    .is_some_and(|n| role_names.contains(n))
                && b["subjects"].as_array().is_some_and(|subjects| {
                    subjects.iter().any(|s| {
                        s["kind"] == "ServiceAccount"
                            && s["name"].as_str().is_some_and(|n| !n.is_empty())
                            && s["namespace"].as_str().is_some_and(|n| !n.is_empty())
                    })
                })
        }),
        "{what} must bind its ClusterRole to a ServiceAccount (name and namespace) with a \
         ClusterRoleBinding"
    );
}

#[test]
fn every_context_aware_resource_is_a_kind_of_the_catalogue() {
    for resource in Metadata::load().context_aware_resources() {
        assert!(!plural_of(&resource.kind).is_empty(), "{resource}");
    }
}

// ---------------------------------------------------------------------------------------------
// Release workflow

#[test]
fn release_workflow_pushes_to_the_metadata_oci_url() {
    let metadata = Metadata::load();
    let what = ".github/workflows/release.yml";
    let workflow = yaml_file(what);
    let jobs = workflow["jobs"]
        .as_object()
        .unwrap_or_else(|| panic!("{what} has no jobs"));
    let targets: Vec<&str> = jobs
        .values()
        .filter_map(|job| job.pointer("/with/oci-target").and_then(Value::as_str))
        .collect();
    assert_eq!(
        targets,
        vec![metadata.annotation(ANNOTATION_OCI_URL)],
        "{what} must release to the {ANNOTATION_OCI_URL} of metadata.yml, once"
    );
}
