//! `crm-sandbox sandbox`: the built-in CRM served as a real HTTPS broker on loopback, with a
//! certificate made at start-up.

use super::BuiltInCrm;
use crate::backend::serve::Server;
use crate::backend::tls::SelfSigned;
use serde_json::{Value, json};
use std::process::ExitCode;

/// `crm-sandbox sandbox`: the built-in CRM over HTTPS on loopback, until the process is stopped.
pub(super) async fn serve_sandbox(
    built_in: &dyn BuiltInCrm,
    listen: std::net::SocketAddr,
    cert_out: Option<std::path::PathBuf>,
) -> Result<ExitCode, String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let ip = local.ip().to_string();
    let cert = SelfSigned::generate(&[ip.as_str(), "localhost"]).map_err(|e| e.to_string())?;
    let cert_path = cert_out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("crm-host-sandbox-{}.pem", local.port()))
    });
    std::fs::write(&cert_path, &cert.cert_pem)
        .map_err(|e| format!("writing {}: {e}", cert_path.display()))?;
    let tls = cert.server_config().map_err(|e| e.to_string())?;
    let server =
        Server::start(listener, built_in.backend(), Some(tls)).map_err(|e| e.to_string())?;
    let credentials: serde_json::Map<String, Value> = built_in
        .tenants()
        .into_iter()
        .map(|t| {
            let credential = built_in.credential(&t);
            (t, Value::String(credential))
        })
        .collect();
    // The one line on stdout: where the server is and what a client needs to reach it.
    println!(
        "{}",
        json!({"listening": server.url(), "cert": cert_path, "credentials": credentials})
    );
    server.run().await;
    Ok(ExitCode::SUCCESS)
}
