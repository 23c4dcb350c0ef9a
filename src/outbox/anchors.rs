//! A destination's anchor parts (`audit.anchor`, `store::outbox::anchors`):
//! claimed and sent by its relay at every tidy, one after another, each
//! bounded by the destination's timeout, retried with the outbox's backoff
//! and dead after its `max_attempts`. Only a destination that lists
//! `audit.anchor` in its `events` gets them. An anchor is hourly and a
//! later one covers every head an earlier one did, so a part that waits up
//! to a tidy (10 s) for its send costs nothing the outbox's events would.

use tokio::sync::watch;

use super::backoff;
use super::destinations::{Outgoing, SendError};
use super::relay::{LEASE_MARGIN, Relay, seed};
use super::row_clock::RowClock;
use crate::domain::MessageType;
use crate::rng::SplitMix64;
use crate::store::chain::PART_TYPE;
use crate::store::{AnchorAttempt, AnchorMessage};

/// Parts claimed at once; claims go on until none is due.
const PARTS_PER_CLAIM: i64 = 16;

/// What an anchor message says its source is (a bus may key on it).
const SOURCE: &str = "hookledger";

impl Relay {
    /// Sends the destination's due anchor parts, if it takes them.
    pub(super) async fn send_anchors(&self, rows_clock: &RowClock, stop: &watch::Receiver<bool>) {
        if !self.destination.types.contains(&MessageType::AuditAnchor) {
            return;
        }
        let name = &self.destination.name;
        let lease_ms = (self.destination.timeout + LEASE_MARGIN).as_millis() as i64;
        let mut rng = SplitMix64::new(seed());
        while !*stop.borrow() {
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
            for part in &parts {
                let stopping = *stop.borrow();
                let attempt = match stopping {
                    true => AnchorAttempt::Released,
                    false => self.attempt(part, rows_clock, &mut rng).await,
                };
                let now_ms = rows_clock.now_ms();
                match self
                    .store
                    .record_anchor_attempt(part.anchor_message_id, &claim, &attempt, now_ms)
                    .await
                {
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

    /// One send of `part`, as the outcome to record.
    async fn attempt(
        &self,
        part: &AnchorMessage,
        rows_clock: &RowClock,
        rng: &mut SplitMix64,
    ) -> AnchorAttempt {
        let max_attempts = i64::from(self.destination.max_attempts);
        let timeout = self.destination.timeout;
        let outgoing = Outgoing {
            id: &part.message_id,
            message_type: PART_TYPE,
            source: SOURCE,
            currency: None,
            account: None,
            body: part.body.as_bytes(),
        };
        let started = std::time::Instant::now();
        let result = match part.attempts > max_attempts {
            // Its last attempt ended with no outcome recorded: as the
            // outbox does, not sent again.
            true => Err(SendError::new("not sent: its attempts are used up")),
            false => tokio::time::timeout(timeout, self.sender.deliver(&outgoing))
                .await
                .unwrap_or_else(|_| {
                    Err(SendError::new(format!(
                        "no acknowledgement within {} s",
                        timeout.as_secs()
                    )))
                }),
        };
        self.instruments
            .sent(&self.destination.name, started.elapsed().as_secs_f64());
        match result {
            Ok(()) => AnchorAttempt::Delivered,
            Err(error) => {
                let wait = backoff::delay(part.attempts, error.retry_after, rng);
                AnchorAttempt::Failed {
                    error: error.reason,
                    next_attempt_ms: rows_clock.now_ms() + wait.as_millis() as i64,
                    max_attempts,
                }
            }
        }
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
