//! A claim's sends: every claimed message at once, each bounded by the
//! destination's timeout, cut off at shutdown after the grace period; and
//! their results as the outcomes the relay records.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::backoff;
use super::destinations::{Deliver, Outgoing, SendError};
use super::message;
use super::relay::Relay;
use crate::rng::SplitMix64;
use crate::store::{Attempted, OutboxRow};

/// Why a message claimed past its last attempt was not sent.
const USED_UP: &str = "not sent: its attempts are used up, the last one with no outcome \
                       recorded (the relay stopped, or could not record it)";

impl Relay {
    /// Sends every claimed row at once; `None` for a send cut off by
    /// shutdown after the grace period.
    pub(super) async fn send(
        &self,
        rows: &[OutboxRow],
        stop: &mut watch::Receiver<bool>,
    ) -> Vec<Option<Result<(), SendError>>> {
        let mut sends = JoinSet::new();
        let mut index = HashMap::new();
        let mut results = vec![None; rows.len()];
        let timeout = self.destination.timeout;
        let max_attempts = i64::from(self.destination.max_attempts);
        for (i, row) in rows.iter().enumerate() {
            // Claimed past its last attempt: that one ended with no outcome
            // recorded (its relay stopped, or could not record it), or the
            // config now allows fewer. Not sent: a message whose every send
            // stops the process would otherwise be tried for ever. Failed,
            // it becomes a dead letter (`max_attempts` reached).
            if row.attempts > max_attempts {
                results[i] = Some(Err(SendError::new(USED_UP)));
                continue;
            }
            let (sender, row) = (self.sender.clone(), row.clone());
            let (instruments, name) = (self.instruments.clone(), self.destination.name.clone());
            let handle = sends.spawn(async move {
                let started = std::time::Instant::now();
                let body = message::render(&row);
                let outgoing = Outgoing {
                    id: &row.message_id,
                    message_type: &row.message_type,
                    source: &row.source,
                    currency: row.currency.as_deref(),
                    account: row.account_id.as_deref(),
                    body: &body,
                };
                let result = bounded(sender.as_ref(), &outgoing, timeout).await;
                instruments.sent(&name, started.elapsed().as_secs_f64());
                result
            });
            index.insert(handle.id(), i);
        }
        let grace = self.grace;
        let cut_off = async {
            let _ = stop.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(cut_off);
        loop {
            tokio::select! {
                joined = sends.join_next_with_id() => match joined {
                    None => break,
                    Some(joined) => if let Some((id, result)) = outcome_of(joined) {
                        results[index[&id]] = Some(result);
                    },
                },
                () = &mut cut_off => {
                    sends.abort_all();
                    // A send that finished before the abort keeps its
                    // outcome (an acknowledgement is recorded, not sent
                    // again); the aborted ones end as cancelled, `None`.
                    while let Some(joined) = sends.join_next_with_id().await {
                        if let Some((id, result)) = outcome_of(joined) {
                            results[index[&id]] = Some(result);
                        }
                    }
                    break;
                }
            }
        }
        results
    }

    pub(super) fn outcomes<'r>(
        &self,
        rows: &'r [OutboxRow],
        results: Vec<Option<Result<(), SendError>>>,
        rng: &mut SplitMix64,
    ) -> Vec<(&'r OutboxRow, Attempted)> {
        let max_attempts = i64::from(self.destination.max_attempts);
        let mut failed = Vec::new();
        let outcomes = rows
            .iter()
            .zip(results)
            .map(|(row, result)| {
                let outcome = match result {
                    None => Attempted::Released,
                    Some(Ok(())) => Attempted::Delivered,
                    Some(Err(error)) => {
                        let retry_in = backoff::delay(row.attempts, error.retry_after, rng);
                        if row.attempts >= max_attempts {
                            tracing::warn!(
                                destination = %self.destination.name,
                                message_id = %row.message_id,
                                "outbox: dead letter after {} attempts: {}",
                                row.attempts,
                                error.reason
                            );
                        }
                        failed.push(error.reason.clone());
                        Attempted::Failed {
                            error: error.reason,
                            retry_in,
                            max_attempts,
                        }
                    }
                };
                (row, outcome)
            })
            .collect();
        if let Some(first) = failed.first() {
            tracing::warn!(
                destination = %self.destination.name,
                "outbox: {} of {} attempts failed, retried with backoff; first: {first}",
                failed.len(),
                rows.len()
            );
        }
        outcomes
    }
}

/// One send of `outgoing`, bounded by `timeout`: the relay's own bound,
/// whatever the destination does, so a send never outlives its lease.
pub(super) async fn bounded(
    sender: &dyn Deliver,
    outgoing: &Outgoing<'_>,
    timeout: Duration,
) -> Result<(), SendError> {
    tokio::time::timeout(timeout, sender.deliver(outgoing))
        .await
        .unwrap_or_else(|_| {
            Err(SendError::new(format!(
                "no acknowledgement within {} s",
                timeout.as_secs()
            )))
        })
}

/// A finished send's task and outcome: a send that panicked is a failed
/// attempt; one aborted at shutdown has none (its lease is handed back).
fn outcome_of(
    joined: Result<(tokio::task::Id, Result<(), SendError>), tokio::task::JoinError>,
) -> Option<(tokio::task::Id, Result<(), SendError>)> {
    match joined {
        Ok(done) => Some(done),
        Err(error) if error.is_cancelled() => None,
        Err(error) => {
            let reason = format!("the send failed inside hookledger: {error}");
            Some((error.id(), Err(SendError::new(reason))))
        }
    }
}
