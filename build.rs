//! Deflates the checked-in tool listing (`src/schema/listing.json`) for the component's
//! `crm-plugin:tool-listing` custom section: the host answers `tools/list` from it before it
//! compiles the component, and deflated it costs about a sixth of its text in the component.

use std::path::PathBuf;

fn main() {
    let listing = "src/schema/listing.json";
    println!("cargo:rerun-if-changed={listing}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read(listing).expect("src/schema/listing.json is checked in");
    let deflated = miniz_oxide::deflate::compress_to_vec(&text, 9);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("tool-listing.deflate"), deflated).expect("OUT_DIR is writable");
}
