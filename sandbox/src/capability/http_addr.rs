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
    let candidates: Vec<IpAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
        .map(|addr| addr.ip())
        .collect();
    choose(host, port, &candidates)
}

/// Of the addresses `host` resolved to, the first public one; else why none may be used.
fn choose(host: &str, port: u16, candidates: &[IpAddr]) -> Result<SocketAddr, String> {
    let mut refused = Vec::new();
    for ip in candidates {
        let ip = canonical(*ip);
        if is_public(ip) {
            return Ok(SocketAddr::new(ip, port));
        }
        refused.push(ip.to_string());
    }
    let Some(first) = refused.first() else {
        return Err(format!("`{host}` resolves to no address"));
    };
    let shown = match first.parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) => format!("[{first}]"),
        _ => first.clone(),
    };
    Err(format!(
        "request to `{host}` is denied: it resolves to {} (loopback, private, link-local or \
         otherwise not public); a name may only lead to public addresses. To reach that \
         address, grant it by address (e.g. \"http://{shown}:{port}\" in the http allow-list) \
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
    let seg = ip.segments();
    // 6to4 (2002::/16) carries an IPv4 address: only as public as that address.
    if seg[0] == 0x2002 {
        let [a, b] = seg[1].to_be_bytes();
        let [c, d] = seg[2].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_multicast()
        // ::/64: loopback, IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d);
        // IPv4-mapped ones were turned into IPv4 by `canonical`.
        || seg[..4] == [0, 0, 0, 0]
        || seg[..4] == [0x0100, 0, 0, 0] // discard-only (100::/64)
        || (seg[0] & 0xfe00) == 0xfc00 // unique local
        || (seg[0] & 0xffc0) == 0xfe80 // link-local
        || (seg[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (seg[0] == 0x2001 && seg[1] < 0x0200) // IETF protocol assignments, Teredo (2001::/23)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x3fff && seg[1] < 0x1000) // documentation (3fff::/20)
        || (seg[0] == 0x0064 && seg[1] == 0xff9b)) // NAT64 maps onto IPv4 (64:ff9b::/96, 64:ff9b:1::/48)
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
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::ffff:0:127.0.0.1",
            "fc00::1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2001::1",
            "100::1",
            "ff02::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        assert!(is_public("93.184.216.34".parse().unwrap()));
        assert!(is_public("2606:4700::1111".parse().unwrap()));
        assert!(
            is_public("2002:5db8:d822::1".parse().unwrap()),
            "6to4 of a public v4"
        );
    }

    /// What a wildcard name under the allow-list may resolve to, each refused, and a name
    /// with a public address among private ones gets the public one (and only it).
    #[test]
    fn a_name_resolving_to_any_non_public_address_is_refused() {
        for private in [
            "127.0.0.1",
            "::1",
            "10.0.0.7",
            "169.254.169.254",
            "fc00::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            let err = choose("a.allowed.example", 443, &[ip]).unwrap_err();
            assert!(err.contains("not public"), "{private}: {err}");
        }
        let mixed: [IpAddr; 2] = [
            "127.0.0.1".parse().unwrap(),
            "93.184.216.34".parse().unwrap(),
        ];
        assert_eq!(
            choose("a.allowed.example", 443, &mixed).unwrap(),
            "93.184.216.34:443".parse().unwrap()
        );
        let err = choose("v6.example", 80, &["fd00::1".parse().unwrap()]).unwrap_err();
        assert!(err.contains("\"http://[fd00::1]:80\""), "{err}");
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_and_an_address_grant_allows_it() {
        let err = checked_address("localhost", 80).await.unwrap_err();
        assert!(err.contains("127.0.0.1") || err.contains("::1"), "{err}");
        let ok = checked_address("127.0.0.1", 80).await.unwrap();
        assert_eq!(ok, "127.0.0.1:80".parse().unwrap());
    }
}
