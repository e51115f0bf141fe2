//! The sources table (`template_cleanup_core::sources::SOURCES`) against what ships: the job's
//! ClusterRole (examples/cleanup/component) grants every row read in every pass, the Helm component
//! (examples/cleanup/helm) grants the rows read with `--helm-releases` and passes the flag, and
//! docs/cleanup.md's RBAC table has a row for each. A new source without its RBAC or its docs
//! fails here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;
use template_cleanup_core::sources::{discovery_groups, When, SOURCES};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const COMPONENT: &str = "examples/cleanup/component/cleanup.yaml";
const HELM: &str = "examples/cleanup/helm/kustomization.yaml";
const DOCS: &str = "docs/cleanup.md";

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn documents(path: &str, text: &str) -> Vec<Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

type Grants = BTreeMap<(String, String), BTreeSet<String>>;

/// (group, resource) -> verbs of `rules`, leaving out rules by resource name (the pre-flight's).
fn grants<'a>(rules: impl IntoIterator<Item = &'a Value>) -> Grants {
    let mut out = Grants::new();
    for rule in rules {
        if rule.get("resourceNames").is_some() {
            continue;
        }
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                out.entry((group.clone(), resource))
                    .or_default()
                    .extend(strings(&rule["verbs"]));
            }
        }
    }
    out
}

/// The grants on the sources' groups (and the core group): the rest is the pre-flight's, the
/// probe's and the templates'.
fn on_source_groups(grants: Grants) -> Grants {
    let groups: BTreeSet<&str> = SOURCES.iter().map(|s| s.group).collect();
    grants
        .into_iter()
        .filter(|((group, _), _)| groups.contains(group.as_str()))
        .collect()
}

fn expected(when: When) -> Grants {
    SOURCES
        .iter()
        .filter(|s| s.when == when)
        .map(|s| {
            (
                (s.group.to_string(), s.plural.to_string()),
                s.verbs.iter().map(|v| v.to_string()).collect(),
            )
        })
        .collect()
}

/// The Helm component's JSON patches, by the kind of their target.
fn helm_patches() -> BTreeMap<String, Vec<Value>> {
    let component = &documents(HELM, &read(HELM))[0];
    assert_eq!(component["kind"], "Component", "{HELM}");
    let mut out = BTreeMap::new();
    for patch in component["patches"]
        .as_array()
        .expect("the component has patches")
    {
        let kind = patch["target"]["kind"].as_str().unwrap_or("").to_string();
        let text = patch["patch"].as_str().expect("an inline patch");
        let ops: Vec<Value> = yaml_serde::from_str(text).unwrap_or_else(|e| panic!("{HELM}: {e}"));
        out.insert(kind, ops);
    }
    out
}

/// The job's ClusterRole grants nothing else on the sources' groups than the generated rules.
#[test]
fn the_jobs_cluster_role_grants_the_sources_read_in_every_pass_and_no_other() {
    let role = documents(COMPONENT, &read(COMPONENT))
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole")
        .expect("the component has a ClusterRole");
    let rules = role["rules"].as_array().expect("rules");
    assert_eq!(
        on_source_groups(grants(rules)),
        expected(When::Always),
        "{COMPONENT}: the ClusterRole's rules on the sources' groups must be the rows of template-cleanup/core/src/sources.rs read in every pass"
    );
}

#[test]
fn the_helm_component_adds_rules_and_passes_the_flag() {
    let patches = helm_patches();
    let role = &patches["ClusterRole"];
    assert!(
        role.iter()
            .all(|op| op["op"] == "add" && op["path"] == "/rules/-"),
        "{HELM}: the ClusterRole patch only adds rules"
    );
    assert_eq!(
        patches["CronJob"],
        [
            serde_json::json!({"op": "add", "path": "/spec/jobTemplate/spec/template/spec/containers/0/args/-", "value": "--helm-releases"})
        ],
        "{HELM}: the component adds --helm-releases and nothing else to the CronJob"
    );
    assert_eq!(
        patches.len(),
        2,
        "{HELM}: patches of the ClusterRole and the CronJob only"
    );
}

/// The standalone kustomization offers the Helm component in one line.
#[test]
fn the_standalone_kustomization_offers_the_helm_component_in_one_line() {
    let text = read("examples/cleanup/kustomization.yaml");
    assert!(
        text.lines().any(|l| l.trim() == "# - helm"),
        "examples/cleanup/kustomization.yaml: a `# - helm` line to uncomment"
    );
}

/// docs/cleanup.md's table of sources: one row per source, naming its group and its verbs.
#[test]
fn the_docs_rbac_table_has_a_row_per_source() {
    let docs = read(DOCS);
    let table: Vec<&str> = docs
        .split("## Desired-state sources and their RBAC")
        .nth(1)
        .expect("docs/cleanup.md has the sources section")
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    for source in SOURCES {
        let group = if source.group.is_empty() {
            "core".to_string()
        } else {
            format!("`{}`", source.group)
        };
        let row = table
            .iter()
            .find(|row| row.starts_with(&format!("| {} (", source.name)))
            .unwrap_or_else(|| panic!("{DOCS}: no row for {}", source.name));
        let rbac = row.rsplit('|').nth(1).unwrap_or("");
        assert!(
            row.contains(&group),
            "{DOCS}: {} names {group}",
            source.name
        );
        for verb in source.verbs {
            assert!(
                rbac.contains(&format!("`{verb}`")) && rbac.contains(source.plural),
                "{DOCS}: the RBAC of {} says `{verb}` {}",
                source.name,
                source.plural
            );
        }
    }
    assert_eq!(
        table.len(),
        SOURCES.len() + 2,
        "{DOCS}: header, rule, one row per source"
    );
}

#[test]
fn discovery_looks_into_every_group_of_the_table_but_the_core_one() {
    let groups = discovery_groups();
    let expected: Vec<String> = SOURCES
        .iter()
        .filter(|s| !s.group.is_empty())
        .map(|s| s.group.to_string())
        .collect();
    assert_eq!(groups, expected);
}
