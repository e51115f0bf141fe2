//! examples/rbac.yaml: its rules (generated) grant get, list and watch and nothing more, and its
//! role is bound to an account.

use super::*;

// ---------------------------------------------------------------------------------------------
// examples/rbac.yaml

/// The reader's rules are generated from the catalogue (xtask/src/manifests.rs); what is
/// written by hand is the binding of its ClusterRole to the policy server's account.
#[test]
fn rbac_binds_the_reader_role_to_a_service_account() {
    let what = "examples/rbac.yaml";
    let documents = yaml_documents(what, &read(what));
    let role_names: BTreeSet<&str> = documents
        .iter()
        .filter(|d| d["kind"] == "ClusterRole")
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    assert!(!role_names.is_empty(), "{what} holds no ClusterRole");
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
