//! Maps collected from their pairs through one instantiation per map type.
//!
//! `BTreeMap::from_iter` sorts its pairs with a stable sort instantiated for each iterator type
//! it is called with, about 8 KB of component code per call site; collecting into a `Vec`
//! first and building the map here keeps one copy of that sort per map type. The result is
//! what `collect()` would make: sorted by key, the last of equal keys kept.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A JSON object from its members.
#[inline(never)]
pub(crate) fn json_object(members: Vec<(String, Value)>) -> Map<String, Value> {
    members.into_iter().collect()
}

/// A map keyed by text from its pairs.
#[inline(never)]
pub(crate) fn by_text<V>(pairs: Vec<(String, V)>) -> BTreeMap<String, V> {
    pairs.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_sorted_by_name_and_the_last_of_a_repeated_name_wins() {
        let object = json_object(vec![
            ("b".into(), json!(1)),
            ("a".into(), json!(2)),
            ("b".into(), json!(3)),
        ]);
        assert_eq!(Value::Object(object), json!({"a": 2, "b": 3}));
        let map = by_text(vec![("z".into(), 1), ("y".into(), 2), ("z".into(), 3)]);
        assert_eq!(
            map.into_iter().collect::<Vec<_>>(),
            [("y".into(), 2), ("z".into(), 3)]
        );
    }
}
