//! `crm-sandbox`: `crm-host`'s command line with the sandbox CRM built in, so the demo, the
//! examples and the client tests run with no broker and no account anywhere.

use std::sync::Arc;

fn main() -> std::process::ExitCode {
    crm_host::cli::main(Some(Arc::new(crm_sandbox::SandboxCrm::new())))
}
