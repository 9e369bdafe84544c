//! Records passed from a CRM's answer to the tool's answer in one pass over the text: an object's
//! members are read as borrowed JSON text ([`Members`]), in the order the CRM sent them, and
//! written out again ([`ObjectWriter`]) with only what the mapping changes. No `Value` tree is
//! built for a record and serialised again, and every field keeps its place.

mod objects;

pub(crate) use objects::ObjectTexts;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// One member of a JSON object as the CRM sent it: its name (borrowed unless it had escapes)
/// and its value's text, unparsed.
pub(crate) type Member<'a> = (Cow<'a, str>, &'a RawValue);

/// The text of the member `name` (exact case) of an object's `members`, if present.
pub(crate) fn member<'a>(members: &[Member<'a>], name: &str) -> Option<&'a RawValue> {
    members.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
}

/// One JSON object's members as the CRM sent them, in order.
#[derive(Debug, Default)]
pub(crate) struct Members<'a>(pub(crate) Vec<Member<'a>>);

impl<'a> Members<'a> {
    /// Reads the members of `object`, which must be a JSON object.
    pub(crate) fn of(object: &'a RawValue) -> Result<Self, serde_json::Error> {
        serde_json::from_str(object.get())
    }

    /// As [`Members::of`], into `into` (cleared first): a buffer reused from one object to the
    /// next costs no allocation per object.
    pub(crate) fn read_into(
        object: &'a RawValue,
        into: &mut Vec<Member<'a>>,
    ) -> Result<(), serde_json::Error> {
        into.clear();
        let mut reader = serde_json::Deserializer::from_str(object.get());
        Fill(into).deserialize(&mut reader)?;
        reader.end()
    }

    /// The text of the member `name` (exact case), if present.
    pub(crate) fn get(&self, name: &str) -> Option<&'a RawValue> {
        member(&self.0, name)
    }
}

/// A list of JSON objects (a page's records), each one's members read in the same pass as the
/// list itself, into one buffer: no object's text is scanned a second time to find them.
#[derive(Debug, Default)]
pub(crate) struct ObjectList<'a> {
    members: Vec<Member<'a>>,
    /// Where each object's members end in `members`.
    ends: Vec<usize>,
}

impl<'a> ObjectList<'a> {
    /// Each object's members, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[Member<'a>]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.members[start..end])
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ObjectList<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ListVisitor<'a> {
            type Value = ObjectList<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of JSON objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ObjectList<'a>, A::Error> {
                let mut list = ObjectList::default();
                while seq.next_element_seed(Fill(&mut list.members))?.is_some() {
                    list.ends.push(list.members.len());
                }
                Ok(list)
            }
        }
        deserializer.deserialize_seq(ListVisitor(std::marker::PhantomData))
    }
}

/// Reads an object's members into a buffer, after any it holds.
struct Fill<'v, 'a>(&'v mut Vec<Member<'a>>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Fill<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Fill<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
            self.0.push((name, map.next_value()?));
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut members = Vec::with_capacity(16);
        Fill(&mut members).deserialize(deserializer)?;
        Ok(Members(members))
    }
}

/// A member name, borrowed from the answer when it has no escapes.
pub(crate) struct Key<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Where a member read from `source` stands in it, when it is written compactly there
/// (`"name":value`, nothing between the colon and its neighbours): from its name's opening
/// quote to the end of its value. `None` when its name had escapes (it was copied, so it is
/// not in `source`), it was read from other text, or it has spaces around its colon (a CRM or
/// proxy that pretty-prints): what is copied as it is must be as compact as what is written.
/// Two members one comma apart ([`joins`]) are copied as one run.
pub(crate) fn span_of(source: &str, (name, value): &Member<'_>) -> Option<Range<usize>> {
    let Cow::Borrowed(name) = name else {
        return None;
    };
    let base = source.as_ptr() as usize;
    let start = (name.as_ptr() as usize).checked_sub(base)?.checked_sub(1)?;
    let value = value.get();
    let value_start = (value.as_ptr() as usize).checked_sub(base)?;
    let end = value_start + value.len();
    let compact = value_start == start + name.len() + 3; // `"`, name, `"`, `:`
    (compact && end <= source.len() && source.as_bytes()[start] == b'"').then_some(start..end)
}

/// Whether the member at `next` follows the run ending at `run` with only a comma between.
pub(crate) fn joins(run: &Range<usize>, next: &Range<usize>) -> bool {
    next.start == run.end + 1
}

/// The text of a JSON string value, when `value` is a string without escapes (record ids,
/// type names): read without allocating.
pub(crate) fn plain_str(value: &RawValue) -> Option<&str> {
    let text = value.get().trim();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains(['\\', '"'])).then_some(inner)
}

/// Whether a value's text is JSON `null`.
pub(crate) fn is_null(value: &RawValue) -> bool {
    value.get().trim() == "null"
}

/// Whether a value's text is a JSON object.
pub(crate) fn is_object(value: &RawValue) -> bool {
    value.get().trim_start().starts_with('{')
}

/// Writes one JSON object member by member into a text buffer.
pub(crate) struct ObjectWriter<'o> {
    out: &'o mut String,
    first: bool,
}

impl<'o> ObjectWriter<'o> {
    /// Starts an object at the end of `out`.
    pub(crate) fn open(out: &'o mut String) -> Self {
        out.push('{');
        ObjectWriter { out, first: true }
    }

    /// Writes `"name":` and hands back the buffer for the value, which the caller must write.
    pub(crate) fn key(&mut self, name: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        push_str(self.out, name);
        self.out.push(':');
        self.out
    }

    /// As [`ObjectWriter::key`], for a name read from JSON text ([`Key`]): one borrowed from
    /// that text had no escapes, and JSON allows no unescaped quote, backslash or control
    /// character in a string, so it is copied without a look at each byte.
    #[expect(
        clippy::ptr_arg,
        reason = "whether the name is borrowed is what matters here"
    )]
    pub(crate) fn read_key(&mut self, name: &Cow<'_, str>) -> &mut String {
        match name {
            Cow::Borrowed(plain) => {
                if !self.first {
                    self.out.push(',');
                }
                self.first = false;
                self.out.reserve(plain.len() + 3);
                self.out.push('"');
                self.out.push_str(plain);
                self.out.push_str("\":");
                self.out
            }
            Cow::Owned(escaped) => self.key(escaped),
        }
    }

    /// Members copied whole from the text they were read from ([`span_of`]): one copy for a
    /// run of members the mapping leaves as they are, not one per name and value.
    pub(crate) fn members_text(&mut self, members: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push_str(members);
    }

    /// A member whose value is JSON text already (checked when it was read).
    pub(crate) fn raw(&mut self, name: &str, value: &str) {
        self.key(name).push_str(value);
    }

    /// A member whose value is a string.
    pub(crate) fn string(&mut self, name: &str, value: &str) {
        let out = self.key(name);
        push_str(out, value);
    }

    /// Ends the object.
    pub(crate) fn close(self) {
        self.out.push('}');
    }
}

/// Appends `text` as a JSON string. Names and values without characters to escape, nearly all
/// of them, are copied as they are.
pub(crate) fn push_str(out: &mut String, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(text.len() + 2);
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        let escaped = serde_json::to_string(text).expect("a string serialises");
        out.push_str(&escaped);
    }
}

/// Text a mapper wrote, kept as it is. It is JSON by construction: every value in it is text
/// the page's own parse checked, or a string [`push_str`] escaped, and every name was read
/// from JSON without escapes or escaped again. Parsing it once more cost a fifth of the
/// component's mapping time, so only test builds (debug assertions) check it again, and
/// every test then checks every record it maps.
fn written(text: &str) -> Result<(), serde_json::Error> {
    if cfg!(debug_assertions) {
        serde_json::from_str::<&RawValue>(text)?;
    }
    Ok(())
}

/// Serialises `json` as it stands, through serde_json's raw-value protocol (the one
/// [`RawValue`]'s own `Serialize` uses): serde_json writes it verbatim, and `to_value` parses it.
fn emit_raw<S: Serializer>(json: &str, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut raw = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
    raw.serialize_field(RAW_VALUE_TOKEN, json)?;
    raw.end()
}

/// The struct name serde_json's serialisers take as "raw JSON follows" (`serde_json::raw::TOKEN`,
/// not exported). A test checks it still is.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A JSON object written by a mapper, carried to the tool's answer as text: serialised as it
/// is, and described in the output schema as an open object, which clients validate in one
/// step rather than field by field.
#[derive(Debug, Clone)]
pub(crate) struct ObjectText(String);

impl ObjectText {
    /// Wraps text a mapper wrote with [`ObjectWriter`].
    pub(crate) fn new(text: String) -> Result<Self, serde_json::Error> {
        written(&text)?;
        Ok(ObjectText(text))
    }

    /// A map already held as a `Value` tree, written as text.
    pub(crate) fn of(map: &serde_json::Map<String, serde_json::Value>) -> Self {
        ObjectText(serde_json::to_string(map).expect("a JSON map serialises"))
    }

    /// The object's JSON text.
    pub(crate) fn get(&self) -> &str {
        &self.0
    }
}

impl Serialize for ObjectText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        emit_raw(&self.0, serializer)
    }
}

impl JsonSchema for ObjectText {
    fn schema_name() -> Cow<'static, str> {
        "ObjectText".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object"})
    }
}

/// A JSON array written by a mapper, carried to the answer as text: a table's row.
#[derive(Debug, Clone)]
pub(crate) struct ArrayText(String);

impl ArrayText {
    /// The values of `record` in the order of `fields`, `null` where it has none.
    pub(crate) fn row(fields: &[&str], record: &Members<'_>) -> Result<Self, serde_json::Error> {
        let mut text = String::from("[");
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(record.get(field).map_or("null", |v| v.get()));
        }
        text.push(']');
        written(&text)?;
        Ok(ArrayText(text))
    }
}

impl Serialize for ArrayText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        emit_raw(&self.0, serializer)
    }
}

/// The output schema of a page of mapped records: an array whose records its description
/// names in words. A validating client then checks the list once instead of walking a schema
/// per record: the Python SDK spent 0.35 ms per 100 records on that walk alone.
pub(crate) fn records_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_the_order_and_text_they_came_in() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"b":1.50,"a":{"x":[1, 2]},"c\u0041":"q\"t","d":null}"#)
                .unwrap();
        let members = Members::of(&raw).unwrap();
        let names: Vec<&str> = members.0.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(names, ["b", "a", "cA", "d"]);
        assert_eq!(members.get("b").unwrap().get(), "1.50");
        assert_eq!(members.get("a").unwrap().get(), r#"{"x":[1, 2]}"#);
        assert!(is_object(members.get("a").unwrap()));
        assert!(is_null(members.get("d").unwrap()));
        assert_eq!(plain_str(members.get("cA").unwrap()), None, "escaped");
        assert!(Members::of(&RawValue::from_string("[1]".into()).unwrap()).is_err());
    }

    #[test]
    fn a_members_span_is_found_only_where_it_is_written_compactly_in_its_own_text() {
        let text = r#"{"a":1,"b\u0041":2, "c":[3],"d" : 4,"e":5}"#;
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        let members = Members::of(&raw).unwrap();
        let spans: Vec<_> = members.0.iter().map(|m| span_of(raw.get(), m)).collect();
        assert_eq!(
            spans,
            [Some(1..6), None, Some(20..27), None, Some(36..41)],
            "an escaped name is a copy; spaces around a colon are not copied"
        );
        assert_eq!(&raw.get()[1..6], r#""a":1"#);
        assert_eq!(&raw.get()[20..27], r#""c":[3]"#);
        assert!(!joins(&(1..6), &(20..27)), "not one comma apart");
        assert!(joins(&(1..6), &(7..12)));
        let elsewhere = r#"{"a":1,"bA":2, "c":[3]}"#.to_string();
        assert_eq!(span_of(&elsewhere, &members.0[0]), None);
        assert_eq!(span_of(&raw.get()[..25], &members.0[2]), None, "cut short");
        assert_eq!(
            span_of(&raw.get()[2..], &members.0[0]),
            None,
            "its quote cut off"
        );
    }

    #[test]
    fn a_list_reads_each_objects_members_apart_and_refuses_anything_else() {
        let list: ObjectList<'_> =
            serde_json::from_str(r#"[{"a":1,"b":"x"},{},{"c":[{"d":2}]}]"#).unwrap();
        let objects: Vec<Vec<(&str, &str)>> = list
            .iter()
            .map(|members| members.iter().map(|(k, v)| (k.as_ref(), v.get())).collect())
            .collect();
        assert_eq!(
            objects,
            [
                vec![("a", "1"), ("b", r#""x""#)],
                vec![],
                vec![("c", r#"[{"d":2}]"#)]
            ]
        );
        assert_eq!(
            serde_json::from_str::<ObjectList<'_>>("[]")
                .unwrap()
                .iter()
                .count(),
            0
        );
        for not_objects in ["[1]", r#"[{"a":1},"b"]"#, r#"{"a":1}"#, "[{]"] {
            assert!(
                serde_json::from_str::<ObjectList<'_>>(not_objects).is_err(),
                "{not_objects}"
            );
        }
    }

    #[test]
    fn members_written_back_by_their_read_names_give_the_same_object() {
        let text = r#"{"b":1.50,"a\"q":{"x":[1, 2]},"c\u0041":"q\"t","\n":null,"é":"ü"}"#;
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        let members = Members::of(&raw).unwrap();
        let mut out = String::new();
        let mut object = ObjectWriter::open(&mut out);
        for (name, value) in &members.0 {
            object.read_key(name).push_str(value.get());
        }
        object.close();
        let written = ObjectText::new(out).unwrap();
        let back: serde_json::Value = serde_json::from_str(written.get()).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }

    #[test]
    fn written_objects_are_valid_json_whatever_the_names() {
        let mut out = String::new();
        let mut object = ObjectWriter::open(&mut out);
        object.raw("n", "12");
        object.string("s\"q", "line\nbreak");
        object.close();
        let text = ObjectText::new(out).unwrap();
        let back: serde_json::Value = serde_json::from_str(text.get()).unwrap();
        assert_eq!(back, serde_json::json!({"n": 12, "s\"q": "line\nbreak"}));
        // serde_json still takes the raw-value token: written verbatim, and parsed by to_value.
        assert_eq!(
            serde_json::to_string(&[&text]).unwrap(),
            format!("[{}]", text.get())
        );
        assert_eq!(
            serde_json::to_value(&text).unwrap(),
            serde_json::json!({"n": 12, "s\"q": "line\nbreak"})
        );
    }
}
