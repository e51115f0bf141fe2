//! Reading a list answer of the Kubewarden host item by item, so that a list of thousands of
//! objects is never held whole: only the requests module calls it.

use guard::capi::Object;
use guard::crds::CrdView;
use serde::{Deserialize, Deserializer};

/// A list answer read item by item: its `kind` (absent or null is none), what `each` made of
/// every item as soon as it was decoded, so that a list of thousands of objects is never held
/// whole, and the kind of the first item not of the kind asked for. `items` is required: an
/// answer without it is not an empty list.
pub struct Listed<U> {
    pub kind: Option<String>,
    pub items: Vec<U>,
    pub stray: Option<String>,
}

/// Reads a list answer of items of `wanted` ([`Listed`]), as serde_json reads a struct of
/// `kind` and `items`: other keys skipped, a duplicate key an error.
pub fn read_list<T: Kinded, U>(
    bytes: &[u8],
    wanted: &str,
    each: impl FnMut(T) -> U,
) -> Result<Listed<U>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let visitor = ListVisitor(Each { wanted, each }, std::marker::PhantomData);
    let listed = serde::Deserializer::deserialize_map(&mut de, visitor)?;
    de.end()?;
    Ok(listed)
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ListKey {
    Kind,
    Items,
    #[serde(other)]
    Other,
}

struct Each<'w, F> {
    wanted: &'w str,
    each: F,
}

struct ListVisitor<'w, T, F>(Each<'w, F>, std::marker::PhantomData<T>);

impl<'de, T: Kinded, U, F: FnMut(T) -> U> serde::de::Visitor<'de> for ListVisitor<'_, T, F> {
    type Value = Listed<U>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        mut self,
        mut map: A,
    ) -> Result<Listed<U>, A::Error> {
        use serde::de::Error as _;
        let (mut kind, mut items) = (None, None);
        while let Some(key) = map.next_key()? {
            match key {
                ListKey::Kind if kind.is_some() => return Err(A::Error::duplicate_field("kind")),
                ListKey::Kind => kind = Some(map.next_value::<Option<String>>()?),
                ListKey::Items if items.is_some() => {
                    return Err(A::Error::duplicate_field("items"));
                }
                ListKey::Items => {
                    items = Some(map.next_value_seed(Items(&mut self.0, std::marker::PhantomData))?)
                }
                ListKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let (items, stray) = items.ok_or_else(|| A::Error::missing_field("items"))?;
        Ok(Listed {
            kind: kind.flatten(),
            items,
            stray,
        })
    }
}

/// The `items` of a list, each handed to `each` as soon as it is decoded.
struct Items<'e, 'w, T, F>(&'e mut Each<'w, F>, std::marker::PhantomData<T>);

impl<'de, T: Kinded, U, F: FnMut(T) -> U> serde::de::DeserializeSeed<'de> for Items<'_, '_, T, F> {
    type Value = (Vec<U>, Option<String>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: Kinded, U, F: FnMut(T) -> U> serde::de::Visitor<'de> for Items<'_, '_, T, F> {
    type Value = (Vec<U>, Option<String>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let (mut items, mut stray) = (Vec::new(), None);
        while let Some(item) = seq.next_element::<T>()? {
            let kind = item.kind();
            if stray.is_none() && !kind.is_empty() && kind != self.0.wanted {
                stray = Some(kind.to_string());
            }
            items.push((self.0.each)(item));
        }
        Ok((items, stray))
    }
}

/// A listed item that says its kind, so that an answer holding another kind is caught.
pub trait Kinded: serde::de::DeserializeOwned {
    fn kind(&self) -> &str;
}

impl Kinded for Object {
    fn kind(&self) -> &str {
        &self.kind
    }
}

impl Kinded for CrdView {
    fn kind(&self) -> &str {
        CrdView::kind(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// What the policy server sends is read as serde_json reads a struct of `kind` and `items`.
    #[rstest]
    #[case::items_twice(r#"{"items":[],"items":[]}"#, "duplicate field `items`")]
    #[case::kind_twice(r#"{"kind":null,"kind":"L","items":[]}"#, "duplicate field `kind`")]
    #[case::an_array(r#"[[]]"#, "invalid type: sequence, expected a list")]
    #[case::trailing(r#"{"items":[]} x"#, "trailing characters")]
    fn list_answers_that_are_not_read(#[case] answer: &str, #[case] error: &str) {
        let read = read_list(answer.as_bytes(), "K", |object: Object| object);
        let text = read.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.starts_with(error), "{text}");
    }

    #[test]
    fn list_items_are_read_in_order_and_the_first_stray_kind_kept() {
        let answer = r#"{"kind":null,"other":[1],"items":[{"kind":"K","metadata":{"name":"a"}},{"kind":"J"},{"kind":"I"}]}"#;
        let read = read_list(answer.as_bytes(), "K", |o: Object| o.kind).unwrap();
        assert_eq!(
            (read.kind, read.items),
            (None, vec!["K".into(), "J".into(), "I".into()])
        );
        assert_eq!(read.stray.as_deref(), Some("J"));
    }
}
