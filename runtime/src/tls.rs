//! The one TLS crypto provider of the process: rustls with ring, as the model providers'
//! HTTP client uses. The clients on reqwest 0.13 (the OCI registry client, MCP over HTTP) are
//! built without a provider of their own and take the process default, so this is installed
//! before any of them is built; a second provider (aws-lc) is never linked.

/// Installs ring as the process's default rustls provider, unless one is installed already.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err only when another thread installed one first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
