//! What a component version lists: its tools' specs and metadata.
//!
//! A component built by this project carries its listing as data, in the deflated
//! `crm-plugin:tool-listing` custom section (format in the component's
//! `src/registry/listing.rs`), so the host answers `initialize` and `tools/list` from the bytes
//! on disk while the code is still being compiled. A component without that section is listed
//! by instantiating it and calling `list-tools` and `list-tool-metadata`, once per version.

use crate::bindings::{ToolAnnotations, ToolMetadata, ToolSpec};
use serde::Deserialize;

/// The custom section holding the listing.
pub const SECTION: &str = "crm-plugin:tool-listing";

/// The listing format this host reads.
const VERSION: u32 = 1;

/// Largest listing, inflated, the host accepts: a hostile section must not exhaust memory.
const MAX_LISTING_BYTES: usize = 8 << 20;

/// A component's tool specs and metadata.
#[derive(Debug)]
pub struct ToolListing {
    pub specs: Vec<ToolSpec>,
    pub metadata: Vec<ToolMetadata>,
    /// Per spec, whether it is a governed write: one that takes a preview's
    /// `confirmation_token`. Read from the input schemas once, not on every call.
    governed_writes: Vec<bool>,
}

/// Why a component's listing section could not be read: the component is refused.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("the component is not valid Wasm: {0}")]
    NotAComponent(String),
    #[error("the component carries {0} `{SECTION}` sections; a build carries one")]
    Several(usize),
    #[error("its `{SECTION}` section does not inflate: {0}")]
    Corrupt(String),
    #[error("its `{SECTION}` section is not a tool listing: {0}")]
    Unreadable(String),
    #[error("its `{SECTION}` section is format {0}; this host reads format {VERSION}")]
    Version(u32),
}

impl ToolListing {
    pub fn new(specs: Vec<ToolSpec>, metadata: Vec<ToolMetadata>) -> Self {
        let governed_writes = specs
            .iter()
            .map(|spec| {
                !spec.read_only
                    && serde_json::from_str::<serde_json::Value>(&spec.input_schema).is_ok_and(
                        |schema| schema["properties"].get("confirmation_token").is_some(),
                    )
            })
            .collect();
        ToolListing {
            specs,
            metadata,
            governed_writes,
        }
    }

    /// The listing a component carries as data, without compiling or running any of it; `None`
    /// when it carries none (it is then listed by running it).
    pub fn from_component(wasm: &[u8]) -> Result<Option<Self>, ListingError> {
        let found = custom_sections(wasm, SECTION)
            .map_err(|e| ListingError::NotAComponent(e.to_string()))?;
        match found.as_slice() {
            [] => Ok(None),
            [one] => Self::from_section(one).map(Some),
            many => Err(ListingError::Several(many.len())),
        }
    }

    /// Reads a listing section's bytes.
    pub fn from_section(deflated: &[u8]) -> Result<Self, ListingError> {
        let text = miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, MAX_LISTING_BYTES)
            .map_err(|e| ListingError::Corrupt(e.to_string()))?;
        let document: Document =
            serde_json::from_slice(&text).map_err(|e| ListingError::Unreadable(e.to_string()))?;
        if document.version != VERSION {
            return Err(ListingError::Version(document.version));
        }
        let (specs, metadata) = document
            .tools
            .into_iter()
            .map(|tool| {
                let spec = ToolSpec {
                    name: tool.name.clone(),
                    description: tool.description,
                    input_schema: tool.input_schema,
                    read_only: tool.read_only,
                };
                let metadata = ToolMetadata {
                    name: tool.name,
                    title: tool.title,
                    output_schema: tool.output_schema,
                    annotations: ToolAnnotations {
                        read_only: tool.annotations.read_only,
                        destructive: tool.annotations.destructive,
                        idempotent: tool.annotations.idempotent,
                        open_world: tool.annotations.open_world,
                    },
                };
                (spec, metadata)
            })
            .unzip();
        Ok(Self::new(specs, metadata))
    }

    /// The spec of the tool `name`, and whether it is a governed write.
    pub fn tool(&self, name: &str) -> Option<(&ToolSpec, bool)> {
        let at = self.specs.iter().position(|spec| spec.name == name)?;
        Some((&self.specs[at], self.governed_writes[at]))
    }

    /// Whether two listings offer the same tools, described alike.
    pub fn same_as(&self, other: &ToolListing) -> bool {
        let spec = |s: &ToolSpec| {
            (
                s.name.clone(),
                s.description.clone(),
                s.input_schema.clone(),
                s.read_only,
            )
        };
        let meta = |m: &ToolMetadata| {
            let a = &m.annotations;
            (
                m.name.clone(),
                m.title.clone(),
                m.output_schema.clone(),
                (a.read_only, a.destructive, a.idempotent, a.open_world),
            )
        };
        self.specs.iter().map(spec).eq(other.specs.iter().map(spec))
            && self
                .metadata
                .iter()
                .map(meta)
                .eq(other.metadata.iter().map(meta))
    }
}

/// Every custom section named `name` a component (or core module) carries, at any nesting
/// depth, read without validating or compiling any code: how the host reads what a component
/// declares as data (its egress policy, its tool listing).
pub(crate) fn custom_sections<'a>(
    wasm: &'a [u8],
    name: &str,
) -> Result<Vec<&'a [u8]>, wasmparser::BinaryReaderError> {
    let mut found = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::CustomSection(section) = payload?
            && section.name() == name
        {
            found.push(section.data());
        }
    }
    Ok(found)
}

/// The section's document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    version: u32,
    tools: Vec<Tool>,
}

/// One tool in the section.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tool {
    name: String,
    title: String,
    description: String,
    input_schema: String,
    output_schema: String,
    read_only: bool,
    annotations: Annotations,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Annotations {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deflate(text: &str) -> Vec<u8> {
        miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 6)
    }

    #[test]
    fn the_checked_in_listing_reads_as_every_tool_with_its_metadata() {
        let text = include_str!("../../src/schema/listing.json");
        let listing = ToolListing::from_section(&deflate(text)).unwrap();
        assert!(listing.specs.len() > 20, "{} tools", listing.specs.len());
        assert_eq!(listing.specs.len(), listing.metadata.len());
        for (spec, meta) in listing.specs.iter().zip(&listing.metadata) {
            assert_eq!(spec.name, meta.name);
            assert_eq!(spec.read_only, meta.annotations.read_only);
        }
        let (_, governed) = listing.tool("crmb_update_record").unwrap();
        assert!(governed, "a write taking a confirmation token is governed");
        let (_, governed) = listing.tool("crmb_get_record").unwrap();
        assert!(!governed);
    }

    #[test]
    fn a_listing_section_that_is_not_one_is_refused_with_the_reason() {
        assert!(matches!(
            ToolListing::from_section(b"not deflate at all"),
            Err(ListingError::Corrupt(_))
        ));
        assert!(matches!(
            ToolListing::from_section(&deflate("{\"tools\": 3}")),
            Err(ListingError::Unreadable(_))
        ));
        assert!(matches!(
            ToolListing::from_section(&deflate("{\"version\": 2, \"tools\": []}")),
            Err(ListingError::Version(2))
        ));
        // A bomb: a megabyte-scale run of one byte that inflates past the limit.
        let bomb = miniz_oxide::deflate::compress_to_vec(&vec![b' '; MAX_LISTING_BYTES + 1], 9);
        assert!(matches!(
            ToolListing::from_section(&bomb),
            Err(ListingError::Corrupt(_))
        ));
    }
}
