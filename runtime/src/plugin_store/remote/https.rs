//! An install from `https://HOST/PATH.wasm` with the SHA-256 it must have: one GET, streamed
//! into a private temporary file while hashed, kept only if its SHA-256 is the one given,
//! within the download deadline (`PADDOCK_DOWNLOAD_TIMEOUT_SECS`). https only (plain http to a loopback
//! host only); a redirect must follow the same rule, may not lead from https to http nor from
//! another host to this machine, and may not chain more than a few times.

use std::path::Path;
use std::time::Duration;

use paddock_types::text::one_line;

use super::hop::{check_hop, is_loopback_host};
use super::{
    Download, MAX_PLUGIN_BYTES, Origin, Progress, RemoteError, Verified, download_deadline,
    error_chain, parse_sha256, read_capped,
};

const MAX_REDIRECTS: usize = 5;

/// Checks that `url` may be fetched: https, or http to a loopback host.
pub fn check_url(given: &str) -> Result<reqwest::Url, RemoteError> {
    let url = reqwest::Url::parse(given).map_err(|e| RemoteError::BadReference {
        given: one_line(given, 200),
        why: format!("not a URL ({e})"),
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(RemoteError::BadReference {
            given: "the URL given".into(),
            why: "it carries credentials (user:password@), which would be recorded with the \
                  plugin; serve the file without them"
                .into(),
        });
    }
    let host = url.host_str().unwrap_or_default().to_string();
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback_host(&host) => Ok(url),
        "http" => Err(RemoteError::InsecureHttp {
            url: one_line(given, 200),
        }),
        other => Err(RemoteError::BadReference {
            given: one_line(given, 200),
            why: format!("the scheme `{other}` is not oci:// or https://"),
        }),
    }
}

/// Downloads `url` into the data directory and checks it against `sha256` (hex).
pub async fn download(
    given: &str,
    sha256: &str,
    data_dir: &Path,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Verified, Origin), RemoteError> {
    let expected = parse_sha256(sha256)?;
    let url = check_url(given)?;
    let from_loopback = url.host_str().is_some_and(is_loopback_host);
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        let next = attempt.url().to_string();
        if let Err(e) = check_url(&next) {
            return attempt.error(format!("a redirect to {}", e));
        }
        if let Some(previous) = attempt.previous().last()
            && let Err(why) = check_hop(previous, attempt.url())
        {
            return attempt.error(format!("a redirect refused: {why}"));
        }
        if !from_loopback && attempt.url().host_str().is_some_and(is_loopback_host) {
            return attempt.error(format!(
                "a redirect from another host to this machine ({}) is refused",
                one_line(&next, 200)
            ));
        }
        attempt.follow()
    });
    let client = reqwest::Client::builder()
        .redirect(policy)
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("paddock/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| fetch_error(given, "cannot build an HTTP client", &e))?;
    let limit = download_deadline()?;
    let deadline = tokio::time::Instant::now() + limit;
    let mut response = tokio::time::timeout_at(deadline, client.get(url).send())
        .await
        .map_err(|_| RemoteError::deadline(given, "the download", limit, 0, None))?
        .map_err(|e| fetch_error(given, "the request failed", &e))?;
    let status = response.status();
    if !status.is_success() {
        let body = tokio::time::timeout_at(deadline, read_capped(response, 16 << 10))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        return Err(RemoteError::Registry {
            reference: one_line(given, 200),
            action: "downloading the plugin",
            answer: format!("HTTP {status}: {}", one_line(body.trim(), 300)),
            fix: "check the URL (it must name the .wasm file itself)".to_string(),
        });
    }
    let what = format!("the file at {}", one_line(given, 200));
    let mut download =
        Download::start(data_dir, &what, MAX_PLUGIN_BYTES, response.content_length())?;
    progress(download.progress());
    loop {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Err(_) => {
                let total = response.content_length();
                return Err(RemoteError::deadline(
                    given,
                    "the download",
                    limit,
                    download.size(),
                    total,
                ));
            }
            Ok(chunk) => chunk.map_err(|e| fetch_error(given, "the download broke off", &e))?,
        };
        let Some(chunk) = chunk else { break };
        download.write(&chunk)?;
        progress(download.progress());
    }
    let verified = download.finish(&expected, "the SHA-256 asked for is")?;
    let origin = Origin::Https {
        url: given.to_string(),
        sha256: verified.sha256.clone(),
    };
    Ok((verified, origin))
}

fn fetch_error(given: &str, action: &'static str, e: &reqwest::Error) -> RemoteError {
    RemoteError::Registry {
        reference: one_line(given, 200),
        action,
        answer: error_chain(e),
        fix: "check the URL and that the host is reachable".to_string(),
    }
}
