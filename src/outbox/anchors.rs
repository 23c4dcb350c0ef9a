//! A destination's anchor parts (`audit.anchor`, `store::outbox::anchors`):
//! claimed and sent by its relay at every tidy, a claim's parts at once,
//! each bounded by the destination's timeout, retried with the outbox's backoff
//! and dead after its `max_attempts`. Only a destination that lists
//! `audit.anchor` in its `events` gets them. Anchors are taken every
//! `anchors.interval_secs` (an hour by default): a part that waits up to a
//! tidy (10 s) for its send is not late, and a tidy sends at most
//! [`CLAIMS_PER_TIDY`] claims, so a slow destination holds its events back
//! by a few timeouts at most.

use std::collections::HashMap;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::backoff;
use super::destinations::{Outgoing, SendError};
use super::relay::{LEASE_MARGIN, Relay, seed};
use super::row_clock::RowClock;
use super::sending::bounded;
use crate::domain::MessageType;
use crate::rng::SplitMix64;
use crate::store::chain::PART_TYPE;
use crate::store::{AnchorAttempt, AnchorMessage};

/// Parts claimed, and sent, at once.
const PARTS_PER_CLAIM: i64 = 16;
/// Claims per tidy: 64 parts (32,000 chains) every 10 s at most.
const CLAIMS_PER_TIDY: usize = 4;

/// What an anchor message says its source is (a bus may key on it).
const SOURCE: &str = "hookledger";

impl Relay {
    /// Sends the destination's due anchor parts, if it takes them: at most
    /// [`CLAIMS_PER_TIDY`] claims, each sent at once, so that a slow
    /// destination holds its events back by a few timeouts at most per
    /// tidy, however many parts an anchor has.
    pub(super) async fn send_anchors(&self, rows_clock: &RowClock, stop: &watch::Receiver<bool>) {
        if !self.destination.types.contains(&MessageType::AuditAnchor) {
            return;
        }
        let name = &self.destination.name;
        let lease_ms = (self.destination.timeout + LEASE_MARGIN).as_millis() as i64;
        let max_attempts = i64::from(self.destination.max_attempts);
        let mut rng = SplitMix64::new(seed());
        for _ in 0..CLAIMS_PER_TIDY {
            if *stop.borrow() {
                return;
            }
            let now_ms = rows_clock.now_ms();
            let claim = format!("{}/anchors/{:016x}", self.owner, rng.next_u64());
            let claimed = self.store.claim_anchor_messages(
                name,
                &claim,
                now_ms,
                now_ms + lease_ms,
                PARTS_PER_CLAIM,
            );
            let parts = match claimed.await {
                Ok(parts) if parts.is_empty() => return,
                Ok(parts) => parts,
                Err(error) => {
                    tracing::warn!(destination = %name, "anchors: claim failed, tried again at the next tidy: {error}");
                    return;
                }
            };
            let results = self.send_parts(&parts, max_attempts, stop).await;
            for (part, result) in parts.iter().zip(results) {
                let now_ms = rows_clock.now_ms();
                let attempt = match result {
                    None => AnchorAttempt::Released,
                    Some(Ok(())) => AnchorAttempt::Delivered,
                    Some(Err(error)) => AnchorAttempt::Failed {
                        next_attempt_ms: now_ms
                            + backoff::delay(part.attempts, error.retry_after, &mut rng).as_millis()
                                as i64,
                        error: error.reason,
                        max_attempts,
                    },
                };
                let recording = self.store.record_anchor_attempt(
                    part.anchor_message_id,
                    &claim,
                    &attempt,
                    now_ms,
                );
                match recording.await {
                    Ok(true) => self.count_anchor(part, &attempt),
                    Ok(false) => {}
                    // Left in the lease: sent again once it passes.
                    Err(error) => tracing::warn!(
                        destination = %name,
                        message_id = %part.message_id,
                        "anchors: could not record an attempt, sent again after its lease: {error}"
                    ),
                }
            }
        }
    }

    /// Sends every part at once; `None` for a send cut off at shutdown
    /// (the relay's grace passed), whose part is handed back.
    async fn send_parts(
        &self,
        parts: &[AnchorMessage],
        max_attempts: i64,
        stop: &watch::Receiver<bool>,
    ) -> Vec<Option<Result<(), SendError>>> {
        let mut sends = JoinSet::new();
        let mut index = HashMap::new();
        for (i, part) in parts.iter().enumerate() {
            let (sender, part) = (self.sender.clone(), part.clone());
            let (instruments, name) = (self.instruments.clone(), self.destination.name.clone());
            let timeout = self.destination.timeout;
            let handle = sends.spawn(async move {
                // Its last attempt ended with no outcome recorded: as the
                // outbox does, not sent again.
                if part.attempts > max_attempts {
                    return (i, Err(SendError::new("not sent: its attempts are used up")));
                }
                let outgoing = Outgoing {
                    id: &part.message_id,
                    message_type: PART_TYPE,
                    source: SOURCE,
                    currency: None,
                    account: None,
                    body: part.body.as_bytes(),
                };
                let started = std::time::Instant::now();
                let result = bounded(sender.as_ref(), &outgoing, timeout).await;
                instruments.sent(&name, started.elapsed().as_secs_f64());
                (i, result)
            });
            index.insert(handle.id(), i);
        }
        let mut results = vec![None; parts.len()];
        let mut stopping = stop.clone();
        let cut_off = async {
            let _ = stopping.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(self.grace).await;
        };
        tokio::pin!(cut_off);
        loop {
            tokio::select! {
                joined = sends.join_next_with_id() => match joined {
                    None => break,
                    Some(Ok((_, (i, result)))) => results[i] = Some(result),
                    // A send that panicked is a failed attempt.
                    Some(Err(error)) => {
                        let reason = format!("the send failed inside hookledger: {error}");
                        results[index[&error.id()]] = Some(Err(SendError::new(reason)));
                    }
                },
                () = &mut cut_off => {
                    sends.abort_all();
                    break;
                }
            }
        }
        results
    }

    fn count_anchor(&self, part: &AnchorMessage, attempt: &AnchorAttempt) {
        let name = &self.destination.name;
        match attempt {
            AnchorAttempt::Delivered => self.instruments.delivered(name, 1),
            AnchorAttempt::Failed {
                error,
                max_attempts,
                ..
            } if part.attempts >= *max_attempts => {
                tracing::warn!(
                    destination = %name,
                    message_id = %part.message_id,
                    "anchors: dead letter after {} attempts: {error}",
                    part.attempts
                );
                self.instruments.dead(name, 1);
            }
            AnchorAttempt::Failed { error, .. } => tracing::warn!(
                destination = %name,
                message_id = %part.message_id,
                "anchors: attempt {} failed, retried with backoff: {error}",
                part.attempts
            ),
            AnchorAttempt::Released => {}
        }
    }
}
