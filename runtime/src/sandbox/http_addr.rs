//! Which addresses the `http` capability may connect to (S6): an allow-list names hosts, but a
//! name under an allowed wildcard can resolve anywhere, including loopback and the private
//! network paddock runs in. So the host name is resolved here, every address that is not
//! public (loopback, private, link-local, unspecified, shared, multicast, ...) is refused
//! unless the request names the address itself (which the allow-list then had to name), and
//! the connection is pinned to the address that
//! was checked (`http.rs` hands it to reqwest's resolver), so a second DNS answer cannot
//! change where it goes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The address a request to `host` (which passed the allow-list) may connect to, or why none
/// may be used. A host written as an address was named by address in the allow-list, so it is
/// used as it is, private or not; a name may only lead to public addresses.
pub async fn checked_address(host: &str, port: u16) -> Result<SocketAddr, String> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(SocketAddr::new(canonical(ip), port));
    }
    let candidates: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
        .collect();
    let mut refused = Vec::new();
    for addr in candidates {
        let ip = canonical(addr.ip());
        if is_public(ip) {
            return Ok(SocketAddr::new(ip, port));
        }
        refused.push(ip.to_string());
    }
    let Some(first) = refused.first() else {
        return Err(format!("`{host}` resolves to no address"));
    };
    Err(format!(
        "request to `{host}` is denied: it resolves to {} (loopback, private, link-local or \
         otherwise not public); a name may only lead to public addresses. To reach that \
         address, grant it by address (e.g. \"http://{first}:{port}\" in the http allow-list) \
         and use it in the URL",
        refused.join(", "),
    ))
}

/// An IPv4-mapped IPv6 address is its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A globally routable unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
        || first == 0x2001 && ip.segments()[1] == 0x0db8 // documentation
        || first == 0x0064 && ip.segments()[1] == 0xff9b) // NAT64 maps onto IPv4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_pass_unless_granted_by_address() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        assert!(is_public("93.184.216.34".parse().unwrap()));
        assert!(is_public("2606:4700::1111".parse().unwrap()));
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_and_an_address_grant_allows_it() {
        let err = checked_address("localhost", 80).await.unwrap_err();
        assert!(err.contains("127.0.0.1") || err.contains("::1"), "{err}");
        let ok = checked_address("127.0.0.1", 80).await.unwrap();
        assert_eq!(ok, "127.0.0.1:80".parse().unwrap());
    }
}
