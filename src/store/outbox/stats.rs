//! Per-destination counts (the bench, the tests, the admin page). Each figure
//! is read through a partial index (pending, dead, recently delivered), so
//! a week of delivered rows kept for retention costs none of them.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::super::{Store, StoreError, on_pool};
use crate::domain::OutboxStats;

const PENDING: &str = "
select count(*),
    coalesce(sum(case when leased_by is not null and next_attempt_ms > $2 then 1 else 0 end), 0)
from outbox where destination = $1 and state = 'pending'";

/// The oldest pending message waiting since it was written: the first by
/// id, past the re-queued ones (few, and delivered soon).
pub(super) const OLDEST_PENDING: &str = "
select created_at from outbox where destination = $1 and state = 'pending' and queued_ms is null
order by outbox_id limit 1";

/// The longest-waiting re-queued one (migration 0012: its own index).
pub(super) const OLDEST_REQUEUED: &str = "
select min(queued_ms) from outbox
where destination = $1 and state = 'pending' and queued_ms is not null";

const DELIVERED_SINCE: &str = "
select count(*) from outbox
where state = 'delivered' and delivered_ms >= $2 and destination = $1";

/// The destination's dead letters: its messages' and its anchor parts'
/// (`anchors`), which an operator's replay of dead letters re-queues too.
const DEAD: &str = "
select (select count(*) from outbox where destination = $1 and state = 'dead')
    + (select count(*) from anchor_messages where destination = $1 and state = 'dead')";

const MESSAGES: &str = "
select outbox_id, destination, message_id, message_type, source, event_id, account_id,
    currency,
    account_seq, state, attempts, last_error, created_at, delivered_ms
from outbox where destination = $1 and outbox_id > $2
order by outbox_id limit $3";

/// One message row's delivery state, for the admin page and tests.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct OutboxEntry {
    pub outbox_id: i64,
    pub destination: String,
    pub message_id: String,
    pub message_type: String,
    pub source: String,
    pub event_id: String,
    pub account_id: Option<String>,
    pub currency: Option<String>,
    pub account_seq: Option<i64>,
    /// `pending`, `delivered` or `dead`.
    pub state: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_ms: Option<i64>,
}

impl Store {
    /// A destination's messages after `after_id`, oldest first.
    pub async fn outbox_messages(
        &self,
        destination: &str,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(MESSAGES)
            .bind(destination)
            .bind(after_id)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    /// A destination's figures. In flight and delivered in the last hour
    /// are judged by the clock that judges leases and deliveries
    /// ([`Store::database_now_ms`]), whatever this host's says.
    pub async fn outbox_stats(&self, destination: &str) -> Result<OutboxStats, StoreError> {
        let now_ms = self.database_now_ms().await?;
        let (pending, in_flight): (i64, i64) = on_pool!(self, pool => sqlx::query_as(PENDING)
            .bind(destination)
            .bind(now_ms)
            .fetch_one(pool)
            .await)?;
        let oldest: Option<(DateTime<Utc>,)> = on_pool!(self, pool => sqlx::query_as(OLDEST_PENDING)
            .bind(destination)
            .fetch_optional(pool)
            .await)?;
        let (requeued,): (Option<i64>,) = on_pool!(self, pool => sqlx::query_as(OLDEST_REQUEUED)
            .bind(destination)
            .fetch_one(pool)
            .await)?;
        // A message re-queued by a replay waits since the replay.
        let requeued = requeued.and_then(DateTime::from_timestamp_millis);
        let oldest = [oldest.map(|(at,)| at), requeued]
            .into_iter()
            .flatten()
            .min();
        let (delivered_last_hour,): (i64,) = on_pool!(self, pool => sqlx::query_as(DELIVERED_SINCE)
            .bind(destination)
            .bind(now_ms - 3_600_000)
            .fetch_one(pool)
            .await)?;
        let (dead,): (i64,) = on_pool!(self, pool => sqlx::query_as(DEAD)
            .bind(destination)
            .fetch_one(pool)
            .await)?;
        Ok(OutboxStats {
            destination: destination.to_owned(),
            pending,
            in_flight,
            oldest_pending_at: oldest,
            delivered_last_hour,
            dead,
        })
    }
}
