//! Decoding what every object carries: the metadata the policy reads of an object
//! ([`Metadata`]), the annotation and label keys it reads ([`ReadKey`]), and the nullable
//! helpers every view uses. Decoded so that a list of thousands of objects allocates only the
//! strings a decision keeps. It depends on no other module of the policy.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The annotation and label keys the policy reads: the only ones [`Metadata`] keeps. A key is
/// read by naming its variant, so a key that is not kept cannot be read by mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKey {
    /// Annotation set by CAPI on every object cloned from a template: the template's name.
    ClonedFromName,
    /// Annotation set next to it: `Kind.group` of the template.
    ClonedFromGroupKind,
    /// Annotation `clusterctl move` puts on every object right before deleting it.
    DeleteForMove,
    /// The label Cluster API puts on the objects of a Cluster.
    ClusterName,
    /// The label that makes a MachineSet part of a MachineDeployment: the MachineSet controller
    /// finds its owner by it (`isDeploymentChild`, `getOwnerMachineDeployment` in
    /// core/reconcilers/machineset/machineset_controller.go@v1.14.0, the same in
    /// internal/controllers/machineset@v1.10.9).
    DeploymentName,
    /// Annotation the MachineDeployment controller writes on itself and on each of its
    /// MachineSets: a MachineSet whose value equals its MachineDeployment's is the current
    /// revision, whose missing template fails every reconcile (`isCurrentMachineSet` in
    /// core/reconcilers/machineset/machineset_controller.go@v1.14.0, the same in
    /// internal/controllers/machineset@v1.10.10).
    Revision,
}

impl ReadKey {
    pub const ALL: [ReadKey; 6] = [
        ReadKey::ClonedFromName,
        ReadKey::ClonedFromGroupKind,
        ReadKey::DeleteForMove,
        ReadKey::ClusterName,
        ReadKey::DeploymentName,
        ReadKey::Revision,
    ];

    /// The key as objects carry it.
    pub const fn key(self) -> &'static str {
        match self {
            ReadKey::ClonedFromName => "cluster.x-k8s.io/cloned-from-name",
            ReadKey::ClonedFromGroupKind => "cluster.x-k8s.io/cloned-from-groupkind",
            ReadKey::DeleteForMove => "clusterctl.cluster.x-k8s.io/delete-for-move",
            ReadKey::ClusterName => "cluster.x-k8s.io/cluster-name",
            ReadKey::DeploymentName => "cluster.x-k8s.io/deployment-name",
            ReadKey::Revision => "machinedeployment.clusters.x-k8s.io/revision",
        }
    }

    fn of(key: &str) -> Option<ReadKey> {
        ReadKey::ALL.into_iter().find(|k| k.key() == key)
    }
}

/// Treats an explicit `null` like an absent field.
pub fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A string or null, as [`nullable`] reads it, but borrowed while `read` makes what is kept of
/// it (null gives `read("")`): a list of thousands of objects then copies only what it keeps.
pub fn nullable_str<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    read: fn(&str) -> T,
) -> Result<T, D::Error> {
    struct Str<T>(fn(&str) -> T);
    impl<'de, T> serde::de::Visitor<'de> for Str<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_none<E>(self) -> Result<T, E> {
            Ok((self.0)(""))
        }
        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
            deserializer.deserialize_str(self)
        }
        fn visit_str<E>(self, value: &str) -> Result<T, E> {
            Ok((self.0)(value))
        }
    }
    deserializer.deserialize_option(Str(read))
}

/// The metadata the policy reads of an object. Only the annotations and labels it reads are kept
/// ([`ReadKey`]; the other keys are compared without being copied and their values skipped),
/// `namespace` is checked to be a string but not kept (a listed object's is the list's; a request
/// object's is read apart, [`namespace_of`]), and owner references are read apart
/// ([`crate::capi::owners_of`]),
/// for the objects of a request only: a list of thousands of objects then decodes no more than the
/// decision uses.
// The private unit field checks the namespace's type while reading; it is not there to keep
// the struct non-exhaustive.
#[allow(clippy::manual_non_exhaustive)]
#[derive(Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Metadata {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(rename = "namespace", deserialize_with = "unkept_string")]
    namespace_checked: (),
    pub deletion_timestamp: Option<String>,
    #[serde(deserialize_with = "read_keys")]
    pub annotations: ReadValues,
    #[serde(deserialize_with = "read_keys")]
    pub labels: ReadValues,
}

/// A string (or null) that is checked and not kept: reading it allocates nothing.
fn unkept_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    nullable_str(deserializer, |_| ())
}

/// The namespace in an object's metadata (absent or null is empty): [`Metadata`] checks it but
/// does not keep it, so a request object's is read here, after its view.
pub fn namespace_of(object: &Value) -> String {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The values of an annotation or label map under the keys of [`ReadKey`], each at its key's
/// place: a fixed array, so that reading an object allocates no map.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct ReadValues([Option<String>; ReadKey::ALL.len()]);

impl ReadValues {
    pub fn get(&self, key: ReadKey) -> Option<&str> {
        self.0[key as usize].as_deref()
    }

    pub fn contains_key(&self, key: ReadKey) -> bool {
        self.get(key).is_some()
    }

    /// Takes the value out, as a listed object's candidate does.
    pub fn remove(&mut self, key: ReadKey) -> Option<String> {
        self.0[key as usize].take()
    }

    /// Sets a read key's value.
    #[cfg(test)]
    pub fn insert(&mut self, key: ReadKey, value: String) {
        self.0[key as usize] = Some(value);
    }

    /// How many read keys have a value.
    #[cfg(test)]
    pub fn kept(&self) -> usize {
        self.0.iter().flatten().count()
    }
}

/// A map key, as the [`ReadKey`] it is, if any, read without a copy.
struct MapKey(Option<ReadKey>);

impl<'de> Deserialize<'de> for MapKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = MapKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, key: &str) -> Result<MapKey, E> {
                Ok(MapKey(ReadKey::of(key)))
            }
        }
        deserializer.deserialize_str(Key)
    }
}

/// An annotation or label map (null is empty) with only the keys of [`ReadKey`], whose values
/// must be strings (a key given twice keeps its last value, as a map would).
fn read_keys<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ReadValues, D::Error> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = ReadValues;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(ReadValues::default())
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut kept = ReadValues::default();
            while let Some(MapKey(read)) = map.next_key()? {
                match read.and_then(|k| kept.0.get_mut(k as usize)) {
                    Some(value) => *value = Some(map.next_value()?),
                    None => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(kept)
        }
    }
    deserializer.deserialize_any(Keys)
}

impl Metadata {
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    pub fn label(&self, key: ReadKey) -> Option<&str> {
        self.labels.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_count_as_absent() {
        let meta: Metadata =
            serde_json::from_str(r#"{"name":null,"annotations":null,"labels":null}"#).unwrap();
        assert_eq!(meta, Metadata::default());
    }

    #[test]
    fn only_the_annotations_and_labels_read_are_kept() {
        let meta: Metadata = serde_json::from_str(
            r#"{"annotations":{"a":{"x":1},"cluster.x-k8s.io/cloned-from-name":"t"},"labels":{"b":"c","cluster.x-k8s.io/cluster-name":"edge"}}"#,
        )
        .unwrap();
        assert_eq!(meta.annotations.kept(), 1);
        assert_eq!(meta.annotations.get(ReadKey::ClonedFromName), Some("t"));
        assert_eq!(meta.labels.kept(), 1);
        assert_eq!(meta.label(ReadKey::ClusterName), Some("edge"));
        // a key that is read must hold a string
        let odd = r#"{"annotations":{"clusterctl.cluster.x-k8s.io/delete-for-move":1}}"#;
        assert!(serde_json::from_str::<Metadata>(odd).is_err());
    }

    #[test]
    fn wrong_types_are_errors_not_defaults() {
        assert!(serde_json::from_str::<Metadata>(r#"{"name":7}"#).is_err());
    }

    /// What [`Metadata`] decoded `namespace` as before it stopped keeping it.
    #[derive(serde::Deserialize, Debug)]
    struct KeptNamespace {
        #[serde(default, deserialize_with = "nullable")]
        #[allow(dead_code)]
        namespace: String,
    }

    #[rstest::rstest]
    #[case::string(r#"{"namespace":"ns"}"#, "ns")]
    #[case::null(r#"{"namespace":null}"#, "")]
    #[case::absent(r#"{}"#, "")]
    #[case::number(r#"{"namespace":7}"#, "")]
    #[case::map(r#"{"namespace":{"a":"b"}}"#, "")]
    #[case::list(r#"{"namespace":["ns"]}"#, "")]
    fn the_namespace_is_checked_as_when_it_was_kept(#[case] metadata: &str, #[case] read: &str) {
        let now = serde_json::from_str::<Metadata>(metadata).map(|_| ());
        let before = serde_json::from_str::<KeptNamespace>(metadata).map(|_| ());
        assert_eq!(
            now.map_err(|e| e.to_string()),
            before.map_err(|e| e.to_string())
        );
        let object: Value = serde_json::from_str(&format!(r#"{{"metadata":{metadata}}}"#)).unwrap();
        assert_eq!(namespace_of(&object), read);
    }

    #[test]
    fn read_values_keep_the_last_of_a_repeated_key_and_give_each_once() {
        let mut meta: Metadata = serde_json::from_str(
            r#"{"labels":{"cluster.x-k8s.io/cluster-name":"a","cluster.x-k8s.io/cluster-name":"b"}}"#,
        )
        .unwrap();
        let key = ReadKey::ClusterName;
        assert_eq!(meta.label(key), Some("b"));
        assert_eq!(meta.labels.remove(key), Some("b".to_string()));
        assert_eq!(meta.labels.remove(key), None);
        assert_eq!(meta.label(key), None);
        assert_eq!(meta.labels.kept(), 0);
        assert!(!meta.annotations.contains_key(ReadKey::DeleteForMove));
        meta.annotations
            .insert(ReadKey::DeleteForMove, "true".into());
        assert!(meta.annotations.contains_key(ReadKey::DeleteForMove));
    }

    /// Every key is at its own place, found from its text.
    #[test]
    fn each_read_key_is_found_by_its_text() {
        for (i, key) in ReadKey::ALL.into_iter().enumerate() {
            assert_eq!(key as usize, i);
            assert_eq!(ReadKey::of(key.key()), Some(key));
        }
        assert_eq!(ReadKey::of("not-read"), None);
    }

    #[rstest::rstest]
    #[case::labels_a_string(r#"{"labels":"x"}"#, "invalid type: string \"x\", expected a map")]
    #[case::annotations_a_list(r#"{"annotations":[]}"#, "invalid type: sequence, expected a map")]
    #[case::read_value_a_map(
        r#"{"labels":{"cluster.x-k8s.io/cluster-name":{}}}"#,
        "invalid type: map, expected a string"
    )]
    fn maps_of_another_shape_are_errors(#[case] metadata: &str, #[case] error: &str) {
        let text = serde_json::from_str::<Metadata>(metadata)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(text.starts_with(error), "{text}");
    }
}
