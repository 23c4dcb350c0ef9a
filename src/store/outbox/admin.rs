//! What the admin shows of the outbox: each destination's dead letters and
//! blocked accounts, each event's messages, and the audited replay of one
//! message.

use chrono::{DateTime, Utc};

use super::super::write::on_tx;
use super::super::{NewAudit, Store, StoreError, on_pool};
use super::OutboxEntry;
use super::requeue::requeued;

const DEAD_LETTERS: &str = "
select outbox_id, destination, message_id, message_type, source, event_id, account_id,
    currency,
    account_seq, state, attempts, last_error, created_at, delivered_ms
from outbox where destination = $1 and state = 'dead'
order by outbox_id desc limit $2";

/// Accounts (and currencies) an ordered destination cannot send on: a
/// posting that is dead, or pending after a failed attempt, holds the ones
/// behind it.
/// Pending and dead rows apart, each through its own index
/// (`outbox_pending`, `outbox_dead`), not every row of the destination.
pub(super) const BLOCKED: &str = "
select count(*) from (
    select account_id, currency from outbox
    where destination = $1 and state = 'pending' and account_seq is not null
        and last_error is not null
    union
    select account_id, currency from outbox
    where destination = $1 and state = 'dead' and account_seq is not null
        and last_error is not null) blocked";

/// The message holding each blocked account (and currency), the first
/// failed one by `account_seq`, with how many postings wait behind it;
/// the oldest first. The same rows as [`BLOCKED`] counts.
pub(super) const BLOCKING: &str = "
select h.outbox_id, h.message_id, h.source, h.event_id, h.account_id, h.currency,
    h.account_seq, h.state, h.attempts, h.last_error,
    (select count(*) from outbox w
     where w.destination = $1 and w.state = 'pending' and w.account_id = h.account_id
         and w.currency = h.currency and w.account_seq > h.account_seq) as waiting
from (
    select f.*, row_number() over (
        partition by f.account_id, f.currency order by f.account_seq) as nth
    from (
        select outbox_id, message_id, source, event_id, account_id, currency, account_seq,
            state, attempts, last_error from outbox
        where destination = $1 and state = 'pending' and account_seq is not null
            and last_error is not null
        union all
        select outbox_id, message_id, source, event_id, account_id, currency, account_seq,
            state, attempts, last_error from outbox
        where destination = $1 and state = 'dead' and account_seq is not null
            and last_error is not null) f) h
where h.nth = 1
order by h.outbox_id
limit $2";

/// A message holding its account back on an ordered destination.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Blocking {
    pub outbox_id: i64,
    pub message_id: String,
    pub source: String,
    pub event_id: String,
    /// Always set on a posting's message (the insert binds them); not
    /// required by the schema.
    pub account_id: Option<String>,
    pub currency: Option<String>,
    pub account_seq: i64,
    /// `pending` (retried on its backoff, or re-queued) or `dead`.
    pub state: String,
    pub attempts: i64,
    pub last_error: String,
    /// Postings of its account and currency that wait behind it.
    pub waiting: i64,
}

/// Found by the intent, through the outbox's unique key (`outbox_key`).
const MESSAGES_OF_EVENT: &str = "
select o.outbox_id, o.destination, o.message_id, o.message_type, o.source, o.event_id,
    o.account_id, o.currency, o.account_seq, o.state, o.attempts, o.last_error, o.created_at,
    o.delivered_ms
from outbox o
where o.intent_id = (select intent_id from intents where source = $1 and event_id = $2)
order by o.outbox_id";

/// Re-queues one dead or delivered message (`requeued!`: the same id,
/// attempts afresh, `$4` and `$5` as for the replay of many). Found by its
/// row; its destination and id must match too, so a form from before a
/// purge never re-queues another message.
const REPLAY_ONE: &str = concat!(
    requeued!(),
    "
where outbox_id = $1 and destination = $2 and message_id = $3
    and state in ('dead', 'delivered')
returning source, event_id"
);

impl Store {
    pub async fn dead_letters(
        &self,
        destination: &str,
        limit: i64,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(DEAD_LETTERS)
            .bind(destination)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    pub async fn blocked_accounts(&self, destination: &str) -> Result<i64, StoreError> {
        let (count,): (i64,) = on_pool!(self, pool => sqlx::query_as(BLOCKED)
            .bind(destination)
            .fetch_one(pool)
            .await)?;
        Ok(count)
    }

    /// Up to `limit` messages that hold their account back, oldest first.
    pub async fn blocking_messages(
        &self,
        destination: &str,
        limit: i64,
    ) -> Result<Vec<Blocking>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(BLOCKING)
            .bind(destination)
            .bind(limit)
            .fetch_all(pool)
            .await)?)
    }

    /// Every message the event `(source, event_id)` wrote, to every
    /// destination (one no longer configured included), oldest first.
    pub async fn event_messages(
        &self,
        source: &str,
        event_id: &str,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_as(MESSAGES_OF_EVENT)
            .bind(source)
            .bind(event_id)
            .fetch_all(pool)
            .await)?)
    }

    /// Re-queues one message and audits it, in one transaction; false if
    /// it is not dead or delivered (pending already, or unknown).
    pub async fn replay_message(
        &self,
        outbox_id: i64,
        destination: &str,
        message_id: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let now_ms = self.database_now_ms().await?;
        let mut tx = self.begin().await?;
        let row: Option<(String, String)> = on_tx!(&mut tx, conn => sqlx::query_as(REPLAY_ONE)
            .bind(outbox_id)
            .bind(destination)
            .bind(message_id)
            .bind(self.outbox().routes().is_ordered(destination))
            .bind(now_ms)
            .fetch_optional(conn)
            .await)?;
        let Some((source, event_id)) = row else {
            tx.rollback().await?;
            return Ok(false);
        };
        let status = tx.intent_status(&source, &event_id).await?.ok_or_else(|| {
            StoreError::Corrupt(format!("message {message_id} tells of no stored event"))
        })?;
        let detail = format!("re-queued message {message_id} for destination {destination}");
        tx.insert_audit(&NewAudit {
            action: "outbox_replay",
            source: &source,
            event_id: Some(&event_id),
            account_id: None,
            previous_status: status,
            actor,
            note: None,
            detail: Some(&detail),
            created_at: now,
        })
        .await?;
        tx.queued = true;
        tx.commit().await?;
        Ok(true)
    }
}
