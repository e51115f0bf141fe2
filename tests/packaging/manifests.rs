//! The shipped manifests written from the guard's own tables: the provider table
//! (`guard::catalogue::PROVIDERS`) gives the DELETE rules, the catalogue's readable kinds
//! (`guard::catalogue::resources_read`) the contextAwareResources and the reader's RBAC.
//!
//! Each generated part of a file sits between two marker lines,
//! `# BEGIN generated: NAME (make manifests)` and `# END generated: NAME`. A test fails when a
//! part is stale; `make manifests` (MANIFESTS_WRITE=1) rewrites it. Everything outside the markers
//! is written by hand.

use std::collections::BTreeMap;

use guard::catalogue::{resources_read, CRD, PROVIDERS, REFERRERS};

use super::{read, root};

/// One rule per group of the provider table, plurals sorted, at `indent`; `tail` closes each
/// rule (its operations or verbs).
fn provider_rules(indent: usize, head: &str, tail: &str) -> String {
    let mut by_group: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut order = Vec::new();
    for provider in PROVIDERS {
        if !by_group.contains_key(provider.group) {
            order.push(provider.group);
        }
        by_group
            .entry(provider.group)
            .or_default()
            .extend(provider.templates);
    }
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for group in order {
        let mut plurals = by_group[group].clone();
        plurals.sort_unstable();
        out += &format!(
            "{pad}- apiGroups: [\"{group}\"]\n{head}",
            head = head.replace("{pad}", &pad)
        );
        out += &format!("{pad}  resources:\n");
        for plural in plurals {
            out += &format!("{pad}    - {plural}\n");
        }
        out += &format!("{pad}  {tail}\n");
    }
    out
}

/// The guard's DELETE rules: every provider's templates, at every version.
fn guarded_rules(indent: usize) -> String {
    provider_rules(
        indent,
        "{pad}  apiVersions: [\"*\"]\n",
        "operations: [\"DELETE\"]",
    )
}

/// template-cleanup's grant on the templates: list them, delete them one by one; the same
/// groups and plurals as the guard's rules, so that it collects what the guard guards.
fn cleanup_template_rules(indent: usize) -> String {
    provider_rules(indent, "", "verbs: [\"get\", \"list\", \"delete\"]")
}

/// Every kind the policy reads, at each version it can read it: the CRDs first, then by
/// apiVersion and kind.
fn context_aware_resources(indent: usize) -> String {
    let mut read: Vec<(String, &str)> = resources_read()
        .filter(|r| r.kind != CRD.kind)
        .flat_map(|r| {
            r.versions
                .iter()
                .map(move |v| (format!("{}/{v}", r.group), r.kind))
        })
        .collect();
    read.sort();
    read.dedup();
    let pad = " ".repeat(indent);
    let mut out = format!(
        "{pad}- apiVersion: {}/{}\n{pad}  kind: {}\n",
        CRD.group, CRD.versions[0], CRD.kind
    );
    for (api_version, kind) in read {
        out += &format!("{pad}- apiVersion: {api_version}\n{pad}  kind: {kind}\n");
    }
    out
}

/// The reader's ClusterRole rules: get, list and watch on every kind the policy reads, one rule
/// per group (the CRDs' first), plurals sorted.
fn reader_rules(indent: usize) -> String {
    let mut by_group: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in resources_read().filter(|r| r.kind != CRD.kind) {
        by_group.entry(r.group).or_default().push(r.plural);
    }
    let pad = " ".repeat(indent);
    // A short list on one line, a longer one an item a line.
    let rule = |group: &str, plurals: &[&str]| {
        let resources = if plurals.len() <= 5 {
            let list: Vec<String> = plurals.iter().map(|p| format!("\"{p}\"")).collect();
            format!(" [{}]\n", list.join(", "))
        } else {
            let items: Vec<String> = plurals
                .iter()
                .map(|p| format!("{pad}    - {p}\n"))
                .collect();
            format!("\n{}", items.concat())
        };
        format!(
            "{pad}- apiGroups: [\"{group}\"]\n{pad}  resources:{resources}{pad}  verbs: [\"get\", \"list\", \"watch\"]\n"
        )
    };
    let mut out = rule(CRD.group, &[CRD.plural]);
    for (group, mut plurals) in by_group {
        plurals.sort_unstable();
        plurals.dedup();
        out += &rule(group, &plurals);
    }
    out
}

/// template-cleanup's `list` on every kind of the guard's referrer table, one rule per group:
/// the decision before each DELETE reads them as the guard does.
fn cleanup_referrer_rules(indent: usize) -> String {
    let mut by_group: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for referrer in &REFERRERS {
        by_group
            .entry(referrer.resource.group)
            .or_default()
            .push(referrer.resource.plural);
    }
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for (group, mut plurals) in by_group {
        plurals.sort_unstable();
        plurals.dedup();
        let list: Vec<String> = plurals.iter().map(|p| format!("\"{p}\"")).collect();
        out += &format!(
            "{pad}- apiGroups: [\"{group}\"]\n{pad}  resources: [{}]\n{pad}  verbs: [\"list\"]\n",
            list.join(", ")
        );
    }
    out
}

/// The generated parts: file, marker name, text.
fn parts() -> Vec<(&'static str, &'static str, String)> {
    vec![
        ("metadata.yml", "guarded-rules", guarded_rules(2)),
        (
            "metadata.yml",
            "context-aware-resources",
            context_aware_resources(2),
        ),
        (
            "examples/guard/cluster-admission-policy-guard.yaml",
            "guarded-rules",
            guarded_rules(4),
        ),
        (
            "examples/guard/cluster-admission-policy-guard.yaml",
            "context-aware-resources",
            context_aware_resources(4),
        ),
        ("examples/rbac.yaml", "reader-rules", reader_rules(2)),
        (
            "examples/cleanup/component/cleanup.yaml",
            "template-rules",
            cleanup_template_rules(2),
        ),
        (
            "examples/cleanup/component/cleanup.yaml",
            "referrer-rules",
            cleanup_referrer_rules(2),
        ),
    ]
}

/// `text` with the part `name` replaced by `body`, or why it cannot be.
fn with_part(text: &str, name: &str, body: &str) -> Result<String, String> {
    let begin = format!("# BEGIN generated: {name} (make manifests)\n");
    let end = format!("# END generated: {name}");
    let start = text
        .find(&begin)
        .ok_or_else(|| format!("no line `{}`", begin.trim_end()))?
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .ok_or_else(|| format!("no line `{end}` after its BEGIN"))?
        + start;
    // The END marker keeps its indentation: cut back to the start of its line.
    let stop = text[..stop].rfind('\n').map_or(stop, |i| i + 1);
    Ok(format!("{}{body}{}", &text[..start], &text[stop..]))
}

/// Every generated part is what the tables give; with MANIFESTS_WRITE=1 stale parts are
/// rewritten.
#[test]
fn the_generated_parts_are_fresh() {
    let write = std::env::var_os("MANIFESTS_WRITE").is_some();
    let mut texts: BTreeMap<&str, String> = BTreeMap::new();
    let mut stale = Vec::new();
    for (file, name, body) in parts() {
        let text = texts.entry(file).or_insert_with(|| read(file));
        let fresh = with_part(text, name, &body).unwrap_or_else(|e| panic!("{file}: {e}"));
        if fresh != *text {
            stale.push(format!("{file} ({name})"));
            *text = fresh;
        }
    }
    if write {
        for (file, text) in &texts {
            std::fs::write(root().join(file), text).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }
    assert!(
        write || stale.is_empty(),
        "stale generated parts: {}. Run `make manifests` and commit the result.",
        stale.join(", ")
    );
}

#[test]
fn a_stale_part_is_replaced_and_the_rest_kept() {
    let text = "a: 1\n  # BEGIN generated: x (make manifests)\n  old\n  # END generated: x\nb: 2\n";
    assert_eq!(
        with_part(text, "x", "  new\n").unwrap(),
        "a: 1\n  # BEGIN generated: x (make manifests)\n  new\n  # END generated: x\nb: 2\n"
    );
    assert!(with_part("a: 1\n", "x", "").is_err());
}

/// A provider row reaches the rules: the generated rules name every plural of the table.
#[test]
fn every_provider_plural_is_in_the_rules() {
    let rules = guarded_rules(0);
    for provider in PROVIDERS {
        for plural in provider.templates {
            assert!(rules.contains(&format!("    - {plural}\n")), "{plural}");
        }
    }
}
