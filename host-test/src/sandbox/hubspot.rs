//! The sandbox's HubSpot: CRM objects with search, create, update and company merge, v4
//! associations, owners, users, roles, teams, pipelines, property definitions and account
//! details, answering in HubSpot's own JSON shapes (including its error bodies).

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

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
                Some(name) => self.search(name, &body),
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
            .is_some_and(|r| r.contains_key(&id))
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
        }
        Ok(())
    }

    fn create(&mut self, object: &'static str, body: &Value) -> Answer {
        let properties = match self.properties_of(object, body) {
            Ok(properties) => properties,
            Err(answer) => return answer,
        };
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
        let now = "2026-11-21T09:30:00Z";
        let mut props = properties.clone();
        props.insert("hs_object_id".into(), id.to_string().into());
        props.insert("createdate".into(), now.into());
        props.insert("hs_lastmodifieddate".into(), now.into());
        let record = json!({"id": id.to_string(), "properties": props, "createdAt": now, "updatedAt": now, "archived": false});
        self.objects
            .entry(object)
            .or_default()
            .insert(id, record.clone());
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
        let Some(record) = self.objects.get_mut(object).and_then(|r| r.get_mut(&id)) else {
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

    fn search(&self, object: &'static str, body: &Value) -> Answer {
        let records = self.objects.get(object).cloned().unwrap_or_default();
        let groups = body["filterGroups"].as_array().cloned().unwrap_or_default();
        let text = body["query"].as_str().map(str::to_lowercase);
        let mut hits: Vec<&Value> = records
            .values()
            .filter(|r| {
                groups.is_empty()
                    || groups.iter().any(|g| {
                        g["filters"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .all(|f| matches(&r["properties"], f))
                    })
            })
            .filter(|r| match &text {
                None => true,
                Some(t) => r["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .any(|(_, v)| {
                        v.as_str()
                            .is_some_and(|s| s.to_lowercase().contains(t.as_str()))
                    }),
            })
            .collect();
        if let Some(sort) = body["sorts"].get(0) {
            let name = sort["propertyName"].as_str().unwrap_or_default();
            hits.sort_by(|a, b| compare(&a["properties"][name], &b["properties"][name]));
            if sort["direction"] == "DESCENDING" {
                hits.reverse();
            }
        }
        let total = hits.len();
        let limit = body["limit"].as_u64().unwrap_or(10).clamp(1, 200) as usize;
        let after: usize = body["after"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or(0);
        let wanted: Vec<&str> = body["properties"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let results: Vec<Value> = hits
            .iter()
            .skip(after)
            .take(limit)
            .map(|r| {
                let all = &r["properties"];
                let mut props = Map::new();
                let defaults = ["hs_object_id", "createdate", "hs_lastmodifieddate"];
                let names: Vec<&str> = if wanted.is_empty() {
                    all.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default()
                } else {
                    wanted.iter().copied().chain(defaults).collect()
                };
                for name in names {
                    props.insert(name.into(), all.get(name).cloned().unwrap_or(Value::Null));
                }
                json!({"id": r["id"], "properties": props, "createdAt": r["createdAt"], "updatedAt": r["updatedAt"], "archived": false})
            })
            .collect();
        let mut answer = json!({"total": total, "results": results});
        if after + limit < total {
            let next = (after + limit).to_string();
            answer["paging"] =
                json!({"next": {"after": next, "link": "?after=".to_string() + &next}});
        }
        (200, answer)
    }
}

/// One search filter against a record's properties.
fn matches(properties: &Value, filter: &Value) -> bool {
    let name = filter["propertyName"].as_str().unwrap_or_default();
    let value = &properties[name];
    let has = value.as_str().is_some_and(|s| !s.is_empty());
    let given = filter["value"].as_str().unwrap_or_default();
    let cmp = || compare(value, &Value::String(given.into()));
    use std::cmp::Ordering::*;
    match filter["operator"].as_str().unwrap_or_default() {
        "EQ" => has && cmp() == Equal,
        "NEQ" => !has || cmp() != Equal,
        "LT" => has && cmp() == Less,
        "LTE" => has && cmp() != Greater,
        "GT" => has && cmp() == Greater,
        "GTE" => has && cmp() != Less,
        "BETWEEN" => {
            let high = Value::String(filter["highValue"].as_str().unwrap_or_default().into());
            has && cmp() != Less && compare(value, &high) != Greater
        }
        "IN" | "NOT_IN" => {
            let inside = filter["values"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| compare(value, v) == Equal);
            (filter["operator"] == "IN") == (has && inside)
        }
        "HAS_PROPERTY" => has,
        "NOT_HAS_PROPERTY" => !has,
        "CONTAINS_TOKEN" | "NOT_CONTAINS_TOKEN" => {
            let token = given.trim_matches('*').to_lowercase();
            let contains = value
                .as_str()
                .is_some_and(|s| s.to_lowercase().contains(&token));
            (filter["operator"] == "CONTAINS_TOKEN") == contains
        }
        _ => false,
    }
}

/// Numbers compare as numbers, ISO dates and epoch milliseconds as instants, text without case.
fn compare(a: &Value, b: &Value) -> std::cmp::Ordering {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let (a, b) = (text(a), text(b));
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
        _ => a.to_lowercase().cmp(&b.to_lowercase()),
    }
}

/// A page of a v3 listing with HubSpot's `paging.next.after` (the next offset).
fn page(items: Vec<Value>, limit: Option<&str>, after: Option<&str>, max: usize) -> Answer {
    let limit = limit
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(max.min(100))
        .clamp(1, max);
    let start = after.and_then(|a| a.parse::<usize>().ok()).unwrap_or(0);
    let results: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
    let mut answer = json!({"results": results});
    if start + limit < items.len() {
        let next = (start + limit).to_string();
        answer["paging"] = json!({"next": {"after": next, "link": format!("?after={next}")}});
    }
    (200, answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> HubSpotData {
        let text = include_str!("../../sandbox/acme.json");
        let json: Value = serde_json::from_str(text).unwrap();
        HubSpotData::from_json(&json["hubspot"])
    }

    #[test]
    fn search_filters_sorts_and_pages() {
        let mut d = data();
        let body = json!({"filterGroups": [{"filters": [{"propertyName": "amount", "operator": "GT", "value": "40000"}]}],
                          "sorts": [{"propertyName": "amount", "direction": "DESCENDING"}],
                          "properties": ["dealname", "amount"], "limit": 2});
        let (status, answer) = d.answer(
            "POST",
            &["crm", "v3", "objects", "deals", "search"],
            None,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 200);
        assert_eq!(answer["total"], 4);
        assert_eq!(answer["results"][0]["properties"]["amount"], "320000");
        assert_eq!(answer["paging"]["next"]["after"], "2");
    }

    #[test]
    fn unknown_properties_are_validation_errors_naming_them() {
        let mut d = data();
        let body = json!({"properties": {"favourite_colour": "blue"}});
        let (status, answer) = d.answer(
            "POST",
            &["crm", "v3", "objects", "contacts"],
            None,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 400);
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("\"name\":\"favourite_colour\"")
        );
    }

    #[test]
    fn owners_list_active_or_archived_only() {
        let mut d = data();
        let (_, active) = d.answer("GET", &["crm", "v3", "owners"], Some("archived=false"), b"");
        let (_, archived) = d.answer("GET", &["crm", "v3", "owners"], Some("archived=true"), b"");
        assert_eq!(active["results"].as_array().unwrap().len(), 3);
        assert_eq!(archived["results"].as_array().unwrap().len(), 1);
        assert_eq!(archived["results"][0]["archived"], true);
    }
}
