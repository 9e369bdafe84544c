//! `crm-host`: the host's command line, against real brokers only (the sandbox CRM and the demo
//! are in the test-support binary `crm-sandbox`).

fn main() -> std::process::ExitCode {
    crm_host::cli::main(None)
}
