//! A replay's first statement: a stored event, mapped again with the
//! current config, takes its new fields, only if it is still in the status
//! the replay saw.

use chrono::{DateTime, Utc};

use super::{NewIntent, StoreError, WriteTx};
use crate::domain::Status;

/// The test and the change are one statement, as in `CLAIM_INTENT`: of two
/// concurrent replays (or a replay and a dismiss) from one status,
/// PostgreSQL makes the second wait for the first's row lock and then
/// re-evaluates `status = $18` on the committed row, so it gets the row
/// back only if the first left it in that status; SQLite runs one writer
/// at a time. What identifies the event (source, scope, event id)
/// and what was received (payload, its digest, headers, times, counts) is
/// never changed. `$5` keeps the stored reason (as the history of a held
/// event a replay now posts) instead of writing `$6`. An event a replay
/// re-keyed (`replayed_into`) is never rewritten: its effect lives under
/// the other key, and a second would be a second effect.
const REWRITE_INTENT: &str = "
update intents set event_type = $3, status = $4,
    reason = case when $5 then reason else $6 end,
    account_id = $7, currency = $8, amount_minor = $9, object_id = $10, event_sequence = $11,
    occurred_at = $12, payment_ref = $13, reversal = $14, reversal_total = $15, undoes = $16,
    partial = $17, late = false
where source = $1 and event_id = $2 and status = $18 and replayed_into is null
returning intent_id";

/// A re-keyed replay's mark on the event it started from: `ignored` (under
/// its own key it moves nothing now), why, and the key its payload now
/// applies under. Only if it is still in the status the replay saw and not
/// re-keyed yet: one statement, safe as `REWRITE_INTENT` is (PostgreSQL
/// re-evaluates the condition on the row a concurrent writer committed;
/// SQLite runs one writer).
const MARK_REPLAYED_INTO: &str = "
update intents set status = 'ignored', reason = $4, replayed_into = $5, late = false
where source = $1 and event_id = $2 and status = $3 and replayed_into is null
returning intent_id";

/// The new row of a re-keyed replay names the event it came from (the row
/// is this transaction's own insert).
const SET_REPLAYED_FROM: &str = "
update intents set replayed_from = $2 where intent_id = $1";

impl WriteTx {
    /// Rewrites the event `new` names with `new`'s mapped fields and
    /// status, if it is in `from` now; its intent id, or `None` if it is
    /// not. `keep_reason` keeps the stored reason instead of `new`'s. A
    /// status that is final here (`rejected`, `ignored`) is told to the
    /// outbox as an inserted one is; every other is decided further on.
    pub async fn rewrite_intent(
        &mut self,
        new: &NewIntent<'_>,
        from: Status,
        keep_reason: bool,
        now: DateTime<Utc>,
    ) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(REWRITE_INTENT)
            .bind(new.source)
            .bind(new.event_id)
            .bind(new.event_type)
            .bind(new.status.as_str())
            .bind(keep_reason)
            .bind(new.reason)
            .bind(new.account_id)
            .bind(new.currency)
            .bind(new.amount_minor)
            .bind(new.object_id)
            .bind(new.sequence)
            .bind(new.occurred_at)
            .bind(new.payment_ref)
            .bind(new.reversal)
            .bind(new.reversal_total)
            .bind(new.undoes)
            .bind(new.partial)
            .bind(from.as_str())
            .fetch_optional(conn)
            .await)?;
        let Some((intent_id,)) = row else {
            return Ok(None);
        };
        if new.status == Status::Rejected {
            self.enqueue_status(intent_id, Status::Rejected, now)
                .await?;
        }
        Ok(Some(intent_id))
    }
}

/// The event a re-keyed replay starts from, and the key it applies under.
pub struct ReplayedInto<'a> {
    pub source: &'a str,
    pub event_id: &'a str,
    /// The status the replay saw.
    pub from: Status,
    pub reason: &'a str,
    /// The new intent: its event id and row.
    pub into: &'a str,
    pub into_intent_id: i64,
}

impl WriteTx {
    /// Marks the original of a re-keyed replay and links the two rows;
    /// false (nothing written) if the original is no longer in `from` or
    /// was re-keyed meanwhile.
    pub async fn mark_replayed_into(
        &mut self,
        mark: &ReplayedInto<'_>,
    ) -> Result<bool, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(MARK_REPLAYED_INTO)
            .bind(mark.source)
            .bind(mark.event_id)
            .bind(mark.from.as_str())
            .bind(mark.reason)
            .bind(mark.into)
            .fetch_optional(conn)
            .await)?;
        if row.is_none() {
            return Ok(false);
        }
        on_tx!(self, conn => sqlx::query(SET_REPLAYED_FROM)
            .bind(mark.into_intent_id)
            .bind(mark.event_id)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(true)
    }
}
