//! Where a request to a registry or a server may go, hop by hop (a redirect, a token service's
//! realm, an upload location): https anywhere; plain http only to this machine, and never after
//! https; never from another host to this machine; no credentials in the URL. And which URLs
//! are one origin: credentials go to the registry's own and nowhere else.

use std::net::IpAddr;

use reqwest::Url;

use paddock_types::text::one_line;

/// True for a host name that can only mean this machine: `localhost` or a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// True when `a` and `b` are the same origin: scheme, host and port.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// Whether paddock goes on from `from` to `to` (a redirect, a token realm, an upload
/// location); else why not. https anywhere; plain http only to a loopback host and never
/// after https; never from another host to this machine; no credentials in the URL.
pub fn check_hop(from: &Url, to: &Url) -> Result<(), String> {
    let host = to.host_str().unwrap_or_default();
    let shown = one_line(to.as_str(), 200);
    match to.scheme() {
        "https" => {}
        "http" if from.scheme() == "https" => {
            return Err(format!(
                "it leads from https to plain http ({shown}), where anyone on the way reads \
                 and changes what is sent"
            ));
        }
        "http" if !is_loopback_host(host) => {
            return Err(format!(
                "it leads to plain http on a host that is not loopback ({shown})"
            ));
        }
        "http" => {}
        other => {
            return Err(format!(
                "it leads to the scheme `{}` ({shown})",
                one_line(other, 20)
            ));
        }
    }
    if !to.username().is_empty() || to.password().is_some() {
        return Err(format!("it carries credentials in the URL ({shown})"));
    }
    if !from.host_str().is_some_and(is_loopback_host) && is_loopback_host(host) {
        return Err(format!(
            "it leads from another host to this machine ({shown})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn loopback_hosts_are_only_this_machine() {
        for host in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.0.0.2",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "example.com",
            "10.0.0.1",
            "localhost.example.com",
            "0.0.0.0",
            "[::]",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_hop_never_leaves_https_for_http_nor_reaches_this_machine_from_elsewhere() {
        let registry = url("https://ghcr.io/v2/");
        assert!(
            check_hop(
                &registry,
                &url("https://pkg-containers.githubusercontent.com/x")
            )
            .is_ok()
        );
        let down = check_hop(&registry, &url("http://ghcr.io/token")).unwrap_err();
        assert!(down.contains("from https to plain http"), "{down}");
        assert!(check_hop(&registry, &url("http://127.0.0.1:5000/token")).is_err());
        let inward = check_hop(&registry, &url("https://127.0.0.1/token")).unwrap_err();
        assert!(inward.contains("to this machine"), "{inward}");
        assert!(check_hop(&registry, &url("ftp://ghcr.io/x")).is_err());
        assert!(check_hop(&registry, &url("https://u:p@ghcr.io/x")).is_err());
        let local = url("http://127.0.0.1:5000/v2/");
        assert!(check_hop(&local, &url("http://127.0.0.1:6000/token")).is_ok());
        assert!(check_hop(&local, &url("http://10.0.0.1/token")).is_err());
        assert!(check_hop(&local, &url("https://auth.example.com/token")).is_ok());
    }

    #[test]
    fn credentials_belong_to_one_scheme_host_and_port() {
        let base = url("https://registry.example.com/");
        assert!(same_origin(
            &base,
            &url("https://registry.example.com:443/token")
        ));
        assert!(same_origin(
            &base,
            &url("https://REGISTRY.example.com/v2/x")
        ));
        assert!(!same_origin(
            &base,
            &url("https://registry.example.com:8443/")
        ));
        assert!(!same_origin(&base, &url("https://auth.example.com/")));
        assert!(!same_origin(&base, &url("http://registry.example.com/")));
        let local = url("http://127.0.0.1:5000/");
        assert!(!same_origin(&local, &url("http://127.0.0.1:5001/")));
    }
}
