//! Connection admission. Every accepted connection asks for a [`Ticket`]
//! before a byte of it is parsed, and is closed at once when the instance
//! is full, or when it is at least half full and the connection's address
//! already holds its share. So a burst from one provider is never refused on
//! an idle instance, and no single address can hold more than half the
//! places while others need them. When the instance is full, a small
//! reserve still admits addresses that hold (almost) nothing, so a flood
//! from many addresses does not shut out a provider's next delivery. A
//! ticket gives its place back when the connection ends, however it ends.
//!
//! A kept-alive connection that has answered and waits for a next request
//! is idle ([`Slot::idle`]): before refusing anyone, the gate takes the
//! place of an idle connection, the refused address's own first, oldest
//! idle first, and when the instance is full anyone's, and tells that
//! connection to close ([`Ticket::reclaimed`]). Closed between requests,
//! it ends cleanly and its client simply reconnects. So a client that
//! pools connections and never closes them is not refused for holding
//! places it does not use, while the bounds still hold for connections in
//! use.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::config::Limits;
use crate::net::client_key;

/// Why a connection was closed unserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_connections` connections were open, none of them idle, and
    /// the reserve beyond them was used up or not for this address.
    Full,
    /// The instance was at least half full and its address already held
    /// `max_connections_per_address`, none of them idle.
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

/// What a connection closed to make room is counted as.
pub const CLOSED_IDLE_FOR_ROOM: &str = "closed_idle_for_room";

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
    /// Idle connections by when they became idle (a counter): all, and
    /// per client address.
    idle: BTreeMap<u64, Arc<Slot>>,
    idle_by_address: HashMap<IpAddr, BTreeSet<u64>>,
    next_idle: u64,
}

/// What the gate and a connection share: whether it is idle, and the word
/// to close when its place was given to another. Sent across threads (the
/// gate runs on whichever worker admits).
#[derive(Debug)]
pub struct Slot {
    gate: Arc<ConnectionGate>,
    /// The client's address (its /64 for IPv6), when known.
    client: Option<IpAddr>,
    /// Its key in `Open::idle` while idle; 0 when not. Changed only under
    /// the gate's lock.
    idle_since: AtomicU64,
    /// Its place was given to another connection: it must close.
    reclaimed: AtomicBool,
    close: Notify,
}

/// One admitted connection; dropping it frees the place (unless the gate
/// gave it to another already).
#[derive(Debug)]
pub struct Ticket {
    slot: Arc<Slot>,
    /// The per-address count it holds, if counted.
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
    /// before it could be asked), closing an idle one for room if it must,
    /// or says why not.
    pub fn admit(self: &Arc<Self>, peer: Option<IpAddr>) -> Result<Ticket, Refusal> {
        let mut open = self.lock();
        let client = peer.map(client_key);
        let key = client.filter(|_| self.max_per_address.is_some());
        let held = key.map_or(0, |k| open.by_address.get(&k).copied().unwrap_or(0));
        if open.total >= self.max_total {
            // Full: an idle connection's place, the address's own first;
            // else only the reserve is left, and only for an address with
            // (almost) nothing open, such as a provider's next delivery
            // while many addresses flood. Without per-address counts there
            // is none.
            let reserve = self.max_total / RESERVE_DIVISOR;
            let reclaimed = open.reclaim(client).is_some() || open.reclaim(None).is_some();
            if !reclaimed
                && (key.is_none()
                    || held >= RESERVE_HOLDING
                    || open.total >= self.max_total + reserve)
            {
                return Err(Refusal::Full);
            }
        } else if let Some(max) = self.max_per_address
            && key.is_some()
            && open.total >= self.max_total / 2
            && held >= max
            && open.reclaim(client).is_none()
        {
            return Err(Refusal::PerAddress);
        }
        if let Some(key) = key {
            *open.by_address.entry(key).or_default() += 1;
        }
        open.total += 1;
        Ok(Ticket {
            slot: Arc::new(Slot {
                gate: Arc::clone(self),
                client,
                idle_since: AtomicU64::new(0),
                reclaimed: AtomicBool::new(false),
                close: Notify::new(),
            }),
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

impl Open {
    /// Takes the place of the connection idle longest (of `client`'s, or
    /// of anyone's for `None`): its counts are freed here, and it is told
    /// to close. The idle connection, if there was one.
    fn reclaim(&mut self, client: Option<IpAddr>) -> Option<Arc<Slot>> {
        let since = match client {
            Some(client) => *self.idle_by_address.get(&client)?.first()?,
            None => *self.idle.keys().next()?,
        };
        let slot = self.idle.remove(&since)?;
        self.forget_idle(&slot, since);
        slot.reclaimed.store(true, Ordering::SeqCst);
        self.release(slot.counted());
        slot.close.notify_one();
        Some(slot)
    }

    /// Takes `slot` off the idle lists (it is `since` there).
    fn forget_idle(&mut self, slot: &Slot, since: u64) {
        slot.idle_since.store(0, Ordering::SeqCst);
        self.idle.remove(&since);
        if let Some(client) = slot.client
            && let Some(idle) = self.idle_by_address.get_mut(&client)
        {
            idle.remove(&since);
            if idle.is_empty() {
                self.idle_by_address.remove(&client);
            }
        }
    }

    /// Frees one place, counted against `address` if it was.
    fn release(&mut self, address: Option<IpAddr>) {
        self.total -= 1;
        if let Some(address) = address
            && let Some(held) = self.by_address.get_mut(&address)
        {
            *held -= 1;
            if *held == 0 {
                self.by_address.remove(&address);
            }
        }
    }
}

impl Slot {
    /// The address its place is counted against, if counted.
    fn counted(&self) -> Option<IpAddr> {
        self.client.filter(|_| self.gate.max_per_address.is_some())
    }

    /// The connection has answered, every byte written, and waits for a
    /// next request: its place may be taken.
    pub fn idle(self: &Arc<Self>) {
        let mut open = self.gate.lock();
        if self.reclaimed.load(Ordering::SeqCst) || self.idle_since.load(Ordering::SeqCst) != 0 {
            return;
        }
        open.next_idle += 1;
        let since = open.next_idle;
        self.idle_since.store(since, Ordering::SeqCst);
        open.idle.insert(since, Arc::clone(self));
        if let Some(client) = self.client {
            open.idle_by_address
                .entry(client)
                .or_default()
                .insert(since);
        }
    }

    /// A next request is arriving: its place is its own again, unless the
    /// gate gave it away already (false: the connection is closing).
    pub fn busy(&self) -> bool {
        let mut open = self.gate.lock();
        let since = self.idle_since.load(Ordering::SeqCst);
        if since != 0 {
            open.forget_idle(self, since);
        }
        !self.reclaimed.load(Ordering::SeqCst)
    }
}

impl Ticket {
    /// What the connection's phase shares with the gate.
    pub fn slot(&self) -> Arc<Slot> {
        Arc::clone(&self.slot)
    }

    /// Resolves once the gate has given this connection's place to
    /// another: the connection closes.
    pub async fn reclaimed(&self) {
        while !self.slot.reclaimed.load(Ordering::SeqCst) {
            self.slot.close.notified().await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.slot.gate.lock();
        let since = self.slot.idle_since.load(Ordering::SeqCst);
        if since != 0 {
            open.forget_idle(&self.slot, since);
        }
        // A reclaimed place was freed when it was taken.
        if !self.slot.reclaimed.load(Ordering::SeqCst) {
            open.release(self.address);
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

    fn reclaimed(ticket: &Ticket) -> bool {
        ticket.slot.reclaimed.load(Ordering::SeqCst)
    }

    #[test]
    fn an_address_at_its_share_gets_the_place_of_its_own_oldest_idle_connection() {
        let gate = gate(10, Some(2));
        let held: Vec<Ticket> = (0..5)
            .map(|_| gate.admit(ip("10.0.0.1")).unwrap())
            .collect();
        let other = gate.admit(ip("10.0.0.2")).unwrap();
        other.slot.idle();
        assert_eq!(
            gate.admit(ip("10.0.0.1")).unwrap_err(),
            Refusal::PerAddress,
            "another address's idle connection is not taken below full"
        );
        held[3].slot.idle();
        held[1].slot.idle();
        let newcomer = gate.admit(ip("10.0.0.1")).unwrap();
        assert!(reclaimed(&held[3]), "idle longest");
        assert!(!reclaimed(&held[1]) && !reclaimed(&other));
        assert_eq!(gate.open(), 6, "the place changed hands");
        assert!(!held[3].slot.busy(), "too late: it closes");
        // In use again: no longer idle, so not taken.
        assert!(held[1].slot.busy());
        assert_eq!(gate.admit(ip("10.0.0.1")).unwrap_err(), Refusal::PerAddress);
        drop(held);
        drop(newcomer);
        drop(other);
        assert_eq!(gate.open(), 0, "a reclaimed ticket frees nothing twice");
        assert!(gate.lock().by_address.is_empty());
        assert!(gate.lock().idle.is_empty() && gate.lock().idle_by_address.is_empty());
    }

    #[test]
    fn a_full_instance_takes_anyones_idle_connection_before_refusing() {
        let gate = gate(2, None);
        let busy = gate.admit(ip("10.0.0.1")).unwrap();
        let idle = gate.admit(ip("10.0.0.2")).unwrap();
        idle.slot.idle();
        let third = gate.admit(ip("10.0.0.3")).unwrap();
        assert!(reclaimed(&idle) && !reclaimed(&busy));
        assert_eq!(gate.admit(ip("10.0.0.4")).unwrap_err(), Refusal::Full);
        drop((busy, idle, third));
        assert_eq!(gate.open(), 0);
    }

    #[tokio::test]
    async fn a_reclaimed_connection_is_told_to_close() {
        let gate = gate(1, None);
        let idle = gate.admit(ip("10.0.0.1")).unwrap();
        idle.slot.idle();
        let _next = gate.admit(ip("10.0.0.2")).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(1), idle.reclaimed())
            .await
            .expect("told at once");
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
