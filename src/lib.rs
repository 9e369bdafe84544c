//! crm-plugin: safe, scoped CRM tools for an AI assistant, as a WebAssembly component.
//!
//! Everything here is a pure core (input validation, request building, response mapping) that
//! compiles and unit-tests natively. The only code that touches WASI lives in the `component`
//! module, compiled for `wasm32` alone: it gives the core its seams ([`http::Transport`] over
//! `wasi:http`, the mapping store, the results files, configuration from `wasi:config/store`)
//! and exports the `tools` and `tool-metadata` interfaces.

#![warn(unreachable_pub, missing_docs)]

mod across;
pub mod config;
pub mod context;
pub mod crma;
pub mod crmb;
pub mod error;
pub mod governance;
#[cfg(test)]
mod harness;
pub mod http;
pub mod journal;
pub mod mapping;
pub mod masking;
pub mod policy;
pub mod proxy;
pub(crate) mod raw_json;
pub mod registry;
pub(crate) mod result_file;
pub mod retry;
pub(crate) mod schema;
mod sorted_map;
mod status;
pub mod time;
mod timeline;
pub mod tool;
mod tzdb;

#[cfg(test)]
mod proptests;

#[cfg(target_arch = "wasm32")]
mod component;
