//! Builders the table tests share. Each test binary uses some of them, hence the allow.
#![allow(dead_code)]

use serde_json::Value;
use template_cleanup_core::answer::ErrorStatus;
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

/// A DELETE's error answer, as template-cleanup reads it.
pub fn refused(code: u16, reason: &str, message: &str, causes: &[&str]) -> ErrorStatus {
    ErrorStatus {
        code,
        reason: reason.into(),
        message: message.into(),
        causes: causes.iter().map(|c| c.to_string()).collect(),
        ..ErrorStatus::default()
    }
}

pub const DENIED: &str = "admission webhook \"clusterwide-capi-template-guard-cleanup.kubewarden.admission\" denied the request: ";

/// kube-apiserver's usual answer to a DELETE whose preconditions fail: `rest.BeforeDelete`
/// (k8s.io/apiserver v0.36.3 `pkg/registry/rest/delete.go:83-92`), a Conflict on the kind (its
/// `GroupResource` is built from the kind) with these texts.
pub const BEFORE_DELETE_UID: &str = "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"t1\": the UID in the precondition (a) does not match the UID in record (b). The object might have been deleted and then recreated";
pub const BEFORE_DELETE_RV: &str = "Operation cannot be fulfilled on Metal3MachineTemplate.infrastructure.cluster.x-k8s.io \"t1\": the ResourceVersion in the precondition (7) does not match the ResourceVersion in record (8). The object might have been modified";

/// `object` with the value at `pointer` set to `value`.
pub fn with(mut object: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    object
        .pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .insert(key.to_string(), value);
    object
}
