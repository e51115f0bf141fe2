//! examples/rbac.yaml grants get, list and watch, in every rule, on exactly the
//! contextAwareResources.

use super::*;

// ---------------------------------------------------------------------------------------------
// examples/rbac.yaml

#[test]
fn rbac_grants_read_access_to_exactly_the_context_aware_resources() {
    let metadata = PolicyMetadata::load();
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
            if let Some(problem) = verb_problem(rule, &where_) {
                panic!("{problem}");
            }
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

/// metadata.yml grants exactly what the policy reads: every kind of test_data/catalogue.json at
/// each of its versions, and nothing else.
#[test]
fn context_aware_resources_are_what_the_catalogue_reads() {
    let catalogue: Value = serde_json::from_str(&read("test_data/catalogue.json"))
        .expect("test_data/catalogue.json is JSON");
    let read: BTreeSet<String> = catalogue
        .as_object()
        .expect("a mapping of kinds")
        .iter()
        .flat_map(|(kind, entry)| {
            let group = entry["group"].as_str().unwrap_or_default().to_string();
            strings(&entry["versions"], kind)
                .into_iter()
                .map(move |v| format!("{group}/{v}/{kind}"))
        })
        .collect();
    let listed: BTreeSet<String> = PolicyMetadata::load()
        .context_aware_resources()
        .iter()
        .map(|r| {
            assert!(!plural_of(&r.kind).is_empty(), "{r}");
            format!("{}/{}", r.api_version, r.kind)
        })
        .collect();
    assert_eq!(listed, read);
}

/// Why a rule's verbs are wrong, if they are. Each verb has its reason:
/// - watch: the policy server answers lists from watch-based caches; without watch a cache keeps
///   its first list for good, and later deletions are checked against that stale snapshot (a
///   template that became used afterwards could be deleted);
/// - list: without it no list ever succeeds, and every guarded delete waits for the webhook
///   timeout;
/// - get: owning Clusters and a new Metal3Machine's template are read one by one.
///
/// Anything more (delete, update, `*`) is more than a reader needs.
fn verb_problem(rule: &Value, where_: &str) -> Option<String> {
    let verbs: BTreeSet<String> = strings(&rule["verbs"], &format!("{where_}.verbs"))
        .into_iter()
        .collect();
    let missing: Vec<&str> = READ_VERBS
        .iter()
        .copied()
        .filter(|v| !verbs.contains(*v))
        .collect();
    let extra: Vec<&String> = verbs
        .iter()
        .filter(|v| !READ_VERBS.contains(&v.as_str()))
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let mut problem = format!("{where_} must grant exactly get, list and watch");
    if missing.contains(&"watch") {
        problem.push_str(
            ". Without watch the policy server keeps its first list of the kind for good and \
             checks later deletions against that stale snapshot",
        );
    }
    Some(format!(
        "{problem}; missing {missing:?}, not needed {extra:?}"
    ))
}

#[test]
fn every_rbac_rule_grants_watch() {
    let what = "examples/rbac.yaml";
    let mut rules = 0;
    for role in yaml_documents(what, &read(what))
        .iter()
        .filter(|d| d["kind"] == "ClusterRole")
    {
        for (i, rule) in seq_at(role, "/rules", what).iter().enumerate() {
            rules += 1;
            let verbs = strings(&rule["verbs"], "verbs");
            assert!(
                verbs.iter().any(|v| v == "watch"),
                "{what} rules[{i}] ({:?}) lacks watch: the policy server would check deletions \
                 against its first list forever",
                rule["resources"]
            );
        }
    }
    assert!(rules > 0, "{what} has no rules");
}

/// The check catches what it is there for.
#[test]
fn the_verb_check_refuses_a_rule_without_watch_or_with_more() {
    let rule = |verbs: &[&str]| serde_json::json!({ "verbs": verbs });
    assert_eq!(verb_problem(&rule(&["get", "list", "watch"]), "r"), None);
    let without_watch = verb_problem(&rule(&["get", "list"]), "r").expect("a problem");
    assert!(without_watch.contains("stale snapshot"), "{without_watch}");
    assert!(verb_problem(&rule(&["get", "watch"]), "r").is_some());
    assert!(verb_problem(&rule(&["get", "list", "watch", "delete"]), "r").is_some());
}
