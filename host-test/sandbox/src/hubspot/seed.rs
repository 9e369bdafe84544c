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
