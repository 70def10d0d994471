//! Internally tagged enums (`{"type": "open", "spec": …}`) read without buffering.
//!
//! serde's derive reads an internally tagged enum by first collecting the whole object into a
//! private `Content` tree, then deserializing the variant's fields from that tree; every type
//! nested in a variant (specs, reports, results) then has its deserializer compiled twice, once
//! for JSON and once for `Content`: 220 KB of a MIPS router build. Every writer of these
//! objects is serde, which puts the tag first, so [`tagged_enum!`] reads the tag as the first
//! key and the variant's fields straight from the JSON after it. An object whose tag comes
//! later (a hand-written message) is refused by the derive; [`from_json`], which the control
//! channel uses, then moves the tags first and reads it again.

use std::marker::PhantomData;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IgnoredAny, MapAccess, VariantAccess,
    Visitor,
};
use serde::{Deserialize, Deserializer};

/// The words of the error when a tag is not an object's first key: [`from_json`] looks for it.
const NOT_FIRST: &str = "must be the first key of this object";

/// The tag keys of this crate's internally tagged enums.
const TAGS: [&str; 4] = ["type", "kind", "status", "event"];

/// Reads `T`, an externally tagged enum (`{"open": {…}}` to serde), from a map whose first
/// key is `tag` and whose value names the variant; the map's other entries are the variant's
/// fields.
pub fn tag_first<'de, D, T>(deserializer: D, tag: &'static str) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_map(TagFirst {
        tag,
        wanted: PhantomData,
    })
}

struct TagFirst<T> {
    tag: &'static str,
    wanted: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for TagFirst<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "an object with `{}` first", self.tag)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        match map.next_key::<String>()? {
            Some(key) if key == self.tag => T::deserialize(VariantAfterTag { map }),
            Some(_) => Err(de::Error::custom(format_args!(
                "`{}` {NOT_FIRST}",
                self.tag
            ))),
            None => Err(de::Error::missing_field(self.tag)),
        }
    }
}

/// The rest of the map, seen as an enum: the tag's value names the variant, the entries after
/// it are the variant's fields.
struct VariantAfterTag<A> {
    map: A,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for VariantAfterTag<A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for VariantAfterTag<A> {
    type Error = A::Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(
        mut self,
        seed: S,
    ) -> Result<(S::Value, Self), A::Error> {
        let variant = self.map.next_value_seed(seed)?;
        Ok((variant, self))
    }
}

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for VariantAfterTag<A> {
    type Error = A::Error;

    /// A variant without fields ignores any that are there, as serde's derive does.
    fn unit_variant(mut self) -> Result<(), A::Error> {
        while self.map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        seed.deserialize(de::value::MapAccessDeserializer::new(self.map))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, A::Error> {
        Err(de::Error::custom(
            "a tagged object cannot hold a tuple variant",
        ))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.map)
    }
}

/// Parses JSON text into `T`, whose tagged objects may have their tags anywhere: the fast path
/// reads it as serde wrote it; only when a tag was not first is the text parsed as a tree, each
/// object's tag moved to its front, and read again.
pub fn from_json<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    match serde_json::from_str(text) {
        Err(e) if e.to_string().contains(NOT_FIRST) => {
            let mut tree: serde_json::Value = serde_json::from_str(text)?;
            tags_first(&mut tree);
            serde_json::from_str(&tree.to_string())
        }
        read => read,
    }
}

/// Moves every object's tag keys to its front, all through the tree.
fn tags_first(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for tag in TAGS.iter().rev() {
                if let Some(v) = map.shift_remove(*tag) {
                    map.shift_insert(0, (*tag).to_string(), v);
                }
            }
            map.values_mut().for_each(tags_first);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(tags_first),
        _ => {}
    }
}

/// Declares an internally tagged enum (serialized by serde's derive with `tag` and `rename_all`)
/// whose `Deserialize` reads the tag first ([`tag_first`]). Written like the enum itself, with
/// `tag` and `rename_all` before it; the derive list names `Serialize` but not `Deserialize`.
/// Variants are unit or struct variants; `@cfg(feature = "x")` before a variant's attributes
/// builds it (and its reading) only with that feature.
#[macro_export]
macro_rules! tagged_enum {
    (
        tag = $tag:literal, rename_all = $rename:literal;
        $(#[$attr:meta])*
        $vis:vis enum $name:ident {
            $(
                $(@cfg($cfg:meta))?
                $(#[$vattr:meta])*
                $variant:ident $({
                    $( $(#[$fattr:meta])* $field:ident : $fty:ty ),* $(,)?
                })?
            ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[serde(tag = $tag, rename_all = $rename)]
        $vis enum $name {
            $(
                $(#[cfg($cfg)])?
                $(#[$vattr])*
                $variant $({ $( $(#[$fattr])* $field : $fty ),* })?
            ),*
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                /// The same enum, externally tagged to serde: what follows the tag.
                #[derive(::serde::Deserialize)]
                #[serde(rename_all = $rename)]
                #[allow(clippy::large_enum_variant, dead_code)]
                enum Wire {
                    $(
                        $(#[cfg($cfg)])?
                        $(#[$vattr])*
                        $variant $({ $( $(#[$fattr])* $field : $fty ),* })?
                    ),*
                }
                let wire: Wire = $crate::tagged::tag_first(deserializer, $tag)?;
                Ok(match wire {
                    $(
                        $(#[cfg($cfg)])?
                        Wire::$variant $({ $($field),* })? => $name::$variant $({ $($field),* })?
                    ),*
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use std::time::Duration;

    use super::from_json;
    use crate::units::serde_secs;

    crate::tagged_enum! {
        tag = "type", rename_all = "snake_case";
        #[derive(Debug, PartialEq, Serialize)]
        enum Msg {
            Ping,
            Say {
                words: String,
                #[serde(default)]
                loud: Option<bool>,
            },
            Wait {
                #[serde(with = "serde_secs")]
                time: Duration,
                inner: Inner,
            },
        }
    }

    crate::tagged_enum! {
        tag = "kind", rename_all = "lowercase";
        #[derive(Debug, PartialEq, Serialize)]
        enum Inner {
            Small,
            Big { size: u64 },
        }
    }

    crate::tagged_enum! {
        tag = "type", rename_all = "snake_case";
        #[derive(Debug, PartialEq, Serialize)]
        enum Gated {
            Kept,
            @cfg(any())
            /// Never built: `any()` is false.
            Left { size: u64 },
        }
    }

    #[test]
    fn a_variant_left_out_by_its_cfg_is_not_read() {
        assert_eq!(
            serde_json::from_str::<Gated>(r#"{"type":"kept"}"#).map_err(|e| e.to_string()),
            Ok(Gated::Kept)
        );
        let err = serde_json::from_str::<Gated>(r#"{"type":"left","size":1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown variant `left`"), "{err}");
    }

    fn read(text: &str) -> Result<Msg, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn what_serde_writes_reads_back() {
        for msg in [
            Msg::Ping,
            Msg::Say {
                words: "hi".into(),
                loud: Some(true),
            },
            Msg::Wait {
                time: Duration::from_millis(1500),
                inner: Inner::Big { size: 7 },
            },
        ] {
            let text = serde_json::to_string(&msg).unwrap();
            assert_eq!(read(&text), Ok(msg), "{text}");
        }
        assert_eq!(
            serde_json::to_string(&Msg::Say {
                words: "hi".into(),
                loud: None
            })
            .unwrap(),
            r#"{"type":"say","words":"hi","loud":null}"#
        );
    }

    #[test]
    fn bytes_in_the_tagged_shape() {
        assert_eq!(read(r#"{"type":"ping"}"#), Ok(Msg::Ping));
        // A unit variant ignores fields it does not have, as serde's derive does.
        assert_eq!(
            read(r#"{"type":"ping","extra":[1,{"a":2}]}"#),
            Ok(Msg::Ping)
        );
        // Defaults and unknown fields as the derive: `loud` missing, `x` ignored.
        assert_eq!(
            read(r#"{"type":"say","x":1,"words":"a"}"#),
            Ok(Msg::Say {
                words: "a".into(),
                loud: None
            })
        );
        assert_eq!(
            read(r#"{"type":"wait","time":0.25,"inner":{"kind":"small"}}"#),
            Ok(Msg::Wait {
                time: Duration::from_millis(250),
                inner: Inner::Small
            })
        );
    }

    #[test]
    fn bad_objects_are_refused_in_words() {
        let refused = |text: &str, words: &str| {
            let e = read(text).unwrap_err();
            assert!(e.contains(words), "{text}: {e}");
        };
        refused(r#"{"type":"shout"}"#, "unknown variant `shout`");
        refused(r#"{"type":"say"}"#, "missing field `words`");
        refused(r#"{"type":"say","words":5}"#, "invalid type");
        refused(
            r#"{"type":"say","words":"a","words":"b"}"#,
            "duplicate field `words`",
        );
        refused(r#"{}"#, "missing field `type`");
        refused(r#"{"type":7}"#, "invalid type");
        refused(
            r#"{"words":"a","type":"say"}"#,
            "`type` must be the first key",
        );
        refused(r#"["say"]"#, "invalid type");
        refused(r#"{"type":"ping""#, "EOF");
    }

    #[test]
    fn from_json_takes_tags_anywhere() {
        assert_eq!(
            from_json::<Msg>(r#"{"words":"a","type":"say"}"#).unwrap(),
            Msg::Say {
                words: "a".into(),
                loud: None
            }
        );
        assert_eq!(
            from_json::<Msg>(r#"{"inner":{"size":3,"kind":"big"},"time":1,"type":"wait"}"#)
                .unwrap(),
            Msg::Wait {
                time: Duration::from_secs(1),
                inner: Inner::Big { size: 3 }
            }
        );
        // Still refused when it is wrong for another reason.
        let e = from_json::<Msg>(r#"{"words":"a","type":"shout"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant"), "{e}");
    }
}
