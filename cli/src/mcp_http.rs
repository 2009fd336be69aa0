//! `paddock mcp serve --listen ADDR`: the same served session over MCP's streamable HTTP
//! transport (rmcp's `StreamableHttpService` on a hyper HTTP/1 server), at `http://ADDR/mcp`.
//!
//! A local HTTP server is reachable by more than the user's MCP client, so three checks come
//! before rmcp sees a request:
//!
//! - the address: loopback only unless `--allow-non-loopback`, never the unspecified address
//!   (a client must name the address it reaches);
//! - a bearer token (`$PADDOCK_MCP_TOKEN`, else 32 random bytes printed on stderr): other users
//!   and programs on the machine can connect to a loopback port too. Without it: 401 with a
//!   `WWW-Authenticate: Bearer` challenge that names the missing token and no authorization
//!   server, so a client reports it instead of starting OAuth;
//! - DNS rebinding and browsers: only `Host` headers naming the bound address and port are
//!   answered (a page whose name was rebound to 127.0.0.1 sends its own name), and a request
//!   carrying any `Origin` header (sent by browsers, not by MCP clients) is refused. rmcp
//!   enforces both from its config (`allowed_hosts`, `enforce_origin_validation`).
//!
//! Under load (`mcp_admit.rs`): a connection limit that evicts the oldest connection without
//! the token first, accept errors backed off and logged once a minute, the descriptor limit
//! raised; here, hyper's header-read timeout closes a connection that sends no complete
//! request head within [`HEADER_READ_TIMEOUT`] (idle keep-alive included), and a refused
//! request closes its connection.
//!
//! A client that ends its session (`DELETE`) gets 204. A 2026-07-28 client has no session:
//! rmcp answers its requests statelessly on the same path.
//!
//! What it does not do: TLS. Put a TLS proxy in front for anything but loopback.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::mcp_admit::{AcceptErrors, Admission, Ticket, per_connection, raise_descriptor_limit};
use super::mcp_serve::Served;

/// The one path served.
const PATH: &str = "/mcp";
/// A token from the environment shorter than this is refused.
const MIN_TOKEN: usize = 16;
/// A connection must send a whole request head within this long (the first one, and each
/// next one on a kept-alive connection).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Checks the address and binds it.
pub(super) async fn bind(
    addr: SocketAddr,
    allow_non_loopback: bool,
) -> Result<TcpListener, String> {
    if addr.ip().is_unspecified() {
        return Err(format!(
            "--listen {addr}: name one address, e.g. 127.0.0.1:{}; clients must reach the \
             address they name (Host is checked)",
            addr.port()
        ));
    }
    if !addr.ip().is_loopback() && !allow_non_loopback {
        return Err(format!(
            "--listen {addr}: not a loopback address, so the network could reach this preset's \
             tools; use 127.0.0.1, or add --allow-non-loopback (with a TLS proxy in front)"
        ));
    }
    raise_descriptor_limit();
    TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--listen {addr}: cannot listen there: {e}"))
}

/// The `Host` values answered: the bound address and port, and `localhost` with that port for
/// a loopback address.
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec![addr.to_string()];
    if addr.ip().is_loopback() {
        hosts.push(format!("localhost:{}", addr.port()));
    }
    hosts
}

/// The token clients must send, and whether to print it.
fn token() -> Result<(String, bool), String> {
    match std::env::var("PADDOCK_MCP_TOKEN") {
        Ok(token) if token.len() >= MIN_TOKEN => Ok((token, false)),
        Ok(_) => Err(format!(
            "PADDOCK_MCP_TOKEN is shorter than {MIN_TOKEN} characters; use a long random value \
             (or unset it and paddock makes one)"
        )),
        Err(_) => {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a token: {e}"))?;
            Ok((bytes.iter().map(|b| format!("{b:02x}")).collect(), true))
        }
    }
}

/// Serves until interrupted (Ctrl-C or SIGTERM).
pub(super) async fn serve_http(
    served: Served,
    listener: TcpListener,
    preset: &str,
    session: &str,
) -> Result<(), String> {
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    let (token, show) = token()?;
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(addr))
        .enforce_origin_validation()
        .with_cancellation_token(stop.clone());
    let service = StreamableHttpService::new(
        move || Ok(served.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let shown = if show {
        format!("Authorization: Bearer {token}")
    } else {
        "Authorization: Bearer $PADDOCK_MCP_TOKEN".into()
    };
    eprintln!(
        "paddock: serving preset `{preset}` over MCP at http://{addr}{PATH} (session {session}); \
         clients send `{shown}`"
    );
    let expected = Arc::new(format!("Bearer {token}"));
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
    let admission = Arc::new(Admission::default());
    let mut errors = AcceptErrors::default();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if per_connection(&e) => continue,
                Err(e) => {
                    let pause = errors.failed(&e, &admission);
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => continue,
                        _ = tokio::signal::ctrl_c() => break,
                        _ = terminate.recv() => break,
                    }
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        };
        errors.accepted();
        // At the limit with every connection authenticated: this one is closed unanswered.
        let Some(ticket) = admission.admit() else {
            continue;
        };
        let service = service.clone();
        let expected = expected.clone();
        tokio::spawn(async move {
            let ticket = Arc::new(ticket);
            let seen = ticket.clone();
            let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                let service = service.clone();
                let expected = expected.clone();
                let seen = seen.clone();
                async move { Ok::<_, Infallible>(route(&service, &expected, &seen, req).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), handler);
            // Evicted: the connection is dropped, which closes its socket.
            tokio::select! {
                _ = connection => {}
                _ = ticket.evicted() => {}
            }
        });
    }
    stop.cancel();
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

async fn route(
    service: &StreamableHttpService<Served, LocalSessionManager>,
    expected: &str,
    ticket: &Ticket,
    req: Request<Incoming>,
) -> Response<Body> {
    if req.uri().path() != PATH {
        return plain(StatusCode::NOT_FOUND, "not found: MCP is served at /mcp");
    }
    let sent = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if !sent.is_some_and(|sent| same(sent, expected.as_bytes())) {
        return refused(sent.is_none());
    }
    ticket.authenticated();
    let delete = req.method() == hyper::Method::DELETE;
    let mut response = service.handle(req).await;
    // A session ended: 204, which every SDK counts as success (rmcp answers 202, which the
    // Python SDK's client logs as a failed termination on every close).
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = Full::new(Bytes::new()).boxed();
    }
    response
}

/// 401 for a request without the right token: a Bearer challenge (no authorization server
/// named, so a client does not start OAuth) whose description, like the body, says which
/// token is missing or wrong and where it comes from.
fn refused(missing: bool) -> Response<Body> {
    let (error, why) = if missing {
        (
            "invalid_request",
            "missing bearer token: send `Authorization: Bearer TOKEN` with the token `paddock \
             mcp serve` printed on its stderr (or $PADDOCK_MCP_TOKEN)",
        )
    } else {
        (
            "invalid_token",
            "wrong bearer token: send `Authorization: Bearer TOKEN` with the token `paddock mcp \
             serve` printed on its stderr (or $PADDOCK_MCP_TOKEN)",
        )
    };
    let mut refused = plain(StatusCode::UNAUTHORIZED, why);
    let headers = refused.headers_mut();
    if let Ok(challenge) = hyper::header::HeaderValue::from_str(&format!(
        "Bearer realm=\"paddock mcp serve\", error=\"{error}\", error_description=\"{}\"",
        why.replace('"', "'")
    )) {
        headers.insert(hyper::header::WWW_AUTHENTICATE, challenge);
    }
    // A client without the token gets no kept-alive connection to sit on.
    headers.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    refused
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// Equal bytes, compared in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_name_the_bound_port_and_tokens_compare_whole() {
        let addr: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        assert_eq!(allowed_hosts(addr), ["127.0.0.1:8765", "localhost:8765"]);
        let remote: SocketAddr = "192.0.2.7:80".parse().unwrap();
        assert_eq!(allowed_hosts(remote), ["192.0.2.7:80"]);
        assert!(same(b"Bearer abc", b"Bearer abc"));
        assert!(!same(b"Bearer abd", b"Bearer abc"));
        assert!(!same(b"Bearer ab", b"Bearer abc"));
    }
}
