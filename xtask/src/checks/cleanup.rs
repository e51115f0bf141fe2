//! template-cleanup's tables against what ships and what docs/cleanup.md says: the pre-flight's
//! checks (`template_cleanup_core::preflight::Check`), the condition that selects its DELETEs, and
//! the sources table (`template_cleanup_core::sources::SOURCES`): the job's ClusterRole
//! (examples/cleanup/component) grants every row read in every pass, the Helm component
//! (examples/cleanup/helm) grants the rows read with `--helm-releases` and passes the flag, and
//! docs/cleanup.md's RBAC table has a row for each. A new source without its RBAC or its docs
//! fails here. The rules themselves are written by `cargo xtask gen` (xtask/src/manifests.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};
use template_cleanup_core::preflight::{
    Check, SELECTS_THE_CLEANUP, selected_by_the_cleanup_condition,
};
use template_cleanup_core::sources::{SOURCES, When};

use super::{documents, read};

const COMPONENT: &str = "examples/cleanup/component/cleanup.yaml";
const HELM: &str = "examples/cleanup/helm/kustomization.yaml";
const DOCS: &str = "docs/cleanup.md";

/// docs/cleanup.md names every pre-flight check, and no other: a bullet of its pre-flight list
/// opens with the check's name, and the caller's check (step 1) is named as `check `...``.
pub fn the_docs_list_every_check(root: &Path) {
    let docs = read(root, DOCS);
    let start = docs
        .find("**Pre-flight.**")
        .expect("docs/cleanup.md has a pre-flight section");
    let end = start
        + docs[start..]
            .find("Fields and defaults")
            .expect("the section ends");
    let listed = docs[start..end]
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name));
    let named = docs
        .split("check `")
        .skip(1)
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name));
    let mut documented: Vec<&str> = listed.chain(named).collect();
    documented.sort_unstable();
    documented.dedup();
    let mut checks: Vec<&str> = Check::ALL.iter().map(|c| c.name()).collect();
    checks.sort_unstable();
    assert_eq!(documented, checks, "{DOCS}: the pre-flight's checks");
}

/// A one-document YAML text as JSON.
fn yaml_value(text: &str) -> Value {
    yaml_serde::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The shipped template-cleanup policy carries exactly the condition the pre-flight accepts, and
/// the main guard, once examples/cleanup/component adds it, a condition that skips one account
/// only, which that condition selects: every template DELETE is judged by at least one of them,
/// template-cleanup's by its own.
/// The clean-up's policy is the main guard patched (examples/cleanup/guard/kustomization.yaml):
/// the condition is read from that patch; tests/packaging/placement.rs builds it with kustomize
/// and checks that nothing else differs.
pub fn the_shipped_policies_carry_the_cleanups_condition(root: &Path) {
    let read = |path: &str| yaml_value(&read(root, path));
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let kustomization = read("examples/cleanup/guard/kustomization.yaml");
    let ops: Value = yaml_value(
        kustomization["patches"][0]["patch"]
            .as_str()
            .expect("the clean-up guard is one patch of the main guard"),
    );
    let op = |path: &str| {
        ops.as_array()
            .expect("the patch is a list of operations")
            .iter()
            .find(|op| op["path"] == path)
            .unwrap_or_else(|| panic!("the patch sets {path}"))["value"]
            .clone()
    };
    assert_eq!(op("/metadata/name"), "capi-template-guard-cleanup");
    assert_eq!(op("/spec/mode"), "protect");
    let conditions = op("/spec/matchConditions");
    let conditions = conditions.as_array().expect("matchConditions is a list");
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    assert_eq!(conditions[0]["name"], SELECTS_THE_CLEANUP.0);
    assert_eq!(
        squash(conditions[0]["expression"].as_str().unwrap_or_default()),
        SELECTS_THE_CLEANUP.1
    );
    let main = read("examples/guard/cluster-admission-policy-guard.yaml");
    assert_eq!(
        main["spec"]["matchConditions"],
        json!([]),
        "the main guard exempts no one unless a component says so"
    );
    let component = read("examples/cleanup/component/kustomization.yaml");
    let exclusion = component["patches"]
        .as_array()
        .expect("the component has patches")
        .iter()
        .filter_map(|p| p["patch"].as_str())
        .flat_map(|patch| yaml_value(patch).as_array().cloned().unwrap_or_default())
        .find(|op| op["value"]["name"] == "not-capi-template-cleanup")
        .expect("the component leaves template-cleanup's DELETEs to its own policy");
    assert_eq!(exclusion["path"], "/spec/matchConditions/-");
    let expression = squash(
        exclusion["value"]["expression"]
            .as_str()
            .unwrap_or_default(),
    );
    let account = expression
        .strip_prefix("request.userInfo.username != '")
        .and_then(|rest| rest.strip_suffix('\''))
        .unwrap_or_else(|| panic!("one account skipped: {expression}"));
    assert!(
        selected_by_the_cleanup_condition(account),
        "{account} is judged by template-cleanup's policy"
    );
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

/// The job's ClusterRole grants nothing else on the sources' groups than the generated rules.
pub fn the_jobs_cluster_role_grants_the_sources_read_in_every_pass_and_no_other(root: &Path) {
    let role = documents(COMPONENT, &read(root, COMPONENT))
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

/// The Helm component's JSON patches, by the kind of their target.
fn helm_patches(root: &Path) -> BTreeMap<String, Vec<Value>> {
    let component = &documents(HELM, &read(root, HELM))[0];
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

pub fn the_helm_component_adds_rules_and_passes_the_flag(root: &Path) {
    let patches = helm_patches(root);
    let role = &patches["ClusterRole"];
    assert!(
        role.iter()
            .all(|op| op["op"] == "add" && op["path"] == "/rules/-"),
        "{HELM}: the ClusterRole patch only adds rules"
    );
    assert_eq!(
        patches["CronJob"],
        [
            json!({"op": "add", "path": "/spec/jobTemplate/spec/template/spec/containers/0/args/-", "value": "--helm-releases"})
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
pub fn the_standalone_kustomization_offers_the_helm_component_in_one_line(root: &Path) {
    let text = read(root, "examples/cleanup/kustomization.yaml");
    assert!(
        text.lines().any(|l| l.trim() == "# - helm"),
        "examples/cleanup/kustomization.yaml: a `# - helm` line to uncomment"
    );
}

/// docs/cleanup.md's table of sources: one row per source, naming its group and its verbs.
pub fn the_docs_rbac_table_has_a_row_per_source(root: &Path) {
    let docs = read(root, DOCS);
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
