//! End-to-end tests: the built component (and a hostile probe component) run in wasmtime
//! through the real host, hooks, audit trail and mapping store, against the scripted stub and
//! the sandbox. One test binary, so wasmtime is linked once.

mod across;
mod aggregate;
mod answers;
mod confirm;
mod containment;
mod crma;
mod crmb;
mod docs;
mod egress;
mod export;
mod fixtures;
mod fleet;
mod fleet_chaos;
mod fleet_faults;
mod fleet_registry;
mod fleet_rows;
mod fleet_serve;
mod governance;
mod holding;
mod http_server;
mod listing;
mod lockout;
mod masking;
mod mcp;
mod network;
mod progress;
mod refusals;
mod resolve;
mod security;
mod serve_procs;
mod startup;
mod startup_errors;
mod status;
mod sync;
mod tasks;
mod tenants_many;
mod timeline;
