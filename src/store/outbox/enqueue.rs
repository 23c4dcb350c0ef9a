//! Writing messages, inside the transaction that posts, holds, dismisses or
//! rejects the event they tell of: the message exists if and only if that
//! transaction commits. One statement per destination that takes the type;
//! none at all when no destination is configured.
//!
//! Race-free on both backends: each statement inserts rows keyed by
//! (intent_id, message_type, destination) (the same as the message id, which
//! is a hash of the type and the intent's source and event id; ordered by
//! time, so new rows go to the key's end) and does nothing on a conflict, so the same
//! message written twice (an event held as `waiting`, then as `stale`) is
//! one row; the intent row it reads is locked by this transaction's own
//! write to it. A new row is due at once (`next_attempt_ms` 0). A posting
//! for an ordered destination is written `ordered` (migration 0010); a
//! status message never takes part in an account's order.

use chrono::{DateTime, Utc};

use super::super::write::{WriteTx, on_tx};
use super::super::{NewLedgerEntry, StoreError};
use crate::domain::{MessageType, Status};

macro_rules! enqueue_posting {
    () => {
        "
insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
    object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
    created_at, ordered)
select $1, $2, 'ledger.posted', intent_id, source, event_id, 'applied', $3, $4, $5, $6, $7,
    $8, occurred_at, $9, $10, 'pending', 0, 0, $9, $12
from intents where intent_id = $11
on conflict (intent_id, message_type, destination) do nothing"
    };
}

/// The intent's status and reason as this transaction just set them.
macro_rules! enqueue_status {
    () => {
        "
insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, reason, account_id, currency, amount_minor, object_id, occurred_at,
    posted_at, operator_applied, state, attempts, next_attempt_ms, created_at)
select $1, $2, $3, intent_id, source, event_id, status, reason, account_id, currency,
    amount_minor, object_id, occurred_at, $4, false, 'pending', 0, 0, $4
from intents where intent_id = $5
on conflict (intent_id, message_type, destination) do nothing"
    };
}

const ENQUEUE_POSTING: &str = enqueue_posting!();
const ENQUEUE_STATUS: &str = enqueue_status!();

impl WriteTx {
    /// A `ledger.posted` message for each destination that takes it: the
    /// ledger entry `posted` tells of.
    pub async fn enqueue_posting(&mut self, posted: &NewLedgerEntry<'_>) -> Result<(), StoreError> {
        // The routes are shared (an Arc): no copy of the names per posting.
        let routes = self.outbox().routes().clone();
        let message_id = MessageType::LedgerPosted.message_id(posted.source, posted.event_id);
        for destination in routes.taking(MessageType::LedgerPosted) {
            on_tx!(self, conn => sqlx::query(ENQUEUE_POSTING)
                .bind(destination)
                .bind(&message_id)
                .bind(posted.account_id)
                .bind(posted.currency)
                .bind(posted.amount_minor)
                .bind(posted.balance_after_minor)
                .bind(posted.account_seq)
                .bind(posted.object_id)
                .bind(posted.created_at)
                .bind(posted.operator_applied)
                .bind(posted.intent_id)
                .bind(routes.is_ordered(destination))
                .execute(conn)
                .await
                .map(drop))?;
            self.queued = true;
        }
        Ok(())
    }

    /// The message an intent's new status is told by (`event.held`,
    /// `event.dismissed`, `event.rejected`), for each destination that
    /// takes it; nothing for a status no message tells.
    pub(in crate::store) async fn enqueue_status(
        &mut self,
        intent_id: i64,
        status: Status,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let Some(message_type) = MessageType::for_status(status) else {
            return Ok(());
        };
        let routes = self.outbox().routes().clone();
        if routes.taking(message_type).next().is_none() {
            return Ok(());
        }
        let (source, event_id) = self.intent_name(intent_id).await?.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "intent {intent_id} changed status but is not stored"
            ))
        })?;
        let message_id = message_type.message_id(&source, &event_id);
        for destination in routes.taking(message_type) {
            on_tx!(self, conn => sqlx::query(ENQUEUE_STATUS)
                .bind(destination)
                .bind(&message_id)
                .bind(message_type.as_str())
                .bind(now)
                .bind(intent_id)
                .execute(conn)
                .await
                .map(drop))?;
            self.queued = true;
        }
        Ok(())
    }
}
