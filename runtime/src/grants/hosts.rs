//! When one network allow-list entry (`host`, `*.host`, with an optional `scheme://` and
//! `:port`, as the `http` capability reads them) reaches no host another does not.
//!
//! A concrete host is judged by the capability's own rule (`paddock_sandbox::http_allows`), so
//! the proof and the runtime cannot disagree about it; a wildcard is within a wildcard only
//! for the same or a deeper domain, on the same scheme and port.

use paddock_sandbox::http_allows;

/// An entry's scheme, host pattern (lower case) and port.
fn parts(entry: &str) -> Option<(String, String, u16)> {
    let (scheme, rest) = entry.split_once("://").unwrap_or(("https", entry));
    let rest = rest.trim_end_matches('/');
    let default = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            (h, p.parse::<u16>().ok()?)
        }
        _ => (rest, default),
    };
    Some((scheme.to_string(), host.to_ascii_lowercase(), port))
}

/// Whether every host `child` admits, `parent` admits too.
pub(super) fn within(child: &str, parent: &str) -> bool {
    let Some((scheme, host, port)) = parts(child) else {
        return false;
    };
    match host.strip_prefix("*.") {
        None => http_allows(parent, &scheme, &host, port),
        Some(domain) => match parts(parent) {
            Some((p_scheme, p_host, p_port)) => {
                let deeper = p_host
                    .strip_prefix("*.")
                    .is_some_and(|p| domain == p || domain.ends_with(&format!(".{p}")));
                deeper && p_scheme == scheme && p_port == port
            }
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn a_host_is_within_the_same_host_or_a_wildcard_over_it() {
        assert!(within("api.github.com", "api.github.com"));
        assert!(within("api.github.com", "*.github.com"));
        assert!(within("https://api.github.com:443", "*.github.com"));
        assert!(!within("github.com", "*.github.com"));
        assert!(!within("evil.com", "*.github.com"));
    }

    #[test]
    fn scheme_and_port_must_match() {
        assert!(!within("http://api.github.com", "api.github.com"));
        assert!(!within("api.github.com:8443", "api.github.com"));
        assert!(within("http://localhost:8080", "http://localhost:8080"));
    }

    #[test]
    fn a_wildcard_is_within_the_same_or_a_shallower_wildcard_only() {
        assert!(within("*.api.github.com", "*.github.com"));
        assert!(within("*.github.com", "*.github.com"));
        assert!(!within("*.github.com", "*.api.github.com"));
        assert!(!within("*.github.com", "api.github.com"));
        assert!(!within("*.com", "*.github.com"));
    }

    #[test]
    fn an_unknown_scheme_is_never_within() {
        assert!(!within("ftp://x.org", "*.org"));
    }
}
