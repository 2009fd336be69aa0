//! The `http` capability (S6): requests to allow-listed hosts for a plugin whose preset grants
//! `plugins.<name>.grants.http`, sent with reqwest, with time and response-size caps.
//!
//! An allow-list entry is `host`, `*.host` (any subdomain, not the host itself), optionally
//! with `scheme://` in front and `:port` after; without them the scheme is https and the
//! port its default. Redirects are not followed (each hop would need its own check) and
//! proxies from the environment are ignored. A name is resolved and must lead to a public
//! address (`http_addr.rs`); the connection is pinned to the address that was checked, and a
//! plugin cannot set `Host` to reach another virtual host than the one allowed.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use paddock_types::text::prefix_chars;

use crate::grant::HttpGrant;
use crate::wasm::bindings::http;
use crate::wasm::store::CallState;

/// Most characters of a plugin's URL, method or header name quoted in an error.
const QUOTED_CHARS: usize = 200;

/// What a request needs from its call.
struct HttpCall {
    plugin: String,
    grant: Option<HttpGrant>,
    deadline: Instant,
    cancel: CancellationToken,
}

impl http::Host for CallState {
    fn fetch(
        &mut self,
        req: http::Request,
    ) -> impl Future<Output = Result<http::Response, String>> + Send {
        let call = HttpCall {
            plugin: self.plugin.clone(),
            grant: self.http.clone(),
            deadline: self.deadline,
            cancel: self.cancel.clone(),
        };
        fetch(call, req)
    }
}

/// Sends `req` for the call: its URL allowed, its address checked and pinned, its response
/// read within the grant's size cap, all within the call's time.
async fn fetch(call: HttpCall, req: http::Request) -> Result<http::Response, String> {
    let key = format!("plugins.{}.grants.http", call.plugin);
    let Some(grant) = &call.grant else {
        return Err(format!(
            "HTTP requests are not granted to this plugin; add `{key}` to the preset"
        ));
    };
    let (url, host, port) = allowed_url(grant, &req.url, &key)?;
    let mut timeout = grant
        .timeout
        .min(call.deadline.saturating_duration_since(Instant::now()));
    if let Some(ms) = req.timeout_ms {
        timeout = timeout.min(Duration::from_millis(ms.into()));
    }
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).map_err(|_| {
        format!(
            "method {:?} is not valid",
            prefix_chars(&req.method, QUOTED_CHARS).0
        )
    })?;
    refuse_host_header(&req.headers, &host)?;
    let addr = resolve(&host, port, timeout, &call.cancel).await?;
    let client = pinned_client(&host, addr, timeout)?;
    let mut builder = client.request(method, url);
    for (name, value) in &req.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    if let Some(body) = req.body {
        builder = builder.body(body);
    }
    let work = receive(builder, &host, grant.max_response_bytes);
    tokio::select! {
        biased;
        _ = call.cancel.cancelled() => Err("cancelled".into()),
        result = work => result,
        _ = tokio::time::sleep(timeout) => Err(format!(
            "request to `{host}` timed out after {} ms",
            timeout.as_millis()
        )),
    }
}

/// The URL, its host and its port, when it is http or https and the grant's allow-list
/// admits it.
fn allowed_url(
    grant: &HttpGrant,
    raw: &str,
    key: &str,
) -> Result<(reqwest::Url, String, u16), String> {
    let url = reqwest::Url::parse(raw).map_err(|e| {
        format!(
            "url {:?} is not valid: {e}",
            prefix_chars(raw, QUOTED_CHARS).0
        )
    })?;
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "scheme `{scheme}` is not supported; use http or https"
        ));
    }
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url.port_or_known_default().unwrap_or(0);
    if !grant
        .allow
        .iter()
        .any(|entry| allows(entry, scheme, &host, port))
    {
        let wanted = if scheme == "https" && port == 443 {
            host.clone()
        } else {
            format!("{scheme}://{host}:{port}")
        };
        return Err(format!(
            "request to host `{host}` (port {port}, {scheme}) is denied; add \"{wanted}\" to \
             `{key}.allow` in the preset to allow it"
        ));
    }
    Ok((url, host, port))
}

/// A plugin cannot set `Host` to reach another virtual host than the one allowed.
fn refuse_host_header(headers: &[(String, String)], host: &str) -> Result<(), String> {
    match headers
        .iter()
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
    {
        Some((name, _)) => Err(format!(
            "header `{}` is refused: the Host is the allowed host of the URL, `{host}`",
            prefix_chars(name, QUOTED_CHARS).0
        )),
        None => Ok(()),
    }
}

/// The public address `host` resolves to (`http_addr.rs`), within `timeout`.
async fn resolve(
    host: &str,
    port: u16,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<std::net::SocketAddr, String> {
    let resolve = tokio::time::timeout(
        timeout,
        crate::capability::http_addr::checked_address(host, port),
    );
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err("cancelled".into()),
        addr = resolve => addr.map_err(|_| format!("resolving `{host}` timed out"))?,
    }
}

/// Sends the request and reads the response: its status, headers, and body up to `cap`
/// bytes (what is past it is not read).
async fn receive(
    builder: reqwest::RequestBuilder,
    host: &str,
    cap: usize,
) -> Result<http::Response, String> {
    let mut response = builder.send().await.map_err(|e| describe(&e, host))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
        .collect();
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e, host))? {
        let room = cap.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            // Stop reading: the rest would only be thrown away.
            truncated = true;
            break;
        }
    }
    Ok(http::Response {
        status,
        headers,
        body,
        truncated,
    })
}

/// A client that connects to `addr` for `host`, whatever DNS says next (no second lookup
/// between the check and the connection), follows no redirect (a new request, checked anew,
/// is the plugin's to make) and uses no proxy.
fn pinned_client(
    host: &str,
    addr: std::net::SocketAddr,
    timeout: Duration,
) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .resolve(host, addr)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

fn describe(error: &reqwest::Error, host: &str) -> String {
    if error.is_timeout() {
        format!("request to `{host}` timed out")
    } else {
        format!("request to `{host}` failed: {error}")
    }
}

/// Does allow-list `entry` admit `scheme://host:port`?
pub fn allows(entry: &str, scheme: &str, host: &str, port: u16) -> bool {
    let (entry_scheme, rest) = match entry.split_once("://") {
        Some((s, rest)) => (s, rest),
        None => ("https", entry),
    };
    let rest = rest.trim_end_matches('/');
    let (pattern, entry_port) = match rest.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            (h, p.parse::<u16>().ok())
        }
        _ => (rest, None),
    };
    let default_port = match entry_scheme {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let host = host.to_ascii_lowercase();
    let pattern = pattern.to_ascii_lowercase();
    // An address is granted only by itself: a wildcard covers names.
    let is_address = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok();
    let host_ok = match pattern.strip_prefix("*.") {
        Some(parent) => !is_address && host.ends_with(&format!(".{parent}")),
        None => host == pattern,
    };
    host_ok && entry_scheme == scheme && entry_port.unwrap_or(default_port) == port
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plugin may not pick another virtual host than the allowed one: no connection is made.
    #[tokio::test]
    async fn a_host_header_is_refused_before_any_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let call = HttpCall {
            plugin: "p".into(),
            grant: Some(HttpGrant {
                allow: vec![format!("http://127.0.0.1:{port}")],
                timeout: Duration::from_secs(5),
                max_response_bytes: 1024,
            }),
            deadline: Instant::now() + Duration::from_secs(5),
            cancel: CancellationToken::new(),
        };
        let req = http::Request {
            method: "GET".into(),
            url: format!("http://127.0.0.1:{port}/"),
            headers: vec![("HOST".into(), "metadata.internal".into())],
            body: None,
            timeout_ms: None,
        };
        let err = fetch(call, req).await.unwrap_err();
        assert!(err.contains("header `HOST` is refused"), "{err}");
        assert_eq!(
            listener.accept().unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn entries_match_host_scheme_and_port() {
        assert!(allows("docs.rs", "https", "docs.rs", 443));
        assert!(!allows("docs.rs", "http", "docs.rs", 80));
        assert!(!allows("docs.rs", "https", "evil.docs.rs.example", 443));
        assert!(allows("*.github.com", "https", "api.github.com", 443));
        assert!(!allows("*.github.com", "https", "github.com", 443));
        assert!(allows("http://127.0.0.1:8080", "http", "127.0.0.1", 8080));
        assert!(!allows("http://127.0.0.1:8080", "http", "127.0.0.1", 8081));
        assert!(
            !allows("http://*.0.1:80", "http", "127.0.0.1", 80),
            "no wildcard address"
        );
    }

    /// The connection goes to the checked address even for a name DNS does not know: nothing
    /// is looked up again between the check and the connection.
    #[tokio::test]
    async fn the_connection_is_pinned_to_the_checked_address() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let n = socket.read(&mut buf).await.unwrap();
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        let client = pinned_client("pinned.invalid", addr, Duration::from_secs(5)).unwrap();
        let url = format!("http://pinned.invalid:{}/", addr.port());
        let response = client.get(url).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let request = server.await.unwrap();
        assert!(
            request
                .to_ascii_lowercase()
                .contains("host: pinned.invalid"),
            "{request}"
        );
    }
}
