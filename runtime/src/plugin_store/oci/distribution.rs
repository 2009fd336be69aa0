//! The HTTP side of an OCI registry (the distribution API), as paddock speaks it for every
//! request it makes to one: the token, manifests and blobs of an install, and the uploads of
//! `publish` and `sign`. The registry is not trusted, so four rules are kept here, where every
//! request passes (the checks themselves are `remote/hop.rs` and `remote/download.rs`, which
//! an https:// install shares):
//!
//! - **Credentials go only to the registry's own origin** (scheme, host and port as the
//!   reference names them). A token service (`WWW-Authenticate: Bearer realm=…`) elsewhere is
//!   asked without them, anonymously; a redirect or an upload location elsewhere is followed
//!   without them. Redirects are followed here, one hop at a time, not by the HTTP client.
//! - **Never from https to http**, and never from another host to this machine: a realm, a
//!   redirect or an upload location that would do either is refused. Plain http is spoken
//!   only to a loopback registry.
//! - **Bodies are read through a cap as they arrive**: a manifest is refused at 4 MiB + 1
//!   byte, a token answer at 64 KiB + 1, an error body is cut at 16 KiB; a length announced
//!   past the cap is refused before anything is read.
//! - **A download has an overall deadline** (`download_deadline`,
//!   `PADDOCK_DOWNLOAD_TIMEOUT_SECS`): the caller streams a layer against it.
//!
//! It does not decide what the bytes mean (`manifest.rs`, `pull.rs`: shapes and digests) nor
//! whom to trust (`cosign.rs`, `../signature.rs`).

use std::time::Duration;

use oci_client::secrets::RegistryAuth;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION, WWW_AUTHENTICATE,
};
use reqwest::{Method, StatusCode, Url};

use paddock_types::text::one_line;

use crate::plugin_store::remote::hop::{check_hop, is_loopback_host, same_origin};
use crate::plugin_store::remote::{
    BodyError, MAX_MANIFEST_BYTES, RemoteError, error_chain, read_capped,
};

/// The largest token service answer read (a JSON object with a token: a few KiB).
pub const MAX_TOKEN_BYTES: usize = 64 << 10;
/// How much of an error body is read, for the message.
const MAX_ERROR_BYTES: usize = 16 << 10;
/// How many redirects one request may take.
const MAX_REDIRECTS: usize = 5;
/// The action messages name while a registry is asked for access.
const AUTHENTICATING: &str = "authenticating";

/// A `WWW-Authenticate` challenge, as far as paddock answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
    /// A scheme paddock does not speak.
    Other(String),
}

/// The challenge in a `WWW-Authenticate` value (`Bearer realm="…",service="…"`), if it parses.
pub fn parse_challenge(value: &str) -> Option<Challenge> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Some(Challenge::Other(one_line(scheme, 40)));
    }
    let mut realm = None;
    let mut service = None;
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars
            .by_ref()
            .take_while(|c| *c != '=')
            .collect::<String>()
            .trim()
            .to_ascii_lowercase();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                value.push(c);
            }
            value = value.trim().to_string();
        }
        match key.as_str() {
            "realm" => realm = Some(value),
            "service" => service = Some(value),
            _ => {}
        }
    }
    Some(Challenge::Bearer {
        realm: realm?,
        service,
    })
}

/// What a registry is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Pull,
    Push,
}

/// One repository of one registry, authenticated as far as it asked: every request of an
/// install, a publish or a sign goes through `send`.
pub struct Registry {
    /// The reference as given, for messages.
    reference: String,
    /// `HOST[:PORT]`.
    registry: String,
    repository: String,
    /// `https://HOST[:PORT]/` (http for a loopback host): the origin credentials go to.
    base: Url,
    http: reqwest::Client,
    /// Sent only to `base`'s origin.
    authorization: Option<HeaderValue>,
}

impl Registry {
    /// Connects to `registry` for `repository`: asks `/v2/` what authentication it wants and
    /// gets it (a token from its token service, or basic credentials), by the rules above.
    pub async fn connect(
        reference: &str,
        registry: &str,
        repository: &str,
        credentials: &RegistryAuth,
        access: Access,
    ) -> Result<Registry, RemoteError> {
        let host = registry_host(registry);
        let scheme = if is_loopback_host(host) {
            "http"
        } else {
            "https"
        };
        let base = Url::parse(&format!("{scheme}://{registry}/")).map_err(|e| {
            RemoteError::BadReference {
                given: one_line(reference, 200),
                why: format!(
                    "its registry `{}` is not a host ({e})",
                    one_line(registry, 100)
                ),
            }
        })?;
        crate::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .user_agent(concat!("paddock/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RemoteError::Registry {
                reference: one_line(reference, 200),
                action: "setting up the client",
                answer: error_chain(&e),
                fix: "this is a bug in paddock; report it".into(),
            })?;
        let mut this = Registry {
            reference: reference.to_string(),
            registry: registry.to_string(),
            repository: repository.to_string(),
            base,
            http,
            authorization: None,
        };
        this.authorization = this.authenticate(credentials, access).await?;
        Ok(this)
    }

    /// The `Authorization` value for the registry's own requests, if it wants one: a token
    /// the user gave as it is; else what `/v2/` asks for: basic credentials, or a bearer
    /// token from the token service it names.
    async fn authenticate(
        &self,
        credentials: &RegistryAuth,
        access: Access,
    ) -> Result<Option<HeaderValue>, RemoteError> {
        let basic = match credentials {
            // A token from the user is the registry's bearer token as it is.
            RegistryAuth::Bearer(token) => {
                return Ok(Some(header_value(&format!("Bearer {token}"))));
            }
            RegistryAuth::Basic(user, password) => {
                use base64::Engine;
                let pair = format!("{user}:{password}");
                Some(header_value(&format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                )))
            }
            RegistryAuth::Anonymous => None,
        };
        match self.challenge().await? {
            Some(Challenge::Bearer { realm, service }) => {
                let token = self
                    .token(&realm, service.as_deref(), basic, access)
                    .await?;
                Ok(Some(header_value(&format!("Bearer {token}"))))
            }
            Some(Challenge::Basic | Challenge::Other(_)) => Ok(basic),
            // Not asked for credentials, or asked without saying how.
            None => Ok(None),
        }
    }

    /// What `/v2/` answers a request without credentials: no challenge when it lets it in;
    /// the challenge of its 401 (a missing or unreadable one taken as basic).
    async fn challenge(&self) -> Result<Option<Challenge>, RemoteError> {
        let probe = self.base.join("v2/").unwrap_or_else(|_| self.base.clone());
        let response = self
            .send(
                Method::GET,
                probe,
                HeaderMap::new(),
                None,
                None,
                AUTHENTICATING,
            )
            .await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(None);
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_challenge);
        Ok(Some(challenge.unwrap_or(Challenge::Basic)))
    }

    /// A bearer token from the token service at `realm` for `access` to this repository,
    /// asked with `basic` only when the service is on the registry's own origin.
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        basic: Option<HeaderValue>,
        access: Access,
    ) -> Result<String, RemoteError> {
        let url = self.token_url(realm, service, access)?;
        // The credentials are the registry's: a token service on another origin gets none.
        let withheld = basic.is_some() && !same_origin(&self.base, &url);
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let response = self
            .send(
                Method::GET,
                url,
                headers,
                None,
                basic.as_ref(),
                AUTHENTICATING,
            )
            .await?;
        let status = response.status();
        if !status.is_success() {
            let withheld_note = if withheld {
                format!(
                    " (its token service is on another host, {}, so paddock did not send it \
                     your credentials: paddock sends them only to {})",
                    one_line(realm, 200),
                    self.base.as_str().trim_end_matches('/')
                )
            } else {
                String::new()
            };
            let answer = self.error_text(response).await;
            return Err(self.unauthorized(
                AUTHENTICATING,
                format!("its token service answered HTTP {status}: {answer}{withheld_note}"),
            ));
        }
        self.read_token(response).await
    }

    /// The token service's URL for `realm`, checked as any hop is, asking for `access`.
    fn token_url(
        &self,
        realm: &str,
        service: Option<&str>,
        access: Access,
    ) -> Result<Url, RemoteError> {
        let mut url = self.base.join(realm).map_err(|e| RemoteError::Registry {
            reference: self.reference.clone(),
            action: AUTHENTICATING,
            answer: format!(
                "its token service `{}` is not a URL ({e})",
                one_line(realm, 200)
            ),
            fix: format!("check that {} is a working registry", self.registry),
        })?;
        check_hop(&self.base, &url).map_err(|why| RemoteError::Registry {
            reference: self.reference.clone(),
            action: AUTHENTICATING,
            answer: format!("the registry names a token service paddock does not use: {why}"),
            fix: format!(
                "a registry's token service must be https (plain http only on this machine, for \
                 a loopback registry); ask the operator of {} to fix it",
                self.registry
            ),
        })?;
        let scope = match access {
            Access::Pull => format!("repository:{}:pull", self.repository),
            Access::Push => format!("repository:{}:pull,push", self.repository),
        };
        url.query_pairs_mut().append_pair("scope", &scope);
        if let Some(service) = service {
            url.query_pairs_mut().append_pair("service", service);
        }
        Ok(url)
    }

    /// The token in the token service's answer, read through its cap.
    async fn read_token(&self, response: reqwest::Response) -> Result<String, RemoteError> {
        let body = read_capped(response, MAX_TOKEN_BYTES).await.map_err(|e| {
            self.body_error(
                AUTHENTICATING,
                "the token service's answer",
                MAX_TOKEN_BYTES,
                e,
            )
        })?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        serde_json::from_slice::<Token>(&body)
            .ok()
            .and_then(|t| t.token.or(t.access_token))
            .filter(|t| !t.is_empty() && t.len() < MAX_TOKEN_BYTES)
            .ok_or_else(|| RemoteError::Registry {
                reference: self.reference.clone(),
                action: AUTHENTICATING,
                answer: "its token service answered without a token".into(),
                fix: format!("check that {} is a working registry", self.registry),
            })
    }

    /// `url` requested, its redirects followed one at a time by `check_hop`'s rules, with
    /// `authorization` attached only while the URL is the registry's own origin.
    async fn send(
        &self,
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: Option<bytes::Bytes>,
        authorization: Option<&HeaderValue>,
        action: &'static str,
    ) -> Result<reqwest::Response, RemoteError> {
        let mut url = url;
        let mut method = method;
        let mut body = body;
        for _ in 0..=MAX_REDIRECTS {
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(value) = authorization
                && same_origin(&url, &self.base)
            {
                request = request.header(AUTHORIZATION, value.clone());
            }
            if let Some(body) = &body {
                request = request.body(body.clone());
            }
            let response = request
                .send()
                .await
                .map_err(|e| self.transport_error(action, &e))?;
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(response);
            }
            let Some(location) = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
            else {
                return Ok(response);
            };
            let next = url.join(location).map_err(|e| RemoteError::Registry {
                reference: self.reference.clone(),
                action,
                answer: format!(
                    "HTTP {status} to `{}`, which is not a URL ({e})",
                    one_line(location, 200)
                ),
                fix: format!("check that {} is a working registry", self.registry),
            })?;
            check_hop(&url, &next).map_err(|why| RemoteError::Registry {
                reference: self.reference.clone(),
                action,
                answer: format!("a redirect paddock refuses: {why}"),
                fix: format!(
                    "paddock follows a registry's redirects only over https (plain http only \
                     between loopback addresses); ask the operator of {} to fix it",
                    self.registry
                ),
            })?;
            if status == StatusCode::SEE_OTHER && method != Method::HEAD {
                method = Method::GET;
                body = None;
            }
            url = next;
        }
        Err(RemoteError::Registry {
            reference: self.reference.clone(),
            action,
            answer: format!("more than {MAX_REDIRECTS} redirects"),
            fix: format!("check that {} is a working registry", self.registry),
        })
    }

    fn url(&self, rest: &str) -> Url {
        let path = format!("v2/{}/{rest}", self.repository);
        self.base.join(&path).unwrap_or_else(|_| self.base.clone())
    }

    /// `rest` of this repository's API (`manifests/…`, `blobs/…`) requested with the registry's
    /// own authorization.
    async fn call(
        &self,
        method: Method,
        rest: &str,
        headers: HeaderMap,
        body: Option<bytes::Bytes>,
        action: &'static str,
    ) -> Result<reqwest::Response, RemoteError> {
        let url = self.url(rest);
        let authorization = self.authorization.as_ref();
        self.send(method, url, headers, body, authorization, action)
            .await
    }

    fn accept(types: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, header_value(&types.join(", ")));
        headers
    }

    /// The digest `reference` (a tag or a digest) resolves to: the registry's
    /// `Docker-Content-Digest` on a HEAD, else the SHA-256 of the manifest it sends (capped).
    /// Either way the manifest is then fetched by that digest and checked against it.
    pub async fn manifest_digest(
        &self,
        reference: &str,
        accept: &[&str],
        action: &'static str,
    ) -> Result<String, RemoteError> {
        let response = self
            .call(
                Method::HEAD,
                &format!("manifests/{reference}"),
                Self::accept(accept),
                None,
                action,
            )
            .await?;
        if !response.status().is_success() {
            return Err(self.status_error(action, response).await);
        }
        if let Some(digest) = response
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .filter(|d| d.starts_with("sha256:"))
        {
            return Ok(digest.to_string());
        }
        match self.manifest(reference, accept, action).await? {
            Some(bytes) => Ok(format!(
                "sha256:{}",
                paddock_types::stamp::sha256_hex(&bytes)
            )),
            None => Err(RemoteError::Registry {
                reference: self.reference.clone(),
                action,
                answer: "the registry found the manifest, then did not".into(),
                fix: self.missing_fix(),
            }),
        }
    }

    /// The manifest at `reference`, read through the 4 MiB cap; `None` when the registry
    /// says there is none (HTTP 404).
    pub async fn manifest(
        &self,
        reference: &str,
        accept: &[&str],
        action: &'static str,
    ) -> Result<Option<Vec<u8>>, RemoteError> {
        let response = self
            .call(
                Method::GET,
                &format!("manifests/{reference}"),
                Self::accept(accept),
                None,
                action,
            )
            .await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(self.status_error(action, response).await);
        }
        read_capped(response, MAX_MANIFEST_BYTES)
            .await
            .map(Some)
            .map_err(|e| self.body_error(action, "the manifest", MAX_MANIFEST_BYTES, e))
    }

    /// The blob `digest`'s response, its body not read yet (the caller streams it against
    /// its own cap and deadline).
    pub async fn blob(
        &self,
        digest: &str,
        action: &'static str,
    ) -> Result<reqwest::Response, RemoteError> {
        let response = self
            .call(
                Method::GET,
                &format!("blobs/{digest}"),
                HeaderMap::new(),
                None,
                action,
            )
            .await?;
        if !response.status().is_success() {
            return Err(self.status_error(action, response).await);
        }
        Ok(response)
    }

    /// Uploads `bytes` as blob `digest` (monolithic: one POST for a location, one PUT), unless
    /// the registry has it already.
    pub async fn push_blob(
        &self,
        bytes: Vec<u8>,
        digest: &str,
        action: &'static str,
    ) -> Result<(), RemoteError> {
        let exists = self
            .call(
                Method::HEAD,
                &format!("blobs/{digest}"),
                HeaderMap::new(),
                None,
                action,
            )
            .await?;
        if exists.status().is_success() {
            return Ok(());
        }
        let started = self
            .call(
                Method::POST,
                "blobs/uploads/",
                HeaderMap::new(),
                Some(bytes::Bytes::new()),
                action,
            )
            .await?;
        if started.status() != StatusCode::ACCEPTED {
            return Err(self.status_error(action, started).await);
        }
        let location = started
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| started.url().join(l).ok())
            .ok_or_else(|| RemoteError::Registry {
                reference: self.reference.clone(),
                action,
                answer: "the registry started an upload without a usable Location".into(),
                fix: format!("check that {} is a working registry", self.registry),
            })?;
        check_hop(started.url(), &location).map_err(|why| RemoteError::Registry {
            reference: self.reference.clone(),
            action,
            answer: format!("an upload location paddock refuses: {why}"),
            fix: format!("ask the operator of {} to fix it", self.registry),
        })?;
        let mut url = location;
        url.query_pairs_mut().append_pair("digest", digest);
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        let authorization = self.authorization.as_ref();
        let done = self
            .send(
                Method::PUT,
                url,
                headers,
                Some(bytes.into()),
                authorization,
                action,
            )
            .await?;
        if done.status() != StatusCode::CREATED {
            return Err(self.status_error(action, done).await);
        }
        Ok(())
    }

    /// Puts `manifest` (of `media_type`) at `tag`.
    pub async fn push_manifest(
        &self,
        tag: &str,
        manifest: Vec<u8>,
        media_type: &str,
        action: &'static str,
    ) -> Result<(), RemoteError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, header_value(media_type));
        let done = self
            .call(
                Method::PUT,
                &format!("manifests/{tag}"),
                headers,
                Some(manifest.into()),
                action,
            )
            .await?;
        if done.status() != StatusCode::CREATED {
            return Err(self.status_error(action, done).await);
        }
        Ok(())
    }

    /// The registry's error text: the messages of a distribution error envelope, else the
    /// body, read through a cap.
    async fn error_text(&self, response: reqwest::Response) -> String {
        let body = match read_capped(response, MAX_ERROR_BYTES).await {
            Ok(body) => body,
            Err(BodyError::TooLarge { .. }) => return "(an error body over 16 KiB)".into(),
            Err(BodyError::Broken(why)) => return format!("(its body broke off: {why})"),
        };
        #[derive(serde::Deserialize)]
        struct Envelope {
            errors: Vec<Entry>,
        }
        #[derive(serde::Deserialize)]
        struct Entry {
            code: Option<String>,
            message: Option<String>,
        }
        if let Ok(envelope) = serde_json::from_slice::<Envelope>(&body)
            && !envelope.errors.is_empty()
        {
            let parts: Vec<String> = envelope
                .errors
                .iter()
                .take(5)
                .map(|e| {
                    format!(
                        "{} {}",
                        e.code.as_deref().unwrap_or_default(),
                        e.message.as_deref().unwrap_or_default()
                    )
                    .trim()
                    .to_string()
                })
                .collect();
            return one_line(&parts.join("; "), 300);
        }
        one_line(String::from_utf8_lossy(&body).trim(), 300)
    }

    /// A response that is not a success, with a fix chosen from its status.
    async fn status_error(&self, action: &'static str, response: reqwest::Response) -> RemoteError {
        let status = response.status();
        let url = one_line(response.url().as_str(), 200);
        let text = self.error_text(response).await;
        let answer = match status {
            StatusCode::UNAUTHORIZED => format!("HTTP {status}: Not authorized for {url}: {text}"),
            _ => format!("HTTP {status} for {url}: {text}"),
        };
        let fix = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return self.unauthorized(action, answer);
            }
            StatusCode::NOT_FOUND => self.missing_fix(),
            _ => "check the reference and the registry".to_string(),
        };
        RemoteError::Registry {
            reference: self.reference.clone(),
            action,
            answer,
            fix,
        }
    }

    fn transport_error(&self, action: &'static str, e: &reqwest::Error) -> RemoteError {
        let fix = if e.is_connect() || e.is_timeout() {
            format!(
                "is a registry running and reachable at {}? paddock speaks https to it (plain \
                 http only to 127.0.0.1, ::1 or localhost)",
                self.registry
            )
        } else {
            "try again; if it persists, check the registry".to_string()
        };
        RemoteError::Registry {
            reference: self.reference.clone(),
            action,
            answer: error_chain(e),
            fix,
        }
    }

    /// A body not read whole: past its cap, or broken off.
    pub fn body_error(
        &self,
        action: &'static str,
        what: &str,
        cap: usize,
        e: BodyError,
    ) -> RemoteError {
        match e {
            BodyError::TooLarge { read, announced } => RemoteError::Registry {
                reference: self.reference.clone(),
                action,
                answer: match announced {
                    Some(n) if read == 0 => format!(
                        "{what} is announced as {n} bytes, over the {cap} paddock reads; nothing \
                         was read"
                    ),
                    _ => format!(
                        "{what} is over the {cap} bytes paddock reads; it stopped reading at \
                         {read} bytes"
                    ),
                },
                fix: format!(
                    "{} is broken or hostile: do not install from it",
                    self.registry
                ),
            },
            BodyError::Broken(why) => RemoteError::Registry {
                reference: self.reference.clone(),
                action,
                answer: format!("{what} broke off: {why}"),
                fix: "try again; if it persists, check the registry".into(),
            },
        }
    }

    /// `action` refused for want of credentials (the registry's `answer`).
    fn unauthorized(&self, action: &'static str, answer: String) -> RemoteError {
        RemoteError::Unauthorized {
            reference: self.reference.clone(),
            action,
            answer,
            registry: self.registry.clone(),
        }
    }

    pub fn missing_fix(&self) -> String {
        format!(
            "check the repository and the tag or digest (`skopeo list-tags docker://{}/{}` \
             lists the tags)",
            self.registry, self.repository
        )
    }
}

/// The host of `HOST[:PORT]` (brackets kept off an IPv6 address).
fn registry_host(registry: &str) -> &str {
    if let Some(rest) = registry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match registry.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => registry,
    }
}

/// A header value from text paddock built; one with a byte HTTP forbids is sent empty (and
/// then refused by the registry) rather than panicking.
fn header_value(text: &str) -> HeaderValue {
    let mut value = HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""));
    if text.starts_with("Bearer ") || text.starts_with("Basic ") {
        value.set_sensitive(true);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_as_registries_send_them() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"bearer service="x", realm="https://a/t\"q""#),
            Some(Challenge::Bearer {
                realm: "https://a/t\"q".into(),
                service: Some("x".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge(r#"Bearer service="x""#), None);
        assert!(matches!(
            parse_challenge("Negotiate abc"),
            Some(Challenge::Other(_))
        ));
    }
}
