//! The sources table (`template_cleanup_core::sources::SOURCES`) and discovery. What ships and what
//! the docs say of it (the job's ClusterRole, the Helm component, docs/cleanup.md's RBAC table) is
//! checked against the table by `cargo xtask check` (xtask/src/checks/cleanup.rs), and the rules
//! are written from it by `cargo xtask gen`.

use template_cleanup_core::sources::{SOURCES, discovery_groups};

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
