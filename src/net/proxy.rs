//! The client address behind trusted reverse proxies. A request from a
//! configured proxy names its client in `X-Forwarded-For`; the address used
//! is the right-most entry not itself a trusted proxy, since every proxy
//! appends what it saw and anything further left was written by the client
//! and may be forged. A request from anywhere else is its peer address, and
//! its `X-Forwarded-For` is ignored.
//!
//! Entries are read from the raw header bytes, one comma-separated entry at
//! a time, so bytes a client sent before the proxy's own entry cannot spoil
//! it; `ip:port` and `[ipv6]:port` (Azure, IIS) are read as their address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// One `address/prefix` range (a bare address is a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address: IpAddr = address
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or CIDR range"))?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{text:?} has a prefix length outside 0..={max}"))?,
        };
        // An IPv4-mapped range is the IPv4 range it maps: peers are
        // compared as IPv4 too.
        let (network, prefix) = match address {
            IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => (
                IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED)),
                prefix - 96,
            ),
            other => (other, prefix),
        };
        Ok(Self {
            network: masked(network, prefix),
            prefix,
        })
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, canonical(address)) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                same_prefix(u32::from(net).into(), u32::from(a).into(), self.prefix, 32)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                same_prefix(u128::from(net), u128::from(a), self.prefix, 128)
            }
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// The network address itself (`10.1.2.3/8` is `10.0.0.0/8`).
fn masked(address: IpAddr, prefix: u8) -> IpAddr {
    let keep = |bits: u32| {
        let host = bits - u32::from(prefix);
        if host >= bits { 0 } else { u128::MAX << host }
    };
    match address {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(
            (u128::from(u32::from(v4)) & keep(32)) as u32,
        )),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & keep(128))),
    }
}

fn same_prefix(a: u128, b: u128, prefix: u8, bits: u32) -> bool {
    let shift = bits - u32::from(prefix);
    shift >= bits || (a >> shift) == (b >> shift)
}

/// An IPv4-mapped IPv6 address is the IPv4 address it maps.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(pub Vec<Cidr>);

impl TrustedProxies {
    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|c| c.contains(address))
    }

    /// The client of a request from `peer` carrying these `X-Forwarded-For`
    /// header values (raw bytes, in the order received).
    pub fn client<'a>(
        &self,
        peer: IpAddr,
        forwarded_for: impl Iterator<Item = &'a [u8]>,
    ) -> IpAddr {
        if !self.trusts(peer) {
            return canonical(peer);
        }
        let hops: Vec<&[u8]> = forwarded_for
            .flat_map(|v| v.split(|&b| b == b','))
            .collect();
        let mut client = canonical(peer);
        for hop in hops.iter().rev() {
            // An unreadable entry ends the chain: nothing left of it can be
            // attributed, so the last proxy that wrote a good one is used.
            let Some(address) = hop_address(hop) else {
                break;
            };
            client = canonical(address);
            if !self.trusts(address) {
                break;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: `ip`, `ip:port` or `[ipv6]:port`.
fn hop_address(hop: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(hop).ok()?.trim();
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn proxies(ranges: &[&str]) -> TrustedProxies {
        TrustedProxies(ranges.iter().map(|r| Cidr::parse(r).unwrap()).collect())
    }

    #[test]
    fn ranges_parse_and_match() {
        let lan = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(lan.contains(ip("10.200.3.4")));
        assert!(
            lan.contains(ip("::ffff:10.1.1.1")),
            "IPv4-mapped counts as IPv4"
        );
        assert!(!lan.contains(ip("11.0.0.1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Cidr::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        assert!(Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.1")));
        assert!(!Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.2")));
        for bad in ["", "10.0.0.0/33", "proxy.internal", "10.0.0.0/x", "::/129"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_client_is_the_rightmost_untrusted_hop() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let header: [&[u8]; 2] = [b"6.6.6.6, 203.0.113.7", b"10.0.0.9"];
        assert_eq!(
            trusted.client(ip("10.0.0.1"), header.into_iter()),
            ip("203.0.113.7"),
            "the forged left-most entry is ignored"
        );
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let trusted = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            trusted.client(ip("198.51.100.4"), [&b"1.2.3.4"[..]].into_iter()),
            ip("198.51.100.4")
        );
        assert_eq!(
            TrustedProxies::default().client(ip("10.0.0.1"), [&b"1.2.3.4"[..]].into_iter()),
            ip("10.0.0.1"),
            "no proxies configured: the header is never read"
        );
    }

    #[test]
    fn a_garbled_or_missing_header_leaves_the_last_good_hop() {
        let trusted = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            trusted.client(ip("10.0.0.1"), [&b"unknown, 10.0.0.2"[..]].into_iter()),
            ip("10.0.0.2")
        );
        assert_eq!(
            trusted.client(ip("10.0.0.1"), std::iter::empty()),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn bytes_a_client_sent_cannot_spoil_the_entry_the_proxy_appended() {
        let trusted = proxies(&["127.0.0.1"]);
        for header in [
            &b"\xff\xfe, 198.51.100.7"[..],
            b"198.51.100.7:5555",
            b"junk, [2001:db8::7]:443",
        ] {
            let client = trusted.client(ip("127.0.0.1"), [header].into_iter());
            assert_ne!(client, ip("127.0.0.1"), "{header:?}");
        }
        assert_eq!(
            trusted.client(ip("127.0.0.1"), [&b"\xff, 198.51.100.7"[..]].into_iter()),
            ip("198.51.100.7")
        );
    }

    #[test]
    fn mapped_and_unmasked_ranges_mean_what_they_say() {
        let mapped = Cidr::parse("::ffff:10.0.0.0/104").unwrap();
        assert_eq!(mapped, Cidr::parse("10.0.0.0/8").unwrap());
        assert!(mapped.contains(ip("10.9.9.9")));
        assert!(
            Cidr::parse("::ffff:127.0.0.1")
                .unwrap()
                .contains(ip("127.0.0.1"))
        );
        assert_eq!(Cidr::parse("10.1.2.3/8").unwrap().to_string(), "10.0.0.0/8");
        let one = Cidr::parse("2001:db8::1/128").unwrap();
        assert!(one.contains(ip("2001:db8::1")) && !one.contains(ip("2001:db8::2")));
    }
}
