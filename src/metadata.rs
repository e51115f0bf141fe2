//! The metadata the policy reads of an object ([`Metadata`]), decoded so that a list of thousands
//! of objects allocates only the strings a decision keeps.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::capi::{
    nullable, nullable_str, CLONED_FROM_GROUPKIND, CLONED_FROM_NAME, DELETE_FOR_MOVE,
};

/// The annotation and label keys the policy reads: the only ones [`Metadata`] keeps.
const READ_KEYS: [&str; 5] = [
    CLONED_FROM_NAME,
    CLONED_FROM_GROUPKIND,
    DELETE_FOR_MOVE,
    crate::references::CLUSTER_NAME_LABEL,
    crate::references::DEPLOYMENT_NAME_LABEL,
];

/// The metadata the policy reads of an object. Only the annotations and labels it reads are kept
/// ([`READ_KEYS`]; the other keys are compared without being copied and their values skipped),
/// `namespace` is checked to be a string but not kept (a listed object's is the list's; a request
/// object's is read apart, [`namespace_of`]), and owner references are read apart
/// ([`crate::capi::owners_of`]),
/// for the objects of a request only: a list of thousands of objects then decodes no more than the
/// decision uses.
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

/// The values of an annotation or label map under the keys of [`READ_KEYS`], each at its key's
/// place: a fixed array, so that reading an object allocates no map.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct ReadValues([Option<String>; READ_KEYS.len()]);

impl ReadValues {
    fn slot(key: &str) -> Option<usize> {
        READ_KEYS.iter().position(|k| *k == key)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(Self::slot(key)?)?.as_deref()
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Takes the value out, as a listed object's candidate does.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.0.get_mut(Self::slot(key)?)?.take()
    }

    /// Sets a read key's value; any other key is not kept, as when decoded.
    #[cfg(test)]
    pub fn insert(&mut self, key: &str, value: String) {
        if let Some(kept) = Self::slot(key).and_then(|i| self.0.get_mut(i)) {
            *kept = Some(value);
        }
    }

    /// How many read keys have a value.
    #[cfg(test)]
    pub fn kept(&self) -> usize {
        self.0.iter().flatten().count()
    }
}

/// A map key, as the place in [`READ_KEYS`] of the one it is, if any, read without a copy.
struct ReadKey(Option<usize>);

impl<'de> Deserialize<'de> for ReadKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = ReadKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, key: &str) -> Result<ReadKey, E> {
                Ok(ReadKey(ReadValues::slot(key)))
            }
        }
        deserializer.deserialize_str(Key)
    }
}

/// An annotation or label map (null is empty) with only the keys of [`READ_KEYS`], whose values
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
            while let Some(ReadKey(slot)) = map.next_key()? {
                match slot.and_then(|i| kept.0.get_mut(i)) {
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

    pub fn label(&self, key: &str) -> Option<&str> {
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
        assert_eq!(meta.annotations.get(CLONED_FROM_NAME), Some("t"));
        assert_eq!(meta.labels.kept(), 1);
        assert_eq!(
            meta.label(crate::references::CLUSTER_NAME_LABEL),
            Some("edge")
        );
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
        let key = crate::references::CLUSTER_NAME_LABEL;
        assert_eq!(meta.label(key), Some("b"));
        assert_eq!(meta.labels.remove(key), Some("b".to_string()));
        assert_eq!(meta.labels.remove(key), None);
        assert_eq!(meta.label(key), None);
        meta.labels.insert("not-read", "x".into());
        assert_eq!(meta.labels.kept(), 0);
        assert!(!meta.annotations.contains_key(DELETE_FOR_MOVE));
        meta.annotations.insert(DELETE_FOR_MOVE, "true".into());
        assert!(meta.annotations.contains_key(DELETE_FOR_MOVE));
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
