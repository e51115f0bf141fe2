//! The shipped manifests written from the guard's own tables: the provider table
//! (`guard::catalogue::PROVIDERS`) gives the DELETE rules, the catalogue's readable kinds
//! (`guard::catalogue::resources_read`) the contextAwareResources and the reader's RBAC, and the
//! kinds the mutation reads (`resources_read_by_the_mutation`) the mutation's.
//!
//! Each generated part of a file sits between two marker lines,
//! `# BEGIN generated: NAME (make manifests)` and `# END generated: NAME`. A test fails when a
//! part is stale; `make manifests` (MANIFESTS_WRITE=1) rewrites it. Everything outside the markers
//! is written by hand.

use guard::catalogue::{
    resources_read, resources_read_by_the_mutation, Resource, CRD, PROVIDERS, REFERRERS,
};
use guard::testing::freshen_generated_parts;

use super::root;

/// `(group, plural)` pairs grouped by group, in the order groups first appear, each group's
/// plurals sorted and once.
fn grouped<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (group, plural) in pairs {
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, plurals)) => plurals.push(plural),
            None => groups.push((group, vec![plural])),
        }
    }
    for (_, plurals) in &mut groups {
        plurals.sort_unstable();
        plurals.dedup();
    }
    groups
}

/// One rule per group, at `indent`: `head` follows `apiGroups` (`{pad}` is the indent), `tail`
/// closes it (its operations or verbs). Up to `inline` plurals go on one line, more an item a
/// line.
fn rules(
    indent: usize,
    groups: &[(&str, Vec<&str>)],
    head: &str,
    tail: &str,
    inline: usize,
) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for (group, plurals) in groups {
        out += &format!(
            "{pad}- apiGroups: [\"{group}\"]\n{}",
            head.replace("{pad}", &pad)
        );
        if plurals.len() <= inline {
            let list: Vec<String> = plurals.iter().map(|p| format!("\"{p}\"")).collect();
            out += &format!("{pad}  resources: [{}]\n", list.join(", "));
        } else {
            out += &format!("{pad}  resources:\n");
            for plural in plurals {
                out += &format!("{pad}    - {plural}\n");
            }
        }
        out += &format!("{pad}  {tail}\n");
    }
    out
}

/// Every provider's templates, by group in the table's order.
fn provider_groups() -> Vec<(&'static str, Vec<&'static str>)> {
    grouped(
        PROVIDERS
            .iter()
            .flat_map(|p| p.templates.iter().map(move |t| (p.group, *t))),
    )
}

/// The guard's DELETE rules: every provider's templates, at every version.
fn guarded_rules(indent: usize) -> String {
    rules(
        indent,
        &provider_groups(),
        "{pad}  apiVersions: [\"*\"]\n",
        "operations: [\"DELETE\"]",
        0,
    )
}

/// template-cleanup's grant on the templates: list them, delete them one by one; the same
/// groups and plurals as the guard's rules, so that it collects what the guard guards.
fn cleanup_template_rules(indent: usize) -> String {
    rules(
        indent,
        &provider_groups(),
        "",
        "verbs: [\"get\", \"list\", \"delete\"]",
        0,
    )
}

/// Every kind of `read` at each version the policy can read it: the CRDs first, then by
/// apiVersion and kind.
fn context_aware_resources<'a>(indent: usize, read: impl Iterator<Item = &'a Resource>) -> String {
    let mut read: Vec<(String, &str)> = read
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
/// per group (the CRDs' first, then by group), plurals sorted.
fn reader_rules(indent: usize) -> String {
    let mut read: Vec<(&str, &str)> = resources_read()
        .filter(|r| r.kind != CRD.kind)
        .map(|r| (r.group, r.plural))
        .collect();
    read.sort_unstable();
    let mut groups = vec![(CRD.group, vec![CRD.plural])];
    groups.extend(grouped(read.into_iter()));
    rules(
        indent,
        &groups,
        "",
        "verbs: [\"get\", \"list\", \"watch\"]",
        5,
    )
}

/// template-cleanup's `list` on every kind of the guard's referrer table, one rule per group:
/// the decision before each DELETE reads them as the guard does.
fn cleanup_referrer_rules(indent: usize) -> String {
    let mut read: Vec<(&str, &str)> = REFERRERS
        .iter()
        .map(|r| (r.resource.group, r.resource.plural))
        .collect();
    read.sort_unstable();
    rules(
        indent,
        &grouped(read.into_iter()),
        "",
        "verbs: [\"list\"]",
        usize::MAX,
    )
}

/// The generated parts: file, marker name, text.
fn parts() -> Vec<(&'static str, &'static str, String)> {
    vec![
        ("metadata.yml", "guarded-rules", guarded_rules(2)),
        (
            "metadata.yml",
            "context-aware-resources",
            context_aware_resources(2, resources_read()),
        ),
        (
            "examples/guard/cluster-admission-policy-guard.yaml",
            "guarded-rules",
            guarded_rules(4),
        ),
        (
            "examples/guard/cluster-admission-policy-guard.yaml",
            "context-aware-resources",
            context_aware_resources(4, resources_read()),
        ),
        (
            "examples/cluster-admission-policy-mutate.yaml",
            "context-aware-resources",
            context_aware_resources(4, resources_read_by_the_mutation()),
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

/// Every generated part is what the tables give; with MANIFESTS_WRITE=1 stale parts are
/// rewritten.
#[test]
fn the_generated_parts_are_fresh() {
    let write = std::env::var_os("MANIFESTS_WRITE").is_some();
    let stale = freshen_generated_parts(&root(), &parts(), write);
    assert!(
        write || stale.is_empty(),
        "stale generated parts: {}. Run `make manifests` and commit the result.",
        stale.join(", ")
    );
}

#[test]
fn every_provider_plural_is_in_the_rules() {
    let rules = guarded_rules(0);
    for provider in PROVIDERS {
        for plural in provider.templates {
            assert!(rules.contains(&format!("    - {plural}\n")), "{plural}");
        }
    }
}
