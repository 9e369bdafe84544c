//! TLS set-up, built once and shared: the client configuration the network backend uses for
//! every connection (webpki's roots plus any certificate the operator trusts besides), and a
//! self-signed certificate made at start-up for a loopback server such as `crm-host sandbox`.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::path::Path;
use std::sync::Arc;

/// ALPN protocols, in order of preference: HTTP/2 where the peer offers it, else HTTP/1.1.
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: String },
    #[error("{path}: {source}")]
    Pem {
        path: String,
        source: rustls::pki_types::pem::Error,
    },
    #[error("a trusted certificate was refused: {0}")]
    Root(rustls::Error),
    #[error("TLS configuration: {0}")]
    Config(rustls::Error),
    #[error("making a certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// The crypto provider every configuration uses: ring, the one already built for
/// wasmtime-wasi-http, named explicitly so another crate enabling a second provider cannot
/// make the choice ambiguous.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration: webpki's roots and `extra_roots`, TLS 1.2 and 1.3, ALPN h2 then
/// http/1.1 (only h1 when `http2` is false).
pub fn client_config(
    extra_roots: &[CertificateDer<'static>],
    http2: bool,
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    for cert in extra_roots {
        roots.add(cert.clone()).map_err(TlsSetupError::Root)?;
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::Config)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn(http2);
    Ok(Arc::new(config))
}

fn alpn(http2: bool) -> Vec<Vec<u8>> {
    ALPN.iter()
        .filter(|p| http2 || **p != b"h2")
        .map(|p| p.to_vec())
        .collect()
}

/// Reads every certificate in a PEM file, e.g. the one `crm-host sandbox` writes.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let shown = path.display().to_string();
    let text = std::fs::read(path).map_err(|source| TlsSetupError::Read {
        path: shown.clone(),
        source,
    })?;
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsSetupError::Pem {
            path: shown.clone(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsSetupError::NoCertificate { path: shown });
    }
    Ok(certs)
}

/// A self-signed certificate and its private key, made in memory. The key never leaves the
/// process; the certificate (public) is what clients are given to trust.
pub struct SelfSigned {
    /// The certificate, PEM-encoded.
    pub cert_pem: String,
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
}

impl SelfSigned {
    /// A certificate valid for `names`: DNS names, or IP addresses such as `127.0.0.1`.
    pub fn generate(names: &[&str]) -> Result<Self, TlsSetupError> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names)?;
        Ok(SelfSigned {
            cert_pem: cert.pem(),
            cert: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(signing_key.serialize_der()),
        })
    }

    /// The certificate, DER-encoded, for a client's trusted roots.
    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert.clone()
    }

    /// A server configuration presenting this certificate, offering h2 and http/1.1 by ALPN.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsSetupError> {
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Config)?
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .map_err(TlsSetupError::Config)?;
        config.alpn_protocols = alpn(true);
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_certificate_reads_back() {
        let cert = SelfSigned::generate(&["127.0.0.1", "localhost"]).unwrap();
        let path = std::env::temp_dir().join(format!("crm-tls-{}.pem", std::process::id()));
        std::fs::write(&path, &cert.cert_pem).unwrap();
        let read = read_certificates(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read, vec![cert.cert_der()]);
        assert!(client_config(&read, true).is_ok());
        assert!(cert.server_config().is_ok());
    }

    #[test]
    fn a_file_without_certificates_is_refused() {
        let path = std::env::temp_dir().join(format!("crm-tls-empty-{}.pem", std::process::id()));
        std::fs::write(&path, "not a certificate").unwrap();
        let err = read_certificates(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(err, TlsSetupError::NoCertificate { .. }), "{err}");
    }

    #[test]
    fn http1_only_offers_no_h2() {
        assert_eq!(alpn(false), vec![b"http/1.1".to_vec()]);
        assert_eq!(alpn(true)[0], b"h2".to_vec());
    }
}
