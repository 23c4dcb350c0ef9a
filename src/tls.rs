//! TLS for hookledger's own outbound connections (the outbox's HTTPS
//! destinations, `hookledger send`, the bench): rustls with the ring
//! provider, which sqlx's TLS builds anyway. Server certificates are checked
//! against the system's trusted roots; on a system that has none (a slim
//! container without `ca-certificates`), against the Mozilla roots built in,
//! as sqlx does for the database.

use std::sync::Arc;

/// Makes ring the process's rustls provider, once; a second call, or a
/// provider installed first by anything else, changes nothing.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client builder with the provider installed (reqwest is built without
/// a TLS provider of its own, and needs one before a client is built).
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

/// A client with reqwest's defaults (for tests and tools).
pub fn client() -> reqwest::Client {
    build_client(|builder| builder).expect("an HTTP client with default settings builds")
}

/// Builds the client `configure` describes, trusting the system's roots;
/// where the system has none, the built-in Mozilla roots instead (said in
/// the log).
pub fn build_client(
    configure: impl Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, String> {
    match configure(client_builder()).build() {
        Ok(client) => Ok(client),
        Err(error) => {
            tracing::warn!(
                "no usable system certificate store ({error}); HTTPS is checked against the \
                 Mozilla roots built into hookledger"
            );
            configure(client_builder().tls_backend_preconfigured(bundled_roots()))
                .build()
                .map_err(|e| format!("cannot build an HTTP client: {e}"))
        }
    }
}

fn bundled_roots() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}
