//! The address rule: the proxy connects only to addresses of the public
//! internet, never to the machine itself, its networks or its cloud's
//! metadata service, whatever a name resolves to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why the proxy will not connect to `ip`, or `None` when it may.
/// Documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24) pass: a
/// workplace's registry mirror may live there.
pub fn refused(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => refused_v4(ip),
        IpAddr::V6(ip) => refused_v6(ip),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(if a == 0 {
        "an unspecified address (0/8)"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_private() {
        "a private address (RFC 1918)"
    } else if ip.is_link_local() {
        "a link-local address (169.254/16, the cloud metadata service's)"
    } else if a == 100 && b & 0xc0 == 64 {
        "a carrier-grade NAT address (100.64/10)"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if a >= 240 {
        "a reserved or broadcast address (240/4)"
    } else {
        return None;
    })
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address in IPv6 clothes is judged as itself: mapped
    // (::ffff:a.b.c.d) or through NAT64's well-known prefix (64:ff9b::/96).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    if ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., a, b, c, d] = ip.octets();
        return refused_v4(Ipv4Addr::new(a, b, c, d));
    }
    Some(if ip.is_unspecified() {
        "the unspecified address (::)"
    } else if ip.is_loopback() {
        "a loopback address (::1)"
    } else if ip.is_unique_local() {
        "a unique local address (fc00::/7)"
    } else if ip.is_unicast_link_local() {
        "a link-local address (fe80::/10)"
    } else if ip.is_multicast() {
        "a multicast address (ff00::/8)"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_its_networks_and_the_metadata_service_are_refused() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.0.9",
            "10.255.255.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(refused(parsed).is_some(), "{ip} passed");
        }
    }

    #[test]
    fn public_and_documentation_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "104.16.0.35",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "169.253.0.1",
            "192.0.2.10",
            "198.51.100.7",
            "203.0.113.80",
            "2606:4700::6810:1",
            "2001:db8::1",
            "::ffff:203.0.113.80",
            "64:ff9b::68.16.0.35",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(refused(parsed), None, "{ip}");
        }
    }
}
