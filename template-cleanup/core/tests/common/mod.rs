//! Builders the table tests share. Each test binary uses some of them, hence the allow.
#![allow(dead_code)]

use template_cleanup_core::{DeclaredObject, ServedKind};

pub const INFRA: &str = "infrastructure.cluster.x-k8s.io";

pub fn kind(group: &str, version: &str, kind: &str, plural: &str) -> ServedKind {
    ServedKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

pub fn m3mt(version: &str) -> ServedKind {
    kind(
        INFRA,
        version,
        "Metal3MachineTemplate",
        "metal3machinetemplates",
    )
}

pub fn oref(group: &str, kind: &str, namespace: &str, name: &str) -> DeclaredObject {
    DeclaredObject {
        group: group.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}
