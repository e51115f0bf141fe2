//! A minimal typed view of the Cluster API objects the policy reads ([`Object`], one view for
//! every kind), the admission payload, and the template being deleted.
//!
//! The view holds only the fields a decision reads and accepts both the v1beta1 and the v1beta2
//! shape, because the API server converts every object to the version a list asks for and users
//! pick that version in the settings. Every field defaults when absent (or null), and every other
//! field is skipped unread, which keeps a list of thousands of objects cheap to decode.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;

use crate::catalogue::{self, CAPI_GROUP, INFRASTRUCTURE_GROUP, TemplateClass};
use crate::error::Error;
use crate::metadata::{Metadata, ReadKey, nullable, nullable_str};

/// The group part of an `apiVersion` (`""` for the core group `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version
        .split_once('/')
        .map_or("", |(group, _version)| group)
}

/// The owner references of an object of a request (absent or null is none): read apart from
/// [`Metadata`], since no listed object's are used.
///
/// Generic over how the object is held (any `&Value` will do) so that the crate that calls
/// instantiates the JSON reader: release builds share no generic code across crates, and the
/// policy's module then holds one copy of serde_json's reader, not one per crate.
pub fn owners_of(
    object: &impl std::borrow::Borrow<Value>,
) -> Result<Vec<OwnerReference>, serde_json::Error> {
    match object.borrow().pointer("/metadata/ownerReferences") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(owners) => view_of(owners),
    }
}

#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(deserialize_with = "nullable")]
    pub api_version: String,
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

/// A reference to a template in any of the shapes CAPI uses: v1beta1 `ObjectReference`
/// (apiVersion), v1beta2 `ContractVersionedObjectReference` (apiGroup) and v1beta2
/// `ClusterClassTemplateReference` (apiVersion).
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: Option<String>,
    pub api_group: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The namespace a v1beta1 `ObjectReference` gives. Read only for the kinds and versions
    /// whose controllers follow it (`ReferrerKind::follows_reference_namespace_at`), and then
    /// resolved: an empty one is the referrer's own.
    pub namespace: Option<String>,
}

impl ObjectRef {
    /// The group the reference names, if it names one.
    pub fn group(&self) -> Option<&str> {
        match (&self.api_group, &self.api_version) {
            (Some(group), _) if !group.is_empty() => Some(group),
            (_, Some(version)) if !version.is_empty() => Some(group_of(version)),
            _ => None,
        }
    }
}

/// Every object the policy reads, as one view: typed metadata (read for every object, so decoded
/// once and cheaply) and the masked rest as plain JSON, which the catalogue's paths walk
/// (`references.rs`). The host prunes `spec` and `status` to the field masks, so what is left
/// is small; a field of an unexpected type is then an error of that one field, never of the
/// whole list.
#[derive(Deserialize, Default, Debug, Clone, PartialEq)]
#[serde(default)]
pub struct Object {
    #[serde(deserialize_with = "known_kind")]
    pub kind: Cow<'static, str>,
    pub metadata: Metadata,
    pub spec: Value,
    pub status: Value,
}

/// An object's kind (null is none), the catalogue's own string when it is a kind the catalogue
/// reads, so that the thousands of objects of a list allocate no copy of it.
fn known_kind<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'static, str>, D::Error> {
    nullable_str(deserializer, |kind| {
        catalogue::resources_read()
            .find(|r| r.kind == kind)
            .map_or_else(|| Cow::Owned(kind.to_string()), |r| Cow::Borrowed(r.kind))
    })
}

impl Object {
    /// The value at a plain dotted path (`spec.replicas`), if any.
    pub fn at(&self, path: &str) -> Option<&Value> {
        let (root, rest) = path.split_once('.').unwrap_or((path, ""));
        let mut value = match root {
            "spec" => &self.spec,
            "status" => &self.status,
            _ => return None,
        };
        for key in rest.split('.').filter(|k| !k.is_empty()) {
            value = value.get(key)?;
        }
        (!value.is_null()).then_some(value)
    }
}

/// The parts of a validate payload the policy reads: the admission request and the settings.
/// Every field defaults when absent or null; everything else is skipped unread.
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct Payload {
    pub request: AdmissionRequest,
    pub settings: Value,
}

/// The fields of an AdmissionRequest the policy reads. `request.kind` is the one the API server
/// guarantees (`request.resource.kind` is not).
#[derive(Deserialize, Default, Debug)]
#[serde(default, rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub kind: GroupKind,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub namespace: String,
    #[serde(deserialize_with = "nullable")]
    pub operation: String,
    pub object: Value,
    pub old_object: Value,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub struct GroupKind {
    #[serde(deserialize_with = "nullable")]
    pub group: String,
    /// The version the API server called the webhook at.
    #[serde(deserialize_with = "nullable")]
    pub version: String,
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
}

/// Reads a typed view out of a JSON value. Views are only ever decoded from bytes, so each has
/// one deserializer in the module instead of two: re-encoding one object costs less than the
/// code a second deserializer adds to the size budget.
pub fn view_of<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, serde_json::Error> {
    serde_json::from_slice(&serde_json::to_vec(value)?)
}

/// Whether `name` can be an object name. Names read from annotations and owner references are
/// checked before any lookup, so that a name such as `w-1/status` never reaches the host as a
/// path.
pub fn is_object_name(name: &str) -> bool {
    is_dns_subdomain(name)
}

/// Whether `name` is a DNS-1123 subdomain of at most 253 characters (object names, annotation
/// key prefixes): the project's one copy of the rule.
pub fn is_dns_subdomain(name: &str) -> bool {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    !name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)
}

/// The template a DELETE is about, as read from the request's `oldObject`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub reference: TemplateRef,
    pub class: TemplateClass,
    pub namespace: String,
    /// `spec.nodeReuse: true` on a Metal3MachineTemplate.
    pub node_reuse: bool,
    /// Carries `clusterctl.cluster.x-k8s.io/delete-for-move`.
    pub moving: bool,
    /// Names of the Cluster API Clusters among its owners, sorted, each a valid object name.
    pub cluster_owners: Vec<String>,
}

/// The template a request is about: kind, group and name (its namespace is the request's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}

impl TemplateRef {
    /// Kind and name must match; the group too when the reference carries one.
    pub fn is_named_by(&self, reference: &ObjectRef) -> bool {
        reference.kind == self.kind
            && reference.name == self.name
            && reference.group().is_none_or(|group| group == self.group)
    }
}

/// The part of a deleted template the rules use: its metadata. Its spec is read only for
/// Metal3's `spec.nodeReuse`, so a provider's spec that uses one of the catalogue's paths with
/// another type cannot turn a deletion into a 400 (which would also block namespace deletion).
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct DeletedTemplate {
    metadata: Metadata,
}

/// A Metal3MachineTemplate's `spec.nodeReuse`: a plain bool in v1beta1, a pointer in v1beta2;
/// absent means false for CAPM3. Any other value is read as true, the reading that keeps.
fn node_reuse(old_object: &Value) -> bool {
    match old_object.pointer("/spec/nodeReuse") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(reuse)) => *reuse,
        Some(_) => true,
    }
}

impl Template {
    /// Reads a guarded template from a DELETE request. The old object's name wins over the
    /// request's (items of a deletecollection arrive with an empty request name), and the
    /// request's namespace over the old object's. Generic over how the request is held (any
    /// `&AdmissionRequest` will do) for the reason [`owners_of`] gives.
    pub fn from_request(
        request: &impl std::borrow::Borrow<AdmissionRequest>,
        class: TemplateClass,
    ) -> Result<Template, Error> {
        let request = request.borrow();
        let old_object = &request.old_object;
        if !old_object.is_object() {
            return Err(Error::NoOldObject);
        }
        let namespace = if request.namespace.is_empty() {
            crate::metadata::namespace_of(old_object)
        } else {
            request.namespace.clone()
        };
        let (group, kind) = (&request.kind.group, &request.kind.kind);
        Template::read(group, kind, class, &request.name, namespace, old_object)
    }

    /// Reads a guarded template of `group` and `kind` from the object itself, as a client that
    /// listed or read it sees it (template-cleanup asks the decision about it).
    pub fn from_object(
        group: &str,
        kind: &str,
        class: TemplateClass,
        object: &impl std::borrow::Borrow<Value>,
    ) -> Result<Template, Error> {
        let object = object.borrow();
        if !object.is_object() {
            return Err(Error::NoOldObject);
        }
        let namespace = crate::metadata::namespace_of(object);
        Template::read(group, kind, class, "", namespace, object)
    }

    fn read(
        group: &str,
        kind: &str,
        class: TemplateClass,
        request_name: &str,
        namespace: String,
        old_object: &impl std::borrow::Borrow<Value>,
    ) -> Result<Template, Error> {
        let old_object = old_object.borrow();
        let unreadable = |e: serde_json::Error| Error::UnreadableOldObject(e.to_string());
        let meta = view_of::<DeletedTemplate>(old_object)
            .map_err(unreadable)?
            .metadata;
        let mut cluster_owners: Vec<String> = owners_of(old_object)
            .map_err(unreadable)?
            .iter()
            .filter(|owner| {
                owner.kind == catalogue::CLUSTER.kind
                    && group_of(&owner.api_version) == CAPI_GROUP
                    && is_object_name(&owner.name)
            })
            .map(|owner| owner.name.clone())
            .collect();
        cluster_owners.sort();
        cluster_owners.dedup();
        let name = match (meta.name.as_str(), request_name) {
            ("", "") => return Err(Error::Unnamed),
            ("", name) | (name, _) => name,
        };
        Ok(Template {
            reference: TemplateRef {
                group: group.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
            },
            class,
            namespace,
            node_reuse: group == INFRASTRUCTURE_GROUP
                && kind == catalogue::METAL3_MACHINE_TEMPLATE.kind
                && node_reuse(old_object),
            moving: meta.annotations.contains_key(ReadKey::DeleteForMove),
            cluster_owners,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn template_of(
        name: &str,
        namespace: &str,
        old_object: serde_json::Value,
    ) -> Result<Template, Error> {
        template_of_kind("Metal3MachineTemplate", name, namespace, old_object)
    }

    fn template_of_kind(
        kind: &str,
        name: &str,
        namespace: &str,
        old_object: serde_json::Value,
    ) -> Result<Template, Error> {
        let request = AdmissionRequest {
            kind: GroupKind {
                group: INFRASTRUCTURE_GROUP.into(),
                version: "v1beta2".into(),
                kind: kind.into(),
            },
            name: name.into(),
            namespace: namespace.into(),
            operation: "DELETE".into(),
            object: Value::Null,
            old_object,
        };
        Template::from_request(&request, TemplateClass::Machine)
    }

    /// Rule 6: only metadata and Metal3's nodeReuse are read. A provider template whose spec
    /// has one of the referrer paths with another type is still a template that can be checked.
    #[rstest]
    #[case::other_provider_odd_spec("OpenStackMachineTemplate", serde_json::json!({"template": {"spec": {"infrastructureRef": "a string"}}, "replicas": "x"}), false)]
    #[case::metal3_reuse("Metal3MachineTemplate", serde_json::json!({"nodeReuse": true}), true)]
    #[case::metal3_no_reuse("Metal3MachineTemplate", serde_json::json!({"nodeReuse": false}), false)]
    #[case::metal3_absent("Metal3MachineTemplate", serde_json::json!({}), false)]
    #[case::metal3_odd_reads_as_keeping("Metal3MachineTemplate", serde_json::json!({"nodeReuse": "yes"}), true)]
    #[case::other_kind_reuse_ignored("OpenStackMachineTemplate", serde_json::json!({"nodeReuse": true}), false)]
    fn only_metadata_and_node_reuse_are_read(
        #[case] kind: &str,
        #[case] spec: Value,
        #[case] reuse: bool,
    ) {
        let template = template_of_kind(
            kind,
            "t",
            "ns",
            serde_json::json!({"metadata": {"name": "t"}, "spec": spec}),
        )
        .unwrap();
        assert_eq!(template.node_reuse, reuse);
    }

    #[test]
    fn a_deletecollection_item_is_named_by_its_old_object() {
        // Items of a deletecollection arrive with an empty request name (and, cluster-wide, an
        // empty namespace): the old object names the template.
        let template = template_of(
            "",
            "",
            serde_json::json!({"metadata": {"name": "t-1", "namespace": "ns"}, "spec": {"nodeReuse": true}}),
        )
        .unwrap();
        assert_eq!(template.reference.name, "t-1");
        assert_eq!(template.namespace, "ns");
        assert!(template.node_reuse);
    }

    #[rstest]
    #[case::no_old_object(serde_json::Value::Null, Error::NoOldObject)]
    #[case::nameless(serde_json::json!({"metadata": {}}), Error::Unnamed)]
    fn templates_that_cannot_be_checked(
        #[case] old_object: serde_json::Value,
        #[case] error: Error,
    ) {
        assert_eq!(template_of("", "ns", old_object), Err(error));
    }

    #[test]
    fn an_old_object_of_the_wrong_shape_is_unreadable() {
        let error =
            template_of("t", "ns", serde_json::json!({"metadata": {"name": 7}})).unwrap_err();
        assert!(matches!(error, Error::UnreadableOldObject(_)), "{error:?}");
    }

    #[rstest]
    #[case::capi_cluster("cluster.x-k8s.io/v1beta2", "Cluster", "edge-a", vec!["edge-a"])]
    #[case::other_group("example.com/v1", "Cluster", "edge-a", vec![])]
    #[case::not_a_cluster("cluster.x-k8s.io/v1beta2", "MachineSet", "ms", vec![])]
    #[case::invalid_name("cluster.x-k8s.io/v1beta2", "Cluster", "a/status", vec![])]
    fn cluster_owners(
        #[case] api_version: &str,
        #[case] kind: &str,
        #[case] name: &str,
        #[case] expected: Vec<&str>,
    ) {
        let template = template_of(
            "t",
            "ns",
            serde_json::json!({"metadata": {"name": "t", "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": name}]}}),
        )
        .unwrap();
        assert_eq!(template.cluster_owners, expected);
    }

    #[rstest]
    #[case::simple("edge-a-workers-7f3c9d2e", true)]
    #[case::dotted("a.b-c.d", true)]
    #[case::longest(&"a".repeat(253).chars().enumerate().map(|(i, c)| if i % 60 == 59 { '.' } else { c }).collect::<String>(), true)]
    #[case::too_long(&"a.".repeat(127), false)]
    #[case::subresource("w-1/status", false)]
    #[case::empty("", false)]
    #[case::upper("Edge", false)]
    #[case::leading_dash("-a", false)]
    #[case::empty_label("a..b", false)]
    #[case::non_ascii("é", false)]
    #[case::label_too_long(&"a".repeat(64), false)]
    fn object_names(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_object_name(name), expected);
    }

    #[rstest]
    #[case::v1beta1_api_version(
        r#"{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"K","name":"n"}"#,
        Some("infrastructure.cluster.x-k8s.io")
    )]
    #[case::v1beta2_api_group(
        r#"{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"K","name":"n"}"#,
        Some("bootstrap.cluster.x-k8s.io")
    )]
    #[case::core_group(r#"{"apiVersion":"v1","kind":"K","name":"n"}"#, Some(""))]
    #[case::no_group(r#"{"kind":"K","name":"n"}"#, None)]
    #[case::empty_group_falls_back_to_api_version(
        r#"{"apiGroup":"","apiVersion":"x.io/v1","kind":"K","name":"n"}"#,
        Some("x.io")
    )]
    fn reference_group(#[case] json: &str, #[case] expected: Option<&str>) {
        let reference: ObjectRef = serde_json::from_str(json).unwrap();
        assert_eq!(reference.group(), expected);
    }

    /// A catalogue kind is the catalogue's string, not a copy; any other is copied; the errors are those of
    /// a plain string field.
    #[rstest]
    #[case::catalogue_kind(r#"{"kind":"Metal3Machine"}"#, Ok(("Metal3Machine", true)))]
    #[case::other_kind(r#"{"kind":"Metal3Machina"}"#, Ok(("Metal3Machina", false)))]
    #[case::null(r#"{"kind":null}"#, Ok(("", true)))]
    #[case::absent(r#"{}"#, Ok(("", true)))]
    #[case::number(r#"{"kind":7}"#, Err("invalid type: integer `7`, expected a string"))]
    #[case::map(r#"{"kind":{}}"#, Err("invalid type: map, expected a string"))]
    fn object_kinds(#[case] object: &str, #[case] expected: Result<(&str, bool), &str>) {
        let read = serde_json::from_str::<Object>(object);
        let got = match &read {
            // Not copied: the catalogue's string, or empty (which allocates nothing).
            Ok(o) => Ok((
                &*o.kind,
                matches!(o.kind, Cow::Borrowed(_)) || o.kind.is_empty(),
            )),
            Err(e) => Err(e.to_string()),
        };
        match expected {
            Ok(kind) => assert_eq!(got, Ok(kind)),
            Err(error) => assert!(got.as_ref().is_err_and(|e| e.starts_with(error)), "{got:?}"),
        }
    }
}
