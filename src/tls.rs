//! TLS for hookledger's own outbound connections (the outbox's HTTPS
//! destinations): rustls with the ring provider, which sqlx's TLS builds
//! anyway.

/// Makes ring the process's rustls provider, once; a second call, or a
/// provider installed first by anything else, changes nothing.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Every HTTP client hookledger (and its tests) builds starts here: reqwest
/// is built without a TLS provider of its own, and needs ring installed
/// before a client is built.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

/// A client with reqwest's defaults.
pub fn client() -> reqwest::Client {
    client_builder()
        .build()
        .expect("a client with default settings builds")
}
