//! examples/rbac.yaml grants get/list/watch on exactly the contextAwareResources.

use super::*;

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
