//! The transport to a `url` MCP server (streamable HTTP), reached the way the
//! `http` capability reaches a host (S6): the URL must be in the server's `http.allow` (the
//! preset checked it; checked again here), its name is resolved once and only to a public
//! address unless the URL names the address itself (`sandbox::checked_address`), and the
//! connection is pinned to that address, with no proxy and no redirects. Responses are capped
//! (one JSON body, one SSE event) at the same size as a stdio server's message.
//!
//! The client is wrapped (`http_wire::Noting`) to note what rmcp's types drop and to bound the
//! wait on `server/discover`, as `wire` does for a started server.
//!
//! What it does not do: restart anything, or time calls out (`client.rs` does both, as for a
//! started server).

use std::sync::Arc;

use reqwest_mcp::Client;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::NeverRetry;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpResponseLimits,
};

use super::http_wire::Noting;
use super::wire::Notes;
use crate::preset::ResolvedMcp;

/// The transport to `url` and what it notes, or why it may not be reached.
pub(super) async fn transport(
    spec: &ResolvedMcp,
    url: &str,
    cap: usize,
) -> Result<(StreamableHttpClientTransport<Noting>, Notes), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let host = parsed.host_str().unwrap_or_default().to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    if parsed.scheme() != "http"
        || !spec
            .http_allow
            .iter()
            .any(|entry| paddock_sandbox::http_allows(entry, "http", &host, port))
    {
        return Err(format!(
            "{url} is not covered by `mcp.{}.http.allow`",
            spec.name
        ));
    }
    let addr = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        paddock_sandbox::checked_address(&host, port),
    )
    .await
    .map_err(|_| format!("resolving `{host}` timed out"))??;
    crate::tls::install_crypto_provider();
    let client = Client::builder()
        .redirect(reqwest_mcp::redirect::Policy::none())
        .no_proxy()
        // Pinned: every request goes to the checked address, whatever DNS says next.
        .resolve(&host, addr)
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_sse_event_size = cap;
    limits.max_json_response_size = cap;
    limits.max_error_response_size = 64 << 10;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .max_sse_event_size(limits.max_sse_event_size)
        .max_json_response_size(limits.max_json_response_size)
        .max_error_response_size(limits.max_error_response_size);
    // A dropped event stream is a failed call (and a restart), not a silent reconnect loop.
    config.retry_config = Arc::new(NeverRetry::default());
    let notes = Notes::default();
    let client = Noting::new(client, notes.clone(), limits);
    Ok((
        StreamableHttpClientTransport::with_client(client, config),
        notes,
    ))
}
