//! A page of HubSpot search results read and mapped in the same pass over HubSpot's text: each
//! record's properties are filtered ([`Shown`]) and written out as they are read, so no
//! property is scanned twice and no per-record list of them is built.

use super::{FoundRecord, Shown, UNASKED_ECHOES};
use crate::crma::wire::Paging;
use crate::raw_json::{self, Key, ObjectText, ObjectWriter};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// What a page holds once read: `total`, the records as shown, and `paging`.
pub(super) struct ReadPage {
    pub(super) total: u64,
    pub(super) results: Vec<FoundRecord>,
    pub(super) paging: Option<Paging>,
}

/// Reads HubSpot's search answer (`{total, results: [{id, properties, ...}], paging}`, as
/// [`super::SearchAnswer`] cites), showing each record as `shown` says.
pub(super) fn read(body: &[u8], shown: &Shown<'_>) -> Result<ReadPage, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let page = PageSeed(shown).deserialize(&mut de)?;
    de.end()?;
    Ok(page)
}

struct PageSeed<'s, 'a>(&'s Shown<'a>);

impl<'de> DeserializeSeed<'de> for PageSeed<'_, '_> {
    type Value = ReadPage;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ReadPage, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_, '_> {
    type Value = ReadPage;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("HubSpot's search answer, a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadPage, A::Error> {
        let (mut total, mut results, mut paging) = (None, None, None);
        while let Some(Key(name)) = map.next_key()? {
            match name.as_ref() {
                "total" => total = Some(map.next_value()?),
                "results" => results = Some(map.next_value_seed(ResultsSeed(self.0))?),
                "paging" => paging = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(ReadPage {
            total: total.ok_or_else(|| de::Error::missing_field("total"))?,
            results: results.unwrap_or_default(),
            paging,
        })
    }
}

struct ResultsSeed<'s, 'a>(&'s Shown<'a>);

impl<'de> DeserializeSeed<'de> for ResultsSeed<'_, '_> {
    type Value = Vec<FoundRecord>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ResultsSeed<'_, '_> {
    type Value = Vec<FoundRecord>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut records = Vec::with_capacity(seq.size_hint().unwrap_or(100).min(200));
        while let Some(record) = seq.next_element_seed(RecordSeed(self.0))? {
            records.push(record);
        }
        Ok(records)
    }
}

struct RecordSeed<'s, 'a>(&'s Shown<'a>);

impl<'de> DeserializeSeed<'de> for RecordSeed<'_, '_> {
    type Value = FoundRecord;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FoundRecord, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RecordSeed<'_, '_> {
    type Value = FoundRecord;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a record, a JSON object with id and properties")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FoundRecord, A::Error> {
        let (mut id, mut properties): (Option<String>, _) = (None, None);
        while let Some(Key(name)) = map.next_key()? {
            match name.as_ref() {
                "id" => id = Some(map.next_value()?),
                "properties" => properties = Some(map.next_value_seed(PropertiesSeed(self.0))?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let id = id.ok_or_else(|| de::Error::missing_field("id"))?;
        let text = properties.ok_or_else(|| de::Error::missing_field("properties"))?;
        let record_url = self
            .0
            .links
            .as_ref()
            .and_then(|(links, object_type)| links.url(object_type, &id));
        Ok(FoundRecord {
            id,
            properties: ObjectText::new(text).map_err(de::Error::custom)?,
            record_url,
            created_at: None,
            updated_at: None,
        })
    }
}

/// A record's properties, written out as read: only those [`Shown`] keeps, in HubSpot's order,
/// each value's text as HubSpot sent it.
struct PropertiesSeed<'s, 'a>(&'s Shown<'a>);

impl<'de> DeserializeSeed<'de> for PropertiesSeed<'_, '_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PropertiesSeed<'_, '_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a record's properties, a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let shown = self.0;
        let mut text = String::with_capacity(256);
        let mut object = ObjectWriter::open(&mut text);
        while let Some(Key(name)) = map.next_key()? {
            let value: &RawValue = map.next_value()?;
            let keep = (shown.include_empty || !raw_json::is_null(value))
                && (!UNASKED_ECHOES.contains(&name.as_ref())
                    || shown.asked.iter().any(|p| p.as_str() == name));
            if keep {
                object.read_key(&name).push_str(value.get());
            }
        }
        object.close();
        Ok(text)
    }
}
