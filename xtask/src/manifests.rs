//! The generated parts of the shipped manifests, from the code's tables: the provider table
//! (`guard::catalogue::PROVIDERS`) gives the DELETE rules and template-cleanup's grant on the
//! templates, the catalogue's readable kinds (`guard::catalogue::resources_read`) the
//! contextAwareResources and the reader's RBAC, the kinds the mutation reads
//! (`resources_read_by_the_mutation`) the mutation's, the referrer table template-cleanup's `list`
//! grants, and template-cleanup's sources table (`template_cleanup_core::sources::SOURCES`) its
//! deploy-tool rules: those of every pass in its ClusterRole, those read with `--helm-releases`
//! in the Helm component.

use guard::catalogue::{
    CRD, PROVIDERS, REFERRERS, Resource, resources_read, resources_read_by_the_mutation,
};
use template_cleanup_core::sources::{SOURCES, When};

use crate::derived::Derived;
use crate::rules::{self, Rule, flow};

const CLEANUP_ROLE: &str = "examples/cleanup/component/cleanup.yaml";
const CLEANUP_HELM: &str = "examples/cleanup/helm/kustomization.yaml";

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

/// One rule per group, closed by `last`.
fn per_group<'a>(
    groups: Vec<(&'a str, Vec<&'a str>)>,
    every_version: bool,
    last: &str,
) -> Vec<Rule<'a>> {
    groups
        .into_iter()
        .map(|(group, resources)| Rule {
            group,
            resources,
            every_version,
            last: last.to_string(),
        })
        .collect()
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
pub fn guarded_rules(indent: usize) -> String {
    let rules = per_group(provider_groups(), true, "operations: [\"DELETE\"]");
    rules::list(indent, &rules, 0)
}

/// template-cleanup's grant on the templates: list them, delete them one by one; the same
/// groups and plurals as the guard's rules, so that it collects what the guard guards.
fn cleanup_template_rules(indent: usize) -> String {
    let verbs = flow("verbs", &["get", "list", "delete"]);
    rules::list(indent, &per_group(provider_groups(), false, &verbs), 0)
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
    let verbs = flow("verbs", &["get", "list", "watch"]);
    rules::list(indent, &per_group(groups, false, &verbs), 5)
}

/// template-cleanup's `list` on every kind of the guard's referrer table, one rule per group:
/// the decision before each DELETE reads them as the guard does.
fn cleanup_referrer_rules(indent: usize) -> String {
    let mut read: Vec<(&str, &str)> = REFERRERS
        .iter()
        .map(|r| (r.resource.group, r.resource.plural))
        .collect();
    read.sort_unstable();
    let verbs = flow("verbs", &["list"]);
    rules::list(
        indent,
        &per_group(grouped(read.into_iter()), false, &verbs),
        usize::MAX,
    )
}

/// The rules of the sources read `when`, one per row, in the table's order.
fn source_rules(when: When) -> Vec<Rule<'static>> {
    SOURCES
        .iter()
        .filter(|s| s.when == when)
        .map(|s| Rule {
            group: s.group,
            resources: vec![s.plural],
            every_version: false,
            last: flow("verbs", s.verbs),
        })
        .collect()
}

/// Every generated part of the manifests.
pub fn parts() -> Vec<Derived> {
    let part = |path, name, body| Derived::Part { path, name, body };
    vec![
        part("metadata.yml", "guarded-rules", guarded_rules(2)),
        part(
            "metadata.yml",
            "context-aware-resources",
            context_aware_resources(2, resources_read()),
        ),
        part(
            "examples/guard/cluster-admission-policy-guard.yaml",
            "guarded-rules",
            guarded_rules(4),
        ),
        part(
            "examples/guard/cluster-admission-policy-guard.yaml",
            "context-aware-resources",
            context_aware_resources(4, resources_read()),
        ),
        part(
            "examples/cluster-admission-policy-mutate.yaml",
            "context-aware-resources",
            context_aware_resources(4, resources_read_by_the_mutation()),
        ),
        part("examples/rbac.yaml", "reader-rules", reader_rules(2)),
        part(CLEANUP_ROLE, "template-rules", cleanup_template_rules(2)),
        part(CLEANUP_ROLE, "referrer-rules", cleanup_referrer_rules(2)),
        part(
            CLEANUP_ROLE,
            "source-rules",
            rules::list(2, &source_rules(When::Always), usize::MAX),
        ),
        part(
            CLEANUP_HELM,
            "helm-source-rules",
            rules::added(6, &source_rules(When::HelmReleases), usize::MAX),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_plural_is_in_the_rules() {
        let rules = guarded_rules(0);
        for provider in PROVIDERS {
            for plural in provider.templates {
                assert!(rules.contains(&format!("    - {plural}\n")), "{plural}");
            }
        }
    }
}
