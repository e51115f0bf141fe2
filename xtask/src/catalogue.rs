//! test_data/catalogue.json: the group, plural, versions and masks of every kind the policy reads,
//! and the versions at which it lists a kind across namespaces, from `guard::catalogue`. The
//! packaging tests and e2e.bats read the catalogue through it.

use guard::catalogue::{REFERRERS, ReferrerKind, masks_of, resources_read};

use crate::derived::Derived;

pub fn file() -> Derived {
    let mut kinds = serde_json::Map::new();
    for resource in resources_read() {
        let referrer = REFERRERS.iter().find(|r| r.resource == *resource);
        let masks = referrer.map_or_else(|| masks_of(resource), ReferrerKind::masks);
        // The versions at which the kind is listed across namespaces, not in the template's.
        let across: &[&str] = referrer.map_or(&[], |r| r.follows_reference_namespace_at);
        kinds.insert(
            resource.kind.to_string(),
            serde_json::json!({"group": resource.group, "plural": resource.plural, "versions": resource.versions, "masks": masks, "acrossNamespacesAt": across}),
        );
    }
    let text =
        serde_json::to_string_pretty(&serde_json::Value::Object(kinds)).expect("a JSON map prints");
    Derived::File {
        path: "test_data/catalogue.json".into(),
        text: format!("{text}\n"),
    }
}
