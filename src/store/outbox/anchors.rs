//! The anchors' messages (`anchor_messages`, migration 0019): queued by
//! the anchor task, one row per part and destination, and claimed, sent
//! and recorded by that destination's relay as outbox rows are, in a table
//! only this version's relays read (an older relay would render any
//! `outbox` row as an event).

use super::super::write::on_tx;
use super::super::{Store, StoreError, on_pool};
use crate::store::chain::AnchorPart;

/// Part 0 first, alone: it is the slot's claim. On PostgreSQL a second
/// instance's insert of the same key waits for the first's commit, then
/// does nothing; SQLite runs one writer at a time. Either way the instance
/// that inserted no part 0 queues none of its parts, so a destination never
/// gets parts of two anchors for one slot.
const QUEUE_PART: &str = "
insert into anchor_messages (destination, slot, part, message_id, body, state, attempts,
    next_attempt_ms, created_ms)
values ($1, $2, $3, $4, $5, 'pending', 0, 0, $6)
on conflict (destination, slot, part) do nothing
returning anchor_message_id";

/// Due parts of a destination, oldest first, moved into the claim's lease
/// in one statement. The outer conditions are checked again on each row
/// as it is updated: on PostgreSQL a row another relay took meanwhile is
/// re-read after its lock (READ COMMITTED) and no longer due, so it is not
/// taken twice; SQLite runs one writer at a time.
const CLAIM: &str = "
update anchor_messages set attempts = attempts + 1, leased_by = $2, next_attempt_ms = $4
where anchor_message_id in (
    select anchor_message_id from anchor_messages
    where destination = $1 and state = 'pending' and next_attempt_ms <= $3
    order by anchor_message_id limit $5)
    and state = 'pending' and next_attempt_ms <= $3
returning anchor_message_id, message_id, body, attempts";

/// Every outcome changes the row only while it is still this claim's.
const DELIVERED: &str = "
update anchor_messages set state = 'delivered', delivered_ms = $3, leased_by = null,
    last_error = null
where anchor_message_id = $1 and leased_by = $2 and state = 'pending'";
const FAILED: &str = "
update anchor_messages set leased_by = null, last_error = $3, next_attempt_ms = $4,
    state = case when attempts >= $5 then 'dead' else 'pending' end
where anchor_message_id = $1 and leased_by = $2 and state = 'pending'";
const RELEASED: &str = "
update anchor_messages set leased_by = null, next_attempt_ms = 0, attempts = attempts - 1
where anchor_message_id = $1 and leased_by = $2 and state = 'pending'";

/// Retention: delivered parts older than the cutoff. Anchors are hourly,
/// so one statement of a bounded size takes what there is.
pub(super) const PURGE_DELIVERED: &str = "
delete from anchor_messages where anchor_message_id in (
    select anchor_message_id from anchor_messages
    where state = 'delivered' and delivered_ms < $1 order by delivered_ms limit $2)";

/// An anchor's part as its relay sends it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AnchorMessage {
    pub anchor_message_id: i64,
    pub message_id: String,
    /// The part's JSON.
    pub body: String,
    /// Counting the one this claim starts.
    pub attempts: i64,
}

/// What became of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnchorAttempt {
    Delivered,
    /// Tried again at `next_attempt_ms`, or dead at `max_attempts`.
    Failed {
        error: String,
        next_attempt_ms: i64,
        max_attempts: i64,
    },
    /// Not sent (the relay stopped): handed back, its attempt not counted.
    Released,
}

impl Store {
    /// Queues `parts` (one anchor) for each of `destinations`, unless an
    /// anchor of this `slot` is queued for it already; the destinations
    /// it was queued for.
    pub async fn queue_anchor(
        &self,
        parts: &[AnchorPart],
        destinations: &[&str],
        slot: i64,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut queued = Vec::new();
        let mut tx = self.begin().await?;
        for destination in destinations {
            for part in parts {
                let body = serde_json::to_string(part).expect("a part always serialises");
                let inserted: Option<i64> = on_tx!(&mut tx, conn => sqlx::query_scalar(QUEUE_PART)
                    .bind(destination)
                    .bind(slot)
                    .bind(part.part as i64)
                    .bind(&part.id)
                    .bind(&body)
                    .bind(now_ms)
                    .fetch_optional(conn)
                    .await)?;
                if inserted.is_none() {
                    break;
                }
                if part.part == 0 {
                    queued.push((*destination).to_owned());
                }
            }
        }
        tx.commit().await?;
        Ok(queued)
    }

    /// Claims up to `limit` of the destination's due parts for `claim`,
    /// leased until `lease_until_ms`.
    pub async fn claim_anchor_messages(
        &self,
        destination: &str,
        claim: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: i64,
    ) -> Result<Vec<AnchorMessage>, StoreError> {
        let mut tx = self.begin().await?;
        let rows = on_tx!(&mut tx, conn => sqlx::query_as(CLAIM)
            .bind(destination)
            .bind(claim)
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(limit)
            .fetch_all(conn)
            .await)?;
        tx.commit().await?;
        Ok(rows)
    }

    /// Records one attempt of a part still in `claim`'s lease; whether it
    /// was (a row re-claimed since is another claim's to record).
    pub async fn record_anchor_attempt(
        &self,
        id: i64,
        claim: &str,
        attempt: &AnchorAttempt,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let done = match attempt {
            AnchorAttempt::Delivered => on_tx!(&mut tx, conn => sqlx::query(DELIVERED)
                .bind(id)
                .bind(claim)
                .bind(now_ms)
                .execute(conn)
                .await
                .map(|done| done.rows_affected())),
            AnchorAttempt::Failed {
                error,
                next_attempt_ms,
                max_attempts,
            } => on_tx!(&mut tx, conn => sqlx::query(FAILED)
                .bind(id)
                .bind(claim)
                .bind(error)
                .bind(next_attempt_ms)
                .bind(max_attempts)
                .execute(conn)
                .await
                .map(|done| done.rows_affected())),
            AnchorAttempt::Released => on_tx!(&mut tx, conn => sqlx::query(RELEASED)
                .bind(id)
                .bind(claim)
                .execute(conn)
                .await
                .map(|done| done.rows_affected())),
        }?;
        tx.commit().await?;
        Ok(done == 1)
    }

    /// The anchors' parts by state, for a destination: (pending, delivered,
    /// dead).
    pub async fn anchor_message_counts(
        &self,
        destination: &str,
    ) -> Result<(i64, i64, i64), StoreError> {
        const COUNTS: &str = "
select coalesce(sum(case when state = 'pending' then 1 else 0 end), 0),
    coalesce(sum(case when state = 'delivered' then 1 else 0 end), 0),
    coalesce(sum(case when state = 'dead' then 1 else 0 end), 0)
from anchor_messages where destination = $1";
        let counts = on_pool!(self, pool => sqlx::query_as(COUNTS)
            .bind(destination)
            .fetch_one(pool)
            .await)?;
        Ok(counts)
    }
}
