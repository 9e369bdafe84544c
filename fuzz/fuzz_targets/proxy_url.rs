//! Broker URLs from any path segments (one per line) and one query value: a built URL keeps
//! the broker's host and has exactly one path segment per value, each decoding back to it;
//! segments no encoding keeps (empty, `.`, `..`, control characters) are refused.
#![no_main]

use crm_plugin::config::{Config, keys};
use crm_plugin::proxy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, query) = text.split_once('\t').unwrap_or((text, ""));
    let segments: Vec<&str> = path.split('\n').collect();
    let config = Config::from_vars([(keys::PROXY_BASE, "https://broker.example.com/base")])
        .expect("a valid configuration");
    let refused = segments
        .iter()
        .any(|s| matches!(*s, "" | "." | "..") || s.chars().any(|c| c.is_ascii_control()));
    for (built, prefix) in [
        (proxy::crm_a(&config, &segments, &[("q", query)]), 4),
        (proxy::crm_b(&config, &segments, &[("q", query)]), 7),
    ] {
        let Ok(url) = built else {
            assert!(refused);
            continue;
        };
        assert!(!refused);
        assert_eq!(url.host_str(), Some("broker.example.com"));
        assert_eq!(url.fragment(), None);
        let got: Vec<String> = url
            .path_segments()
            .unwrap()
            .skip(prefix)
            .map(|s| percent_decode(s))
            .collect();
        assert_eq!(got, segments, "{url}");
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        assert_eq!(pairs, [("q".to_string(), query.to_string())]);
    }
});

/// Percent-decoding, by hand to keep the fuzz crate's dependencies to the library's own.
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}
