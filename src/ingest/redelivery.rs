//! The cheap path for a redelivery of an event this process has recently
//! seen stored: a provider's retry after a timeout or an error, or a
//! redelivery storm. Instead of a transaction of its own, it is counted in
//! a batch with every other such redelivery waiting (one statement per
//! batch, `Store::count_redeliveries`, which says why that is safe), and
//! answered with the status the statement returns, after the count is
//! written. Any other redelivery (to another instance, after a restart,
//! older than the memory, with another body) takes the full transaction,
//! which recognises it just as well.
//!
//! [`Recent`] is only a hint: a key it holds that the statement does not
//! find (another body stored, say) sends the delivery down the full path;
//! a key it has forgotten costs the full path. It holds keys exactly, never
//! as hashes: a false "seen" would still go to the database, but nothing
//! here should ever take one event for another.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use super::{Outcome, RawDelivery, event_payload};
use crate::domain::{NormalisedEvent, Status};
use crate::source::Source;
use crate::store::{RedeliveryCount, Store, received_at_text};

/// Events remembered: 64 K keys with their body's SHA-256: about 9 MB
/// with ids of 40 bytes, 25 MB at the longest ids (255 bytes).
const REMEMBERED: usize = 65_536;

/// Redeliveries counted in one statement at most.
const BATCH: usize = 1024;

/// (scope, event id) as one string, the scope's length first so that no
/// two keys read the same.
fn key(scope: &str, event_id: &str) -> String {
    format!("{}:{scope}{event_id}", scope.len())
}

fn digest(sha256_hex: &str) -> Option<[u8; 32]> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(sha256_hex, &mut bytes).ok()?;
    Some(bytes)
}

/// Each key's body digest, and the keys oldest first (one allocation
/// per key, shared).
type Remembered = (HashMap<Arc<str>, [u8; 32]>, VecDeque<Arc<str>>);

/// The events most recently stored or recognised here, with the SHA-256
/// of the body each stores.
#[derive(Debug)]
pub struct Recent {
    capacity: usize,
    keys: Mutex<Remembered>,
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
            keys: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    /// Whether (scope, event_id) was stored here with this body.
    pub fn holds(&self, scope: &str, event_id: &str, sha256_hex: &str) -> bool {
        let Some(sha) = digest(sha256_hex) else {
            return false;
        };
        // A poisoned lock still holds a usable hint.
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.0.get(key(scope, event_id).as_str()) == Some(&sha)
    }

    /// Remembers an event stored with this body, forgetting the oldest
    /// beyond capacity.
    pub fn remember(&self, scope: &str, event_id: &str, sha256_hex: &str) {
        let Some(sha) = digest(sha256_hex) else {
            return;
        };
        let key: Arc<str> = key(scope, event_id).into();
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *keys;
        if map.insert(key.clone(), sha).is_none() {
            order.push_back(key);
            if order.len() > self.capacity
                && let Some(oldest) = order.pop_front()
            {
                map.remove(&oldest);
            }
        }
    }
}

/// One redelivery waiting to be counted, and where its event's status goes
/// (`None`: not counted, take the full path).
#[derive(Debug)]
struct Waiting {
    scope: String,
    event_id: String,
    sha256: String,
    received_at: DateTime<Utc>,
    reply: oneshot::Sender<Option<Status>>,
}

/// Counts redeliveries in batches: one task, one statement per batch.
#[derive(Debug, Clone)]
pub struct Recounter {
    queue: mpsc::Sender<Waiting>,
}

impl Recounter {
    /// Starts the counting task; it ends when every clone is dropped.
    pub fn spawn(store: Store) -> Self {
        let (queue, waiting) = mpsc::channel(BATCH * 4);
        tokio::spawn(count_batches(store, waiting));
        Self { queue }
    }

    async fn count(
        &self,
        scope: &str,
        event_id: &str,
        sha256: &str,
        received_at: DateTime<Utc>,
    ) -> Option<Status> {
        let (reply, status) = oneshot::channel();
        let waiting = Waiting {
            scope: scope.to_owned(),
            event_id: event_id.to_owned(),
            sha256: sha256.to_owned(),
            received_at,
            reply,
        };
        self.queue.send(waiting).await.ok()?;
        status.await.ok().flatten()
    }
}

async fn count_batches(store: Store, mut queue: mpsc::Receiver<Waiting>) {
    let mut batch = Vec::with_capacity(BATCH);
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        // A requester that has gone (its deadline passed) is not counted:
        // its provider sends it again.
        batch.retain(|waiting| !waiting.reply.is_closed());
        count_batch(&store, std::mem::take(&mut batch)).await;
    }
}

/// Counts one batch and answers every redelivery in it.
async fn count_batch(store: &Store, batch: Vec<Waiting>) {
    if batch.is_empty() {
        return;
    }
    // One row per event and body: the statement adds each row's count once.
    let mut per_event: HashMap<(&str, &str, &str), (i64, DateTime<Utc>)> = HashMap::new();
    for waiting in &batch {
        let event = (
            waiting.scope.as_str(),
            waiting.event_id.as_str(),
            waiting.sha256.as_str(),
        );
        let (count, latest) = per_event.entry(event).or_insert((0, waiting.received_at));
        *count += 1;
        *latest = (*latest).max(waiting.received_at);
    }
    let counts: Vec<RedeliveryCount<'_>> = per_event
        .into_iter()
        .map(|((scope, event_id, sha), (n, latest))| RedeliveryCount {
            scope,
            event_id,
            payload_sha256: sha,
            deliveries: n,
            received_at: received_at_text(latest),
        })
        .collect();
    let statuses: HashMap<(String, String, String), Status> =
        match store.count_redeliveries(&counts).await {
            Ok(found) => found
                .into_iter()
                .map(|r| ((r.scope, r.event_id, r.payload_sha256), r.status))
                .collect(),
            Err(error) => {
                // Each then takes the full path, which answers the error
                // as any delivery's (503 if transient).
                tracing::debug!("redeliveries not counted in a batch: {error}");
                HashMap::new()
            }
        };
    drop(counts);
    for waiting in batch {
        let status = statuses
            .get(&(waiting.scope, waiting.event_id, waiting.sha256))
            .copied();
        let _ = waiting.reply.send(status);
    }
}

/// A one-event delivery of an event this process recently stored with the
/// same body, counted in a batch: its outcome, or `None` for the full path.
pub(super) async fn counted(
    recent: &Recent,
    recounter: &Recounter,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Option<Outcome> {
    let [event] = events else {
        return None;
    };
    let (_, sha256) = event_payload(event, raw);
    let event_id = event.event_id.as_str();
    if !recent.holds(&source.scope, event_id, &sha256) {
        return None;
    }
    let status = recounter
        .count(&source.scope, event_id, &sha256, raw.received_at)
        .await?;
    Some(Outcome {
        event_id: event.event_id.clone(),
        status,
        duplicate: true,
        conflict: false,
        late: false,
        released: 0,
        backlog: false,
    })
}

/// Remembers the events of a delivery the full path stored or recognised
/// with this body (not those whose stored body differs).
pub(super) fn remember(
    recent: &Recent,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
    outcomes: &[Outcome],
) {
    for (event, outcome) in events.iter().zip(outcomes) {
        if !outcome.conflict {
            let (_, sha256) = event_payload(event, raw);
            recent.remember(&source.scope, event.event_id.as_str(), &sha256);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA_A: &str = "aa00000000000000000000000000000000000000000000000000000000000000";
    const SHA_B: &str = "bb00000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn remembers_keys_per_scope_with_their_body_and_forgets_the_oldest() {
        let recent = Recent::with_capacity(3);
        recent.remember("stripe", "evt_1", SHA_A);
        assert!(recent.holds("stripe", "evt_1", SHA_A));
        assert!(!recent.holds("stripe", "evt_1", SHA_B), "another body");
        assert!(!recent.holds("paddle", "evt_1", SHA_A));
        assert!(!recent.holds("stripe", "evt_2", SHA_A));
        // Remembering one twice takes one place.
        recent.remember("stripe", "evt_1", SHA_A);
        for n in 2..=3 {
            recent.remember("stripe", &format!("evt_{n}"), SHA_A);
        }
        assert!(recent.holds("stripe", "evt_1", SHA_A));
        recent.remember("stripe", "evt_4", SHA_A);
        assert!(!recent.holds("stripe", "evt_1", SHA_A), "the oldest goes");
        for n in 2..=4 {
            assert!(recent.holds("stripe", &format!("evt_{n}"), SHA_A), "{n}");
        }
        // Not a digest: never held.
        recent.remember("stripe", "evt_5", "not hex");
        assert!(!recent.holds("stripe", "evt_5", "not hex"));
    }

    #[test]
    fn keys_cannot_run_together() {
        let recent = Recent::default();
        recent.remember("a", "b\nc", SHA_A);
        assert!(!recent.holds("a\nb", "c", SHA_A));
    }
}
