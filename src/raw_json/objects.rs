//! A page of records written one after another into one buffer, as the text of a JSON array:
//! no allocation per record, and the array serialised as it stands, in one copy.

use super::{Members, emit_raw, written};
use serde::{Serialize, Serializer};
use std::ops::Range;

/// JSON objects in one buffer, `[a,b,...]`, each one's place kept.
#[derive(Debug, Clone)]
pub(crate) struct ObjectTexts {
    /// Always a whole JSON array: `[`, the objects separated by commas, `]`.
    text: String,
    /// Where each object stands in `text`.
    spans: Vec<Range<usize>>,
}

impl Default for ObjectTexts {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl ObjectTexts {
    /// An empty list with room for `bytes` of objects.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        let mut text = String::with_capacity(bytes + 2);
        text.push_str("[]");
        ObjectTexts {
            text,
            spans: Vec::new(),
        }
    }

    /// Adds the object `write` writes at the end of the buffer it is given (with
    /// [`super::ObjectWriter`]). When `write` fails nothing of it is kept.
    pub(crate) fn push_with<E>(
        &mut self,
        write: impl FnOnce(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        let before = self.text.len();
        self.text.pop(); // the closing `]`
        if !self.spans.is_empty() {
            self.text.push(',');
        }
        let start = self.text.len();
        match write(&mut self.text) {
            Ok(()) => {
                debug_assert!(written(&self.text[start..]).is_ok(), "a mapper wrote JSON");
                self.spans.push(start..self.text.len());
                self.text.push(']');
                Ok(())
            }
            Err(err) => {
                self.text.truncate(before - 1);
                self.text.push(']');
                Err(err)
            }
        }
    }

    /// How many objects the list holds.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the list holds no object.
    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Each object's JSON text, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.spans.iter().map(|span| &self.text[span.clone()])
    }

    /// Each object's members, in order.
    pub(crate) fn members(&self) -> impl Iterator<Item = Result<Members<'_>, serde_json::Error>> {
        self.iter().map(serde_json::from_str)
    }

    /// Keeps the first `n` objects.
    pub(crate) fn truncate(&mut self, n: usize) {
        if n >= self.spans.len() {
            return;
        }
        self.spans.truncate(n);
        self.text
            .truncate(self.spans.last().map_or(1, |last| last.end));
        self.text.push(']');
    }

    /// Drops the first `n` objects.
    pub(crate) fn skip(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let mut rest = ObjectTexts::default();
        if n < self.spans.len() {
            let (first, last) = (&self.spans[n], &self.spans[self.spans.len() - 1]);
            rest.text = format!("[{}]", &self.text[first.start..last.end]);
            let shift = first.start - 1;
            rest.spans = self.spans[n..]
                .iter()
                .map(|s| s.start - shift..s.end - shift)
                .collect();
        }
        *self = rest;
    }

    /// Adds the first `n` objects of `other` after these.
    pub(crate) fn extend_from(&mut self, other: &ObjectTexts, n: usize) {
        let taken = &other.spans[..n.min(other.spans.len())];
        let (Some(first), Some(last)) = (taken.first(), taken.last()) else {
            return;
        };
        self.text.pop();
        if !self.spans.is_empty() {
            self.text.push(',');
        }
        let offset = self.text.len();
        // The objects and the commas between them, in one copy.
        self.text.push_str(&other.text[first.start..last.end]);
        self.text.push(']');
        self.spans.extend(
            taken
                .iter()
                .map(|span| span.start - first.start + offset..span.end - first.start + offset),
        );
    }
}

impl Serialize for ObjectTexts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        emit_raw(&self.text, serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn list(objects: &[&str]) -> ObjectTexts {
        let mut list = ObjectTexts::default();
        for object in objects {
            list.push_with(|out| {
                out.push_str(object);
                Ok::<_, ()>(())
            })
            .unwrap();
        }
        list
    }

    fn json_of(list: &ObjectTexts) -> Value {
        serde_json::from_str(&serde_json::to_string(list).unwrap()).unwrap()
    }

    #[test]
    fn the_list_is_always_a_json_array_of_its_objects() {
        let empty = ObjectTexts::default();
        assert_eq!(json_of(&empty), json!([]));
        let mut three = list(&[r#"{"a":1}"#, "{}", r#"{"b":[2]}"#]);
        assert_eq!(three.len(), 3);
        assert_eq!(json_of(&three), json!([{"a": 1}, {}, {"b": [2]}]));
        assert_eq!(three.iter().nth(2), Some(r#"{"b":[2]}"#));
        let failed = three.push_with(|out| {
            out.push_str(r#"{"half":"#);
            Err("broken")
        });
        assert_eq!(failed, Err("broken"));
        assert_eq!(
            json_of(&three),
            json!([{"a": 1}, {}, {"b": [2]}]),
            "nothing kept"
        );
        three.truncate(1);
        assert_eq!(json_of(&three), json!([{"a": 1}]));
        three.truncate(0);
        assert_eq!(json_of(&three), json!([]));
        assert_eq!(three.iter().count(), 0);
    }

    #[test]
    fn objects_from_another_list_follow_these_in_order() {
        let mut first = list(&[r#"{"a":1}"#]);
        let second = list(&[r#"{"b":2}"#, r#"{"c":3}"#, r#"{"d":4}"#]);
        first.extend_from(&second, 2);
        assert_eq!(json_of(&first), json!([{"a": 1}, {"b": 2}, {"c": 3}]));
        assert_eq!(first.iter().nth(2), Some(r#"{"c":3}"#));
        let mut empty = ObjectTexts::default();
        empty.extend_from(&second, 5);
        assert_eq!(
            empty.iter().collect::<Vec<_>>(),
            second.iter().collect::<Vec<_>>()
        );
        empty.extend_from(&second, 0);
        assert_eq!(empty.len(), 3);
        let members: Vec<_> = empty.members().map(|m| m.unwrap().0.len()).collect();
        assert_eq!(members, [1, 1, 1]);
    }
}
