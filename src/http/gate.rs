//! Connection admission. Every accepted connection asks for a [`Ticket`]
//! before a byte of it is parsed, and is closed at once when the instance
//! is full, or when it is at least half full and the connection's address
//! already holds its share. So a burst from one provider is never refused on
//! an idle instance, and no single address can hold more than half the
//! places while others need them. When the instance is full, a small
//! reserve still admits addresses that hold (almost) nothing, so a flood
//! from many addresses does not shut out a provider's next delivery. A
//! ticket gives its place back when the connection ends, however it ends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::Limits;
use crate::net::client_key;

/// Why a connection was closed unserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_connections` connections were open, and the reserve beyond
    /// them was used up or not for this address.
    Full,
    /// The instance was at least half full and its address already held
    /// `max_connections_per_address`.
    PerAddress,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Full => "refused_full",
            Refusal::PerAddress => "refused_per_address",
        }
    }
}

/// Beyond `max_connections`, an eighth more is kept for addresses holding
/// fewer than [`RESERVE_HOLDING`] connections.
const RESERVE_DIVISOR: usize = 8;
const RESERVE_HOLDING: usize = 2;

#[derive(Debug)]
pub struct ConnectionGate {
    max_total: usize,
    max_per_address: Option<usize>,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it frees the place.
#[derive(Debug)]
pub struct Ticket {
    gate: Arc<ConnectionGate>,
    address: Option<IpAddr>,
}

impl ConnectionGate {
    pub fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            max_total: limits.max_connections,
            max_per_address: limits.max_connections_per_address,
            open: Mutex::default(),
        })
    }

    /// Admits a connection from `peer` (unknown for a socket that closed
    /// before it could be asked), or says why not.
    pub fn admit(self: &Arc<Self>, peer: Option<IpAddr>) -> Result<Ticket, Refusal> {
        let mut open = self.lock();
        let total = open.total;
        let key = peer
            .filter(|_| self.max_per_address.is_some())
            .map(client_key);
        let held = key.map_or(0, |k| open.by_address.get(&k).copied().unwrap_or(0));
        if total >= self.max_total {
            // Full: only the reserve is left, and only for an address with
            // (almost) nothing open, such as a provider's next delivery while
            // many addresses flood. Without per-address counts there is none.
            let reserve = self.max_total / RESERVE_DIVISOR;
            if key.is_none() || held >= RESERVE_HOLDING || total >= self.max_total + reserve {
                return Err(Refusal::Full);
            }
        } else if let Some(max) = self.max_per_address
            && key.is_some()
            && total >= self.max_total / 2
            && held >= max
        {
            return Err(Refusal::PerAddress);
        }
        if let Some(key) = key {
            *open.by_address.entry(key).or_default() += 1;
        }
        open.total += 1;
        Ok(Ticket {
            gate: Arc::clone(self),
            address: key,
        })
    }

    /// The most connections ever admitted at once: the bound and its
    /// reserve.
    pub fn capacity(&self) -> usize {
        self.max_total + self.max_total / RESERVE_DIVISOR
    }

    /// Connections open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        // Counts stay consistent under a panic: each update is one step.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.gate.lock();
        open.total -= 1;
        if let Some(address) = self.address
            && let Some(held) = open.by_address.get_mut(&address)
        {
            *held -= 1;
            if *held == 0 {
                open.by_address.remove(&address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(total: usize, per_address: Option<usize>) -> Arc<ConnectionGate> {
        ConnectionGate::new(&Limits {
            max_connections: total,
            max_connections_per_address: per_address,
            ..Limits::default()
        })
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn one_address_cannot_take_more_than_half_the_places() {
        let gate = gate(10, Some(2));
        let mut held: Vec<Ticket> = (0..5)
            .map(|_| gate.admit(ip("10.0.0.1")).unwrap())
            .collect();
        assert_eq!(gate.admit(ip("10.0.0.1")).unwrap_err(), Refusal::PerAddress);
        // Others still get their share of the other half.
        held.extend((0..2).map(|_| gate.admit(ip("10.0.0.2")).unwrap()));
        assert_eq!(gate.admit(ip("10.0.0.2")).unwrap_err(), Refusal::PerAddress);
        assert!(gate.admit(ip("10.0.0.3")).is_ok());
        held.truncate(1);
        assert!(
            gate.admit(ip("10.0.0.1")).is_ok(),
            "below half, no share applies"
        );
    }

    #[test]
    fn the_total_bound_holds_across_addresses_and_frees_on_drop() {
        let gate = gate(2, None);
        let first = gate.admit(ip("10.0.0.1")).unwrap();
        let _second = gate.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(gate.admit(ip("10.0.0.3")).unwrap_err(), Refusal::Full);
        assert_eq!(gate.open(), 2);
        drop(first);
        assert_eq!(gate.open(), 1);
        assert!(gate.admit(ip("10.0.0.3")).is_ok());
    }

    #[test]
    fn when_full_the_reserve_admits_only_addresses_holding_almost_nothing() {
        let gate = gate(16, Some(8));
        let mut flood: Vec<Ticket> = (0..16)
            .map(|n| gate.admit(ip(&format!("10.0.1.{}", n % 4))).unwrap())
            .collect();
        assert_eq!(gate.admit(ip("10.0.1.0")).unwrap_err(), Refusal::Full);
        // The reserve is 16 / 8 = 2, for addresses holding fewer than 2.
        let sender = gate.admit(ip("10.0.2.1")).unwrap();
        let _second = gate.admit(ip("10.0.2.1")).unwrap();
        assert_eq!(gate.admit(ip("10.0.2.1")).unwrap_err(), Refusal::Full);
        assert_eq!(
            gate.admit(ip("10.0.2.2")).unwrap_err(),
            Refusal::Full,
            "reserve used"
        );
        drop(sender);
        assert!(gate.admit(ip("10.0.2.3")).is_ok());
        flood.clear();
        let without_shares = self::gate(1, None);
        let _one = without_shares.admit(ip("10.0.3.1")).unwrap();
        assert_eq!(
            without_shares.admit(ip("10.0.3.2")).unwrap_err(),
            Refusal::Full
        );
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_slash_64() {
        let gate = gate(2, Some(1));
        let _held = gate.admit(ip("2001:db8:1:2::1")).unwrap();
        assert_eq!(
            gate.admit(ip("2001:db8:1:2:ffff::9")).unwrap_err(),
            Refusal::PerAddress
        );
        assert!(gate.admit(ip("2001:db8:1:3::1")).is_ok());
    }

    #[test]
    fn an_ipv4_mapped_client_is_counted_as_ipv4() {
        let gate = gate(2, Some(1));
        let _held = gate.admit(ip("192.0.2.1")).unwrap();
        assert_eq!(
            gate.admit(ip("::ffff:192.0.2.1")).unwrap_err(),
            Refusal::PerAddress
        );
    }

    #[test]
    fn freed_addresses_leave_no_entry_behind() {
        let gate = gate(10, Some(3));
        for n in 0..5 {
            drop(gate.admit(ip(&format!("10.0.0.{n}"))).unwrap());
        }
        assert!(gate.lock().by_address.is_empty());
        assert_eq!(gate.open(), 0);
    }
}
