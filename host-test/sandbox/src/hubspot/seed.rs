//! Seeding the sandbox HubSpot in bulk, for tests that need a portal past HubSpot's 10,000
//! search results without a create request per record.

use super::HubSpotData;
use serde_json::json;

impl HubSpotData {
    /// Adds `count` contacts of `company`, searchable at once (data the portal already had, not
    /// records created a moment ago), and returns their ids in ascending order. Their ids
    /// follow the portal's highest, with gaps between them as a real portal's have.
    pub fn seed_contacts(&mut self, count: usize, company: &str) -> Vec<u64> {
        let now = "2026-01-05T08:00:00Z";
        let contacts = self.objects.entry("contacts").or_default();
        let mut ids = Vec::with_capacity(count);
        for n in 0..count as u64 {
            let id = self.next_id;
            self.next_id += 1 + n % 3;
            let properties = json!({
                "firstname": "Seed", "lastname": format!("Contact {n}"),
                "email": format!("seed.{id}@import.example.com"), "company": company,
                "hs_object_id": id.to_string(), "createdate": now, "hs_lastmodifieddate": now,
            });
            let record = json!({"id": id.to_string(), "properties": properties, "createdAt": now,
                                "updatedAt": now, "archived": false});
            contacts.insert(id, record);
            ids.push(id);
        }
        ids
    }
}

/// Stages and owners seeded deals take turns with (the acme portal's own).
const SEED_STAGES: &[&str] = &[
    "appointmentscheduled",
    "qualifiedtobuy",
    "contractsent",
    "closedwon",
    "closedlost",
];
const SEED_OWNERS: &[&str] = &["81035700", "81035701", "81035702"];

impl HubSpotData {
    /// Adds `count` deals named `<label> deal <n>`, searchable at once, and returns their
    /// properties as stored: amounts with cents (some empty), stages and owners in turn (some
    /// unowned), close dates across 2026 (some at 02:30 UTC on a month's first day, still the
    /// previous month in New York).
    pub fn seed_deals(&mut self, count: usize, label: &str) -> Vec<serde_json::Value> {
        let now = "2026-01-05T08:00:00Z";
        let mut seeded = Vec::with_capacity(count);
        for n in 0..count as u64 {
            let id = self.next_id;
            self.next_id += 1 + n % 2;
            let amount = if n % 11 == 0 {
                String::new()
            } else {
                format!("{}.{:02}", 500 + (n * 37) % 99_500, n % 100)
            };
            let closedate = if n % 4 == 0 {
                format!("2026-{:02}-01T02:30:00Z", 1 + n % 12)
            } else {
                format!("2026-{:02}-{:02}T17:00:00Z", 1 + n % 12, 1 + n % 28)
            };
            let owner = (n % 7 != 0).then(|| SEED_OWNERS[(n % 3) as usize]);
            let properties = json!({
                "dealname": format!("{label} deal {n}"), "amount": amount,
                "dealstage": SEED_STAGES[(n % 5) as usize], "pipeline": "default",
                "closedate": closedate, "hubspot_owner_id": owner,
                "hs_object_id": id.to_string(), "createdate": now, "hs_lastmodifieddate": now,
            });
            let record = json!({"id": id.to_string(), "properties": properties.clone(),
                                "createdAt": now, "updatedAt": now, "archived": false});
            self.objects.entry("deals").or_default().insert(id, record);
            seeded.push(properties);
        }
        seeded
    }
}
