//! Our SOQL validator's verdict on each query it is given, for the differential test against
//! Salesforce's own grammar (`host-test/tests/soql/`).
//!
//! Reads JSON Lines on stdin, each line one query as a JSON string; writes one JSON line per
//! query: `{"accepted": true}` or `{"accepted": false, "reason": "..."}`.

use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line.expect("stdin is readable");
        if line.trim().is_empty() {
            continue;
        }
        let query: String = serde_json::from_str(&line).expect("each line is a JSON string");
        let verdict = match crm_plugin::crmb::soql::validate(&query) {
            Ok(_) => serde_json::json!({"accepted": true}),
            Err(e) => serde_json::json!({"accepted": false, "reason": e.to_string()}),
        };
        writeln!(out, "{verdict}").expect("stdout is writable");
    }
}
