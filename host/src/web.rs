//! The host's own HTTP client (an OAuth issuer's keys, other instances).

/// A client builder. reqwest is built without a default TLS crypto
/// provider (see `mcp-downstream`), so ring's is installed first; an `Err`
/// there means one is installed already.
pub fn client() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
