//! The key a client address is counted under, wherever clients are counted
//! (connections, sign-in failures).

use std::net::{IpAddr, Ipv6Addr};

/// The address a client is counted under: an IPv6 client controls a whole
/// /64, so it is counted by that prefix; an IPv4-mapped address is IPv4.
pub fn client_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}
