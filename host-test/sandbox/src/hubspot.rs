//! The sandbox's HubSpot: CRM objects with search, create, update and company merge, v4
//! associations, owners, users, roles, teams, pipelines, property definitions and account
//! details, answering in HubSpot's own JSON shapes (including its error bodies).
//!
//! As strict as a real portal where a lenient fake would hide a bug: search lags behind
//! writes (a record created moments ago is not yet searchable), archived records are reachable
//! only with `archived=true`, listings page with opaque `after` tokens, `date` properties take
//! only midnight-UTC values, and a second contact with the same email is a `CONFLICT`.

mod search;
mod seed;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Requests that pass before a created record shows up in search (HubSpot: "search is
/// eventually consistent"; a record created seconds ago may be missing).
const SEARCH_LAG_REQUESTS: u64 = 3;

/// Standard object types by name and type id.
const TYPES: &[(&str, &str)] = &[
    ("contacts", "0-1"),
    ("companies", "0-2"),
    ("deals", "0-3"),
    ("tasks", "0-27"),
    ("notes", "0-46"),
    ("meetings", "0-47"),
    ("calls", "0-48"),
    ("emails", "0-49"),
];

/// Default association type ids the sandbox reports (HubSpot's HUBSPOT_DEFINED table).
fn default_type_id(from: &str, to: &str) -> u32 {
    match (from, to) {
        ("contacts", "companies") => 279,
        ("companies", "contacts") => 280,
        ("deals", "contacts") => 3,
        ("contacts", "deals") => 4,
        ("deals", "companies") => 341,
        ("companies", "deals") => 342,
        ("notes", "contacts") => 202,
        ("notes", "companies") => 190,
        ("notes", "deals") => 214,
        ("calls", "contacts") => 194,
        ("calls", "companies") => 182,
        ("calls", "deals") => 206,
        ("emails", "contacts") => 198,
        ("emails", "companies") => 186,
        ("emails", "deals") => 210,
        ("meetings", "contacts") => 200,
        ("meetings", "companies") => 188,
        ("meetings", "deals") => 212,
        ("tasks", "contacts") => 204,
        ("tasks", "companies") => 192,
        ("tasks", "deals") => 216,
        // A record to an activity: one below the activity-to-record id (contact → note 201).
        (_, activity) if is_activity(activity) && !is_activity(from) => {
            default_type_id(activity, from) - 1
        }
        _ => 1,
    }
}

fn is_activity(name: &str) -> bool {
    matches!(name, "notes" | "calls" | "emails" | "meetings" | "tasks")
}

/// A type name from a path segment (`deals`, `0-3`).
fn type_name(segment: &str) -> Option<&'static str> {
    TYPES
        .iter()
        .find(|(name, id)| *name == segment || *id == segment)
        .map(|(name, _)| *name)
}

/// One tenant's HubSpot.
pub struct HubSpotData {
    account: Value,
    owners: Vec<Value>,
    users: Vec<Value>,
    roles: Vec<Value>,
    teams: Vec<Value>,
    properties: Map<String, Value>,
    pipelines: Map<String, Value>,
    /// Records by type and id.
    objects: BTreeMap<&'static str, BTreeMap<u64, Value>>,
    /// (from type, from id, to type, to id), each stored in both directions.
    associations: Vec<(&'static str, u64, &'static str, u64)>,
    next_id: u64,
    /// Requests answered so far: the search index's clock.
    requests: u64,
    /// Created records the search index has not caught up with: (type, id) → searchable from.
    unindexed: BTreeMap<(&'static str, u64), u64>,
}

/// An answer: status and JSON body (`Null` for no body).
pub type Answer = (u16, Value);

pub fn error(status: u16, category: &str, message: &str) -> Answer {
    (
        status,
        json!({"status": "error", "message": message, "correlationId": "5a1e7c3d-sandbox", "category": category}),
    )
}

impl HubSpotData {
    pub fn from_json(data: &Value) -> Self {
        let list = |key: &str| data[key].as_array().cloned().unwrap_or_default();
        let mut objects: BTreeMap<&'static str, BTreeMap<u64, Value>> = BTreeMap::new();
        let mut max_id = 0;
        for (name, _) in TYPES {
            let records = objects.entry(name).or_default();
            for record in data["objects"][*name].as_array().into_iter().flatten() {
                let id: u64 = record["id"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                max_id = max_id.max(id);
                records.insert(id, record.clone());
            }
        }
        let mut associations = Vec::new();
        for a in data["associations"].as_array().into_iter().flatten() {
            let part = |i: usize| a[i].as_str().unwrap_or_default();
            if let (Some(from), Some(to)) = (type_name(part(0)), type_name(part(2))) {
                let (f, t) = (part(1).parse().unwrap_or(0), part(3).parse().unwrap_or(0));
                associations.push((from, f, to, t));
                associations.push((to, t, from, f));
            }
        }
        HubSpotData {
            account: data["account"].clone(),
            owners: list("owners"),
            users: list("users"),
            roles: list("roles"),
            teams: list("teams"),
            properties: data["properties"].as_object().cloned().unwrap_or_default(),
            pipelines: data["pipelines"].as_object().cloned().unwrap_or_default(),
            objects,
            associations,
            next_id: max_id + 1,
            requests: 0,
            unindexed: BTreeMap::new(),
        }
    }

    /// Answers one request; `path` is what follows `/sdk/proxy/hubspot/`.
    pub fn answer(
        &mut self,
        method: &str,
        path: &[&str],
        query: Option<&str>,
        body: &[u8],
    ) -> Answer {
        self.requests += 1;
        let query: Vec<(String, String)> = query
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let param = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let body: Value = if body.is_empty() {
            Value::Null
        } else {
            match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(_) => return error(400, "VALIDATION_ERROR", "Invalid input JSON on line 1"),
            }
        };
        match (method, path) {
            ("DELETE", _) => error(405, "METHOD_NOT_ALLOWED", "The sandbox never deletes"),
            ("GET", ["account-info", "v3", "details"]) => (200, self.account.clone()),
            ("GET", ["crm", "v3", "owners"]) => {
                let archived = param("archived") == Some("true");
                let email = param("email");
                let owners: Vec<Value> = self
                    .owners
                    .iter()
                    .filter(|o| o["archived"] == archived)
                    .filter(|o| email.is_none_or(|e| o["email"] == e))
                    .cloned()
                    .collect();
                page(owners, param("limit"), param("after"), 500)
            }
            ("GET", ["settings", "v3", "users"]) => {
                page(self.users.clone(), param("limit"), param("after"), 100)
            }
            ("GET", ["settings", "v3", "users", "roles"]) => (200, json!({"results": self.roles})),
            ("GET", ["settings", "v3", "users", "teams"]) => (200, json!({"results": self.teams})),
            ("GET", ["crm", "v3", "pipelines", object]) => match self.pipelines.get(*object) {
                Some(p) => (200, json!({"results": p})),
                None => error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Unable to infer object type from: {object}"),
                ),
            },
            ("GET", ["crm", "v3", "pipelines", object, pipeline, "stages"]) => {
                let found = self.pipelines.get(*object).and_then(|list| {
                    list.as_array()?
                        .iter()
                        .find(|p| p["id"] == *pipeline)
                        .cloned()
                });
                match found {
                    Some(p) => (200, json!({"results": p["stages"]})),
                    None => error(
                        404,
                        "OBJECT_NOT_FOUND",
                        &format!("Pipeline {pipeline} not found"),
                    ),
                }
            }
            ("GET", ["crm", "v3", "properties", object, name]) => {
                let found = type_name(object).and_then(|t| {
                    self.definitions(t)
                        .iter()
                        .find(|p| p["name"] == *name)
                        .cloned()
                });
                match found {
                    Some(definition) => (200, definition),
                    None => error(
                        404,
                        "OBJECT_NOT_FOUND",
                        &format!("Unable to find property {name} for object type {object}"),
                    ),
                }
            }
            ("GET", ["crm", "v3", "objects", object, id]) if *id != "search" => {
                let archived = param("archived") == Some("true");
                let wanted: Vec<&str> = param("properties")
                    .map(|p| p.split(',').filter(|n| !n.is_empty()).collect())
                    .unwrap_or_default();
                let found = type_name(object)
                    .zip(id.parse::<u64>().ok())
                    .and_then(|(t, id)| self.objects.get(t)?.get(&id))
                    .filter(|r| (r["archived"] == true) == archived);
                match found {
                    Some(record) => (200, search::project(record, &wanted)),
                    None => error(404, "OBJECT_NOT_FOUND", "resource not found"),
                }
            }
            ("GET", ["crm", "v3", "properties", object]) => match type_name(object) {
                Some(name) => (
                    200,
                    json!({"results": self.properties.get(name).cloned().unwrap_or(json!([]))}),
                ),
                None => error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Unable to infer object type from: {object}"),
                ),
            },
            ("POST", ["crm", "v3", "objects", "companies", "merge"]) => self.merge(&body),
            ("POST", ["crm", "v3", "objects", object, "search"]) => match type_name(object) {
                Some(name) => {
                    let now = self.requests;
                    let indexed = self
                        .objects
                        .get(name)
                        .into_iter()
                        .flat_map(|records| records.iter())
                        .filter(|(id, r)| {
                            r["archived"] != true
                                && self
                                    .unindexed
                                    .get(&(name, **id))
                                    .is_none_or(|from| now >= *from)
                        })
                        .map(|(_, r)| r);
                    // `associations.contact EQ 51`: is this record associated with contact 51?
                    let associated = |to: &str, to_id: u64, record: &Value| {
                        let to = match to {
                            "contact" => "contacts",
                            "company" => "companies",
                            "deal" => "deals",
                            _ => return false,
                        };
                        let id = record["id"].as_str().and_then(|i| i.parse().ok());
                        id.is_some_and(|id| self.associations.contains(&(name, id, to, to_id)))
                    };
                    search::search(indexed, self.definitions(name), &associated, &body)
                }
                None => error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Unable to infer object type from: {object}"),
                ),
            },
            ("POST", ["crm", "v3", "objects", object]) => match type_name(object) {
                Some(name) => self.create(name, &body),
                None => error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Unable to infer object type from: {object}"),
                ),
            },
            ("PATCH", ["crm", "v3", "objects", object, id]) => match type_name(object) {
                Some(name) => self.update(name, id, &body),
                None => error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Unable to infer object type from: {object}"),
                ),
            },
            ("GET", ["crm", "v4", "objects", from, id, "associations", to]) => {
                match (type_name(from), type_name(to), id.parse::<u64>()) {
                    (Some(from), Some(to), Ok(id)) => {
                        let results: Vec<Value> = self
                            .associations
                            .iter()
                            .filter(|(f, fid, t, _)| *f == from && *fid == id && *t == to)
                            .map(|(_, _, _, tid)| json!({"toObjectId": tid, "associationTypes": [
                                {"category": "HUBSPOT_DEFINED", "typeId": default_type_id(from, to), "label": null}]}))
                            .collect();
                        page(results, param("limit"), param("after"), 500)
                    }
                    _ => error(400, "VALIDATION_ERROR", "Unknown object type or id"),
                }
            }
            (
                "PUT",
                [
                    "crm",
                    "v4",
                    "objects",
                    from,
                    id,
                    "associations",
                    "default",
                    to,
                    to_id,
                ],
            ) => self.associate(from, id, to, to_id),
            _ => error(404, "OBJECT_NOT_FOUND", "Resource not found"),
        }
    }

    fn exists(&self, object: &str, id: u64) -> bool {
        self.objects
            .get(object)
            .and_then(|r| r.get(&id))
            .is_some_and(|r| r["archived"] != true)
    }

    /// The type's property definitions.
    fn definitions(&self, object: &str) -> &[Value] {
        self.properties
            .get(object)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The body's `properties`, checked against the type's definitions as HubSpot does.
    fn properties_of<'b>(
        &self,
        object: &str,
        body: &'b Value,
    ) -> Result<&'b Map<String, Value>, Answer> {
        let properties = body["properties"].as_object().ok_or_else(|| {
            error(
                400,
                "VALIDATION_ERROR",
                "Invalid input JSON: properties is required",
            )
        })?;
        self.check_properties(object, properties)?;
        Ok(properties)
    }

    fn check_properties(
        &self,
        object: &str,
        properties: &Map<String, Value>,
    ) -> Result<(), Answer> {
        let known = self.properties.get(object).and_then(Value::as_array);
        for (name, value) in properties {
            let exists = known.is_some_and(|list| list.iter().any(|p| p["name"] == *name));
            if !exists {
                let detail = json!([{"isValid": false, "message": format!("Property \"{name}\" does not exist"),
                    "error": "PROPERTY_DOESNT_EXIST", "name": name}]);
                return Err(error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Property values were not valid: {detail}"),
                ));
            }
            if !value.is_string() {
                return Err(error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Invalid input JSON: property {name} must be a string"),
                ));
            }
            let is_date = known
                .and_then(|list| list.iter().find(|p| p["name"] == *name))
                .is_some_and(|p| p["type"] == "date");
            let text = value.as_str().unwrap_or_default();
            if is_date && !text.is_empty() && !is_midnight_utc(text) {
                let detail = json!([{"isValid": false, "message": format!("{text} is not midnight UTC!"),
                    "error": "INVALID_DATE", "name": name}]);
                return Err(error(
                    400,
                    "VALIDATION_ERROR",
                    &format!("Property values were not valid: {detail}"),
                ));
            }
        }
        Ok(())
    }

    fn create(&mut self, object: &'static str, body: &Value) -> Answer {
        let properties = match self.properties_of(object, body) {
            Ok(properties) => properties,
            Err(answer) => return answer,
        };
        if object == "contacts"
            && let Some(email) = properties.get("email").and_then(Value::as_str)
            && let Some((id, _)) = self.objects["contacts"].iter().find(|(_, r)| {
                r["properties"]["email"]
                    .as_str()
                    .is_some_and(|e| e.eq_ignore_ascii_case(email))
            })
        {
            return error(
                409,
                "CONFLICT",
                &format!("Contact already exists. Existing ID: {id}"),
            );
        }
        let mut links = Vec::new();
        for a in body["associations"].as_array().into_iter().flatten() {
            let to_id: u64 = a["to"]["id"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let type_id = a["types"][0]["associationTypeId"].as_u64().unwrap_or(0) as u32;
            let to = TYPES
                .iter()
                .map(|(n, _)| *n)
                .find(|to| default_type_id(object, to) == type_id && self.exists(to, to_id));
            match to {
                Some(to) => links.push((to, to_id)),
                None => {
                    return error(
                        400,
                        "VALIDATION_ERROR",
                        &format!(
                            "One or more associations are invalid: no record {to_id} for association type {type_id}"
                        ),
                    );
                }
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let now = crm_plugin::time::iso_utc(crate::now_millis());
        let now = now.as_str();
        let mut props = properties.clone();
        props.insert("hs_object_id".into(), id.to_string().into());
        props.insert("createdate".into(), now.into());
        props.insert("hs_lastmodifieddate".into(), now.into());
        let record = json!({"id": id.to_string(), "properties": props, "createdAt": now, "updatedAt": now, "archived": false});
        self.objects
            .entry(object)
            .or_default()
            .insert(id, record.clone());
        self.unindexed
            .insert((object, id), self.requests + SEARCH_LAG_REQUESTS);
        for (to, to_id) in links {
            self.associations.push((object, id, to, to_id));
            self.associations.push((to, to_id, object, id));
        }
        (201, record)
    }

    fn update(&mut self, object: &'static str, id: &str, body: &Value) -> Answer {
        let properties = match self.properties_of(object, body) {
            Ok(properties) => properties,
            Err(answer) => return answer,
        };
        let id: u64 = id.parse().unwrap_or(0);
        let live = self.objects.get_mut(object).and_then(|r| r.get_mut(&id));
        let Some(record) = live.filter(|r| r["archived"] != true) else {
            return error(
                404,
                "OBJECT_NOT_FOUND",
                "Object not found.  objectId are usually numeric.",
            );
        };
        for (name, value) in properties {
            record["properties"][name] = value.clone();
        }
        record["updatedAt"] = "2026-11-21T09:30:00Z".into();
        (200, record.clone())
    }

    fn merge(&mut self, body: &Value) -> Answer {
        let id = |key: &str| body[key].as_str().and_then(|s| s.parse::<u64>().ok());
        let (Some(primary), Some(other)) = (id("primaryObjectId"), id("objectIdToMerge")) else {
            return error(
                400,
                "VALIDATION_ERROR",
                "primaryObjectId and objectIdToMerge are required",
            );
        };
        if !self.exists("companies", primary) || !self.exists("companies", other) {
            return error(
                404,
                "OBJECT_NOT_FOUND",
                "Object not found.  objectId are usually numeric.",
            );
        }
        let companies = self.objects.get_mut("companies").expect("companies exist");
        companies.remove(&other);
        for a in &mut self.associations {
            if a.0 == "companies" && a.1 == other {
                a.1 = primary;
            }
            if a.2 == "companies" && a.3 == other {
                a.3 = primary;
            }
        }
        (200, companies[&primary].clone())
    }

    fn associate(&mut self, from: &str, id: &str, to: &str, to_id: &str) -> Answer {
        let (Some(from), Some(to), Ok(id), Ok(to_id)) = (
            type_name(from),
            type_name(to),
            id.parse::<u64>(),
            to_id.parse::<u64>(),
        ) else {
            return error(400, "VALIDATION_ERROR", "Unknown object type or id");
        };
        if !self.exists(from, id) || !self.exists(to, to_id) {
            return error(
                404,
                "OBJECT_NOT_FOUND",
                "Object not found.  objectId are usually numeric.",
            );
        }
        if !self.associations.contains(&(from, id, to, to_id)) {
            self.associations.push((from, id, to, to_id));
            self.associations.push((to, to_id, from, id));
        }
        let spec = |f: &str, t: &str| json!({"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": default_type_id(f, t)});
        (
            200,
            json!({"status": "COMPLETE", "results": [
                {"from": {"id": id.to_string()}, "to": {"id": to_id.to_string()}, "associationSpec": spec(from, to)},
                {"from": {"id": to_id.to_string()}, "to": {"id": id.to_string()}, "associationSpec": spec(to, from)}
            ]}),
        )
    }
}

/// A page of a v3/v4 listing. `paging.next.after` is an opaque token in the form of HubSpot's
/// own examples (`NTI1Cg%3D%3D`: the offset and a newline, base64, `=` escaped), so a client
/// that assumes digits fails here as it would on a real portal.
fn page(items: Vec<Value>, limit: Option<&str>, after: Option<&str>, max: usize) -> Answer {
    let limit = limit
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(max.min(100))
        .clamp(1, max);
    let start = match after.map(offset_of) {
        None => 0,
        Some(Some(start)) => start,
        Some(None) => return error(400, "VALIDATION_ERROR", "Invalid paging cursor"),
    };
    let results: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
    let mut answer = json!({"results": results});
    if start + limit < items.len() {
        let next = token_for(start + limit);
        answer["paging"] = json!({"next": {"after": next, "link": format!("?after={next}")}});
    }
    (200, answer)
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The paging token for an offset: base64 of `"{offset}\n"`, with `=` written `%3D`.
fn token_for(offset: usize) -> String {
    let bytes = format!("{offset}\n").into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push_str("%3D");
            }
        }
    }
    out
}

/// The offset a token stands for; `None` for anything the sandbox did not hand out.
fn offset_of(token: &str) -> Option<usize> {
    let text = token.replace("%3D", "=");
    let mut bytes = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        let mut len = 0;
        for (i, c) in chunk.iter().enumerate() {
            if *c == b'=' {
                continue;
            }
            let v = BASE64.iter().position(|b| b == c)? as u32;
            n |= v << (18 - 6 * i);
            len = i;
        }
        bytes.extend((0..len).map(|i| (n >> (16 - 8 * i)) as u8));
    }
    let text = String::from_utf8(bytes).ok()?;
    text.strip_suffix('\n')?.parse().ok()
}

/// A `date` property's value as HubSpot accepts it: `YYYY-MM-DD`, or epoch milliseconds at
/// midnight UTC ("Date properties will only store the date, and must be set to midnight UTC").
fn is_midnight_utc(text: &str) -> bool {
    let b = text.as_bytes();
    let iso_date = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    iso_date || text.parse::<u64>().is_ok_and(|ms| ms % 86_400_000 == 0)
}
