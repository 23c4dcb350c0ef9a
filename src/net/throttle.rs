//! Failed sign-ins, per client address. The first few failures are free
//! (typos); after that each failure makes the address wait twice as long as
//! the last, up to a cap, and while it waits every token it presents, right
//! or wrong, is answered 429 without being compared. Another address is
//! never affected, so the real operator is not locked out by an attacker
//! elsewhere. In memory, per instance: a restart forgets, and with several
//! instances each counts its own.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, TimeDelta, Utc};

use super::client_key;

/// Failures from one address before it has to wait.
pub const FREE_FAILURES: u32 = 5;
/// The longest wait, in seconds.
const MAX_WAIT_SECS: i64 = 15 * 60;
/// An address with no failure for this long starts again from zero.
const FORGET_AFTER_SECS: i64 = 60 * 60;
/// Addresses remembered at most; past it the stalest is forgotten.
const MAX_TRACKED: usize = 10_000;

#[derive(Debug, Default)]
pub struct SignInThrottle {
    failures: Mutex<HashMap<IpAddr, Failures>>,
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: DateTime<Utc>,
    wait_until: DateTime<Utc>,
}

/// The wait after `count` failures: none for the free ones, then 1 s, 2 s,
/// 4 s, ... up to [`MAX_WAIT_SECS`].
fn wait_after(count: u32) -> i64 {
    match count.checked_sub(FREE_FAILURES) {
        None => 0,
        // 2^20 s is far past the cap; the shift can never reach the sign bit.
        Some(over) => (1i64 << over.min(20)).min(MAX_WAIT_SECS),
    }
}

fn whole_seconds(delta: TimeDelta) -> u64 {
    let millis = delta.num_milliseconds().max(0) as u64;
    millis.div_ceil(1000).max(1)
}

/// What became of one presented token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It matched; the address's failures are forgotten.
    Accepted,
    /// It did not match; the address's failures so far.
    Failed(u32),
    /// Not compared: the address must wait this many more seconds.
    Wait(u64),
}

/// What a presented token turned out to be.
pub enum Presented {
    Wrong,
    /// Right: the address's failures are forgotten.
    Right,
    /// Right, but the failures stay (they expire on their own).
    RightKeepingFailures,
}

impl SignInThrottle {
    /// Checks a token from `address` with `matches` unless the address must
    /// wait, and records the result, under one lock: two concurrent wrong
    /// tokens from one address are never both compared on the same count.
    pub fn attempt(
        &self,
        address: IpAddr,
        now: DateTime<Utc>,
        matches: impl FnOnce() -> bool,
    ) -> Verdict {
        self.attempt_with(address, now, || {
            if matches() {
                Presented::Right
            } else {
                Presented::Wrong
            }
        })
    }

    /// [`SignInThrottle::attempt`], where some right tokens do not clear
    /// the address's failures: a read-only holder's, so that holding one
    /// never lets its holder guess at the others without waiting.
    pub fn attempt_with(
        &self,
        address: IpAddr,
        now: DateTime<Utc>,
        matches: impl FnOnce() -> Presented,
    ) -> Verdict {
        let mut failures = self.lock();
        let key = client_key(address);
        if let Some(entry) = failures.get(&key)
            && entry.wait_until > now
        {
            return Verdict::Wait(whole_seconds(entry.wait_until - now));
        }
        match matches() {
            Presented::Right => {
                failures.remove(&key);
                return Verdict::Accepted;
            }
            Presented::RightKeepingFailures => return Verdict::Accepted,
            Presented::Wrong => {}
        }
        if !failures.contains_key(&key) && failures.len() >= MAX_TRACKED {
            forget_one(&mut failures, now);
        }
        let entry = failures.entry(key).or_insert(Failures {
            count: 0,
            last: now,
            wait_until: now,
        });
        if now - entry.last > TimeDelta::seconds(FORGET_AFTER_SECS) {
            entry.count = 0;
        }
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
        entry.wait_until = now + TimeDelta::seconds(wait_after(entry.count));
        Verdict::Failed(entry.count)
    }

    #[cfg(test)]
    fn wait(&self, address: IpAddr, now: DateTime<Utc>) -> Option<u64> {
        let failures = self.lock();
        let entry = failures.get(&client_key(address))?;
        (entry.wait_until > now).then(|| whole_seconds(entry.wait_until - now))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<IpAddr, Failures>> {
        // Every update is a single insert or remove: valid after a panic.
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Makes room for one more address: drops those not seen for
/// [`FORGET_AFTER_SECS`]; if none is that old, the one seen longest ago
/// among those not waiting, so that failing from many other addresses
/// cannot flush an address that must wait; if all wait, the one whose wait
/// ends first.
fn forget_one(failures: &mut HashMap<IpAddr, Failures>, now: DateTime<Utc>) {
    let forget = TimeDelta::seconds(FORGET_AFTER_SECS);
    failures.retain(|_, f| now - f.last <= forget);
    if failures.len() < MAX_TRACKED {
        return;
    }
    let victim = failures
        .iter()
        .filter(|(_, f)| f.wait_until <= now)
        .min_by_key(|(_, f)| f.last)
        .or_else(|| failures.iter().min_by_key(|(_, f)| f.wait_until))
        .map(|(a, _)| *a);
    if let Some(victim) = victim {
        failures.remove(&victim);
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + secs, 0).unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_wait_doubles_after_the_free_failures_and_is_capped() {
        let waits: Vec<i64> = (1..=8).map(wait_after).collect();
        assert_eq!(waits, [0, 0, 0, 0, 1, 2, 4, 8]);
        assert_eq!(wait_after(40), MAX_WAIT_SECS);
        for count in 60..=70 {
            assert_eq!(wait_after(count), MAX_WAIT_SECS, "{count} failures");
        }
        assert_eq!(wait_after(u32::MAX), MAX_WAIT_SECS);
    }

    fn fail(throttle: &SignInThrottle, address: IpAddr, now: DateTime<Utc>) -> Verdict {
        throttle.attempt(address, now, || false)
    }

    #[test]
    fn an_address_waits_after_its_failures_and_others_do_not() {
        let throttle = SignInThrottle::default();
        let attacker = ip("203.0.113.9");
        for n in 1..FREE_FAILURES {
            assert_eq!(fail(&throttle, attacker, at(0)), Verdict::Failed(n));
            assert_eq!(throttle.wait(attacker, at(0)), None, "failure {n} is free");
        }
        assert_eq!(
            fail(&throttle, attacker, at(0)),
            Verdict::Failed(FREE_FAILURES)
        );
        assert_eq!(throttle.wait(attacker, at(0)), Some(1));
        let mut compared = false;
        let verdict = throttle.attempt(attacker, at(0), || {
            compared = true;
            true
        });
        assert_eq!(verdict, Verdict::Wait(1));
        assert!(!compared, "a waiting address's token is not compared");
        assert_eq!(throttle.wait(ip("198.51.100.1"), at(0)), None);
        assert_eq!(throttle.wait(attacker, at(1)), None, "the wait is over");
        fail(&throttle, attacker, at(1));
        assert_eq!(throttle.wait(attacker, at(1)), Some(2));
        assert_eq!(
            throttle.attempt(attacker, at(3), || true),
            Verdict::Accepted
        );
        assert_eq!(throttle.wait(attacker, at(3)), None);
        assert_eq!(
            fail(&throttle, attacker, at(3)),
            Verdict::Failed(1),
            "forgotten"
        );
    }

    #[test]
    fn an_ipv6_attacker_cannot_escape_by_changing_its_interface_id() {
        let throttle = SignInThrottle::default();
        for n in 0..FREE_FAILURES {
            fail(&throttle, ip(&format!("2001:db8:7:7::{n}")), at(0));
        }
        assert!(throttle.wait(ip("2001:db8:7:7::ffff"), at(0)).is_some());
    }

    #[test]
    fn an_old_failure_streak_is_forgotten() {
        let throttle = SignInThrottle::default();
        let address = ip("203.0.113.9");
        for _ in 0..FREE_FAILURES {
            fail(&throttle, address, at(0));
        }
        assert_eq!(
            fail(&throttle, address, at(FORGET_AFTER_SECS + 1)),
            Verdict::Failed(1)
        );
    }

    #[test]
    fn memory_is_bounded_by_forgetting_the_stalest_address() {
        let throttle = SignInThrottle::default();
        for n in 0..MAX_TRACKED as u32 + 10 {
            let now = at(0) + TimeDelta::milliseconds(i64::from(n));
            fail(&throttle, IpAddr::from(n.to_be_bytes()), now);
        }
        let failures = throttle.lock();
        assert_eq!(failures.len(), MAX_TRACKED);
        assert!(!failures.contains_key(&IpAddr::from(0u32.to_be_bytes())));
    }

    #[test]
    fn failing_from_many_addresses_cannot_flush_one_that_waits() {
        let throttle = SignInThrottle::default();
        let attacker = ip("203.0.113.9");
        for _ in 0..FREE_FAILURES {
            fail(&throttle, attacker, at(0));
        }
        assert_eq!(fail(&throttle, attacker, at(0)), Verdict::Wait(1));
        for n in 0..MAX_TRACKED as u32 + 10 {
            fail(&throttle, IpAddr::from((n + 1).to_be_bytes()), at(0));
        }
        assert_eq!(throttle.lock().len(), MAX_TRACKED);
        assert_eq!(throttle.wait(attacker, at(0)), Some(1), "still waits");
    }
}
