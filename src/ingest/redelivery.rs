//! A redelivery counted without a transaction, where the store offers
//! that (PostgreSQL; see `Store::count_redelivery` for why it is safe).
//!
//! Trying that statement before every delivery would cost each new event a
//! round trip that finds nothing, so it is tried only for events this
//! process has recently seen stored ([`Recent`]): a provider's retry after
//! a timeout or an error, or a redelivery storm. Any other redelivery (to
//! another instance, after a restart, or older than the memory) takes the
//! full transaction, which recognises it just as well.

use std::collections::hash_map::RandomState;
use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::Mutex;

use super::{Outcome, RawDelivery, event_payload};
use crate::domain::NormalisedEvent;
use crate::source::Source;
use crate::store::{Store, StoreError};

/// Event keys remembered: 64 K keys of 8 bytes each, twice (set and
/// order), about 1.5 MB.
const REMEMBERED: usize = 65_536;

/// The (scope, event id) keys of the events most recently stored by this
/// process, as hashes. Only a hint: a false "seen" costs one statement that
/// finds nothing; a false "not seen" costs the full transaction.
#[derive(Debug)]
pub struct Recent {
    capacity: usize,
    hasher: RandomState,
    keys: Mutex<(HashSet<u64>, VecDeque<u64>)>,
}

impl Default for Recent {
    fn default() -> Self {
        Self::with_capacity(REMEMBERED)
    }
}

impl Recent {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity,
            hasher: RandomState::new(),
            keys: Mutex::new((HashSet::new(), VecDeque::new())),
        }
    }

    fn key(&self, scope: &str, event_id: &str) -> u64 {
        self.hasher.hash_one((scope, event_id))
    }

    pub fn contains(&self, scope: &str, event_id: &str) -> bool {
        let key = self.key(scope, event_id);
        // A poisoned lock still holds a usable hint.
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.0.contains(&key)
    }

    /// Remembers a stored event, forgetting the oldest beyond capacity.
    pub fn remember(&self, scope: &str, event_id: &str) {
        let key = self.key(scope, event_id);
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let (set, order) = &mut *keys;
        if set.insert(key) {
            order.push_back(key);
            if order.len() > self.capacity
                && let Some(oldest) = order.pop_front()
            {
                set.remove(&oldest);
            }
        }
    }
}

/// A one-event delivery of an event this process recently stored, counted
/// without a transaction where the store offers that; `None` if the event
/// was not seen here, is not recorded, or the store has no such path.
pub(super) async fn counted(
    store: &Store,
    recent: &Recent,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Result<Option<Outcome>, StoreError> {
    let [event] = events else {
        return Ok(None);
    };
    if !recent.contains(&source.scope, event.event_id.as_str()) {
        return Ok(None);
    }
    let (_, sha256) = event_payload(event, raw);
    let counted = store
        .count_redelivery(
            &source.scope,
            event.event_id.as_str(),
            &sha256,
            raw.received_at,
        )
        .await?;
    Ok(counted.map(|redelivered| Outcome {
        event_id: event.event_id.clone(),
        status: redelivered.status,
        duplicate: true,
        conflict: redelivered.conflict,
        late: false,
        released: 0,
        backlog: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_keys_per_scope_and_forgets_the_oldest() {
        let recent = Recent::with_capacity(3);
        recent.remember("stripe", "evt_1");
        assert!(recent.contains("stripe", "evt_1"));
        assert!(!recent.contains("paddle", "evt_1"));
        assert!(!recent.contains("stripe", "evt_2"));
        // Remembering one twice takes one place.
        recent.remember("stripe", "evt_1");
        for n in 2..=3 {
            recent.remember("stripe", &format!("evt_{n}"));
        }
        assert!(recent.contains("stripe", "evt_1"));
        recent.remember("stripe", "evt_4");
        assert!(!recent.contains("stripe", "evt_1"), "the oldest stays");
        for n in 2..=4 {
            assert!(recent.contains("stripe", &format!("evt_{n}")), "{n}");
        }
    }
}
