//! Sequence-guard primitives: the high-water guard, the contiguous guard with
//! its row lock, parking and releasing events, and skipped numbers.
//!
//! Every contiguous decision (apply the next number, park a later one,
//! release what a gap held back, skip a gap) runs after [`WriteTx::lock_guard`]
//! or [`WriteTx::lock_existing_guard`] in the same transaction, so all of them
//! for one (source, account) are serialised on the guard row:
//! - PostgreSQL: the statement is an upsert whose conflict path updates the
//!   row, which takes its row lock until commit; a second transaction waits
//!   there and then reads the committed guard. So an event parked by one
//!   transaction is committed before the transaction that applies its
//!   predecessor reads the parked events: no wakeup is lost.
//! - SQLite: `BEGIN IMMEDIATE` already runs one writer at a time.
//!
//! A parked event's status changes only from `waiting`, in one conditional
//! statement, so a release and an operator's dismiss of the same event
//! cannot both succeed.
//!
//! A release may post several currencies of one account. Its balance rows
//! are locked first, in currency order ([`WriteTx::lock_balances`]), so two
//! releases on one account (two contiguous sources) cannot wait on each
//! other's balance rows in a cycle.

use chrono::{DateTime, Utc};

use super::{StoreError, WriteTx};
use crate::domain::Status;

/// Moves the guard up to `sequence` unless it is already higher; returns a
/// row only if the event is in order (sequence >= guard). Check and write are
/// this one statement: the conflict path locks the guard row (PostgreSQL) and
/// evaluates `where` on its latest committed value. With no row returned the
/// row is still locked until commit.
pub(in crate::store) const ADVANCE_GUARD: &str = "
insert into sequence_guards (source, account_id, last_sequence, updated_at)
values ($1, $2, $3, $4)
on conflict (source, account_id) do update
set last_sequence = excluded.last_sequence, updated_at = excluded.updated_at
where sequence_guards.last_sequence <= excluded.last_sequence
returning last_sequence";

/// Contiguous: creates the guard at `first_sequence - 1` if the account has
/// none, and in every case locks the row and returns the guard. The conflict
/// path is a no-op update so that PostgreSQL takes the row lock; a concurrent
/// first insert of the same key waits for the first transaction and then
/// takes the update path.
pub(in crate::store) const LOCK_GUARD: &str = "
insert into sequence_guards (source, account_id, last_sequence, updated_at)
values ($1, $2, $3, $4)
on conflict (source, account_id) do update
set last_sequence = sequence_guards.last_sequence
returning last_sequence";

/// The same lock for callers that must not create a guard (operator, drain):
/// no row means the account has never had an ordered event.
const LOCK_EXISTING_GUARD: &str = "
update sequence_guards set last_sequence = last_sequence
where source = $1 and account_id = $2
returning last_sequence";

/// Written only under the lock taken above.
const SET_GUARD: &str = "
update sequence_guards set last_sequence = $3, updated_at = $4
where source = $1 and account_id = $2";

/// An operator-applied event that moved its account's guard.
const MARK_IN_ORDER: &str = "update intents set late = false where intent_id = $1";

/// Stale events of an account above `sequence`, in the order a guard reset
/// applies them (the `intents_sequenced` index).
const STALE_ABOVE: &str = "
select event_id from intents
where source = $1 and account_id = $2 and event_sequence > $3 and status = 'stale'
order by event_sequence, intent_id
limit $4";

/// Records a guard reset with the newest ledger entry of the account at that
/// moment. Run under the guard's lock, which every posting on the account
/// takes before its entry gets its id: every entry applied later has a
/// higher id on both backends.
const INSERT_GUARD_RESET: &str = "
insert into guard_resets
    (source, account_id, guard_before, reset_to, after_entry_id, audit_id, created_at)
select $1, $2, $3, $4, coalesce(max(entry_id), 0), $5, $6
from ledger_entries where source = $1 and account_id = $2";

/// The event that holds `sequence` for this account, other than the intent
/// being decided: applied, parked, or held as stale. Read under the guard
/// lock, and no such row is created or released without that lock. Found
/// through `intents_sequenced`, which holds only events with a sequence:
/// the comparison implies it.
const SEQUENCE_HOLDER: &str = "
select event_id from intents
where source = $1 and account_id = $2 and event_sequence = $3
    and status in ('applied', 'waiting', 'stale') and intent_id <> $4
order by intent_id
limit 1";

/// An account's parked events, lowest sequence first (the `intents_waiting`
/// index), including any the guard has already passed (a source switched
/// from contiguous, or instances that disagree on its mode).
const PARKED: &str = "
select intent_id, event_id, event_sequence, currency, amount_minor, object_id
from intents
where source = $1 and account_id = $2 and status = 'waiting'
order by event_sequence
limit $3";

/// Settles a parked event (applied, stale or rejected) only if it is still
/// waiting: an operator's dismiss that won the row first makes this change
/// nothing, and the release stops there.
const SETTLE_PARKED: &str = "
update intents set status = $2, reason = $3, late = $4
where intent_id = $1 and status = 'waiting'";

/// The operator action that skipped `sequence`, if one did.
const SKIPPED_BY: &str = "
select audit_id from sequence_skips
where source = $1 and account_id = $2 and first_skipped <= $3 and last_skipped >= $3
order by skip_id
limit 1";

const INSERT_SKIP: &str = "
insert into sequence_skips (source, account_id, first_skipped, last_skipped, audit_id, created_at)
values ($1, $2, $3, $4, $5, $6)";

/// A parked event, as a release needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Parked {
    pub intent_id: i64,
    pub event_id: String,
    pub event_sequence: i64,
    pub currency: String,
    pub amount_minor: i64,
    pub object_id: Option<String>,
}

impl WriteTx {
    /// High-water: true if `sequence` is in order (the guard now equals it);
    /// false if the guard is already higher (the guard is untouched, but
    /// locked until commit).
    pub async fn advance_guard(
        &mut self,
        source: &str,
        account_id: &str,
        sequence: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(ADVANCE_GUARD)
            .bind(source)
            .bind(account_id)
            .bind(sequence)
            .bind(now)
            .fetch_optional(conn)
            .await)?;
        Ok(row.is_some())
    }

    /// Contiguous: locks the account's guard (creating it at `initial`) and
    /// returns it.
    pub async fn lock_guard(
        &mut self,
        source: &str,
        account_id: &str,
        initial: i64,
        now: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let (guard,): (i64,) = on_tx!(self, conn => sqlx::query_as(LOCK_GUARD)
            .bind(source)
            .bind(account_id)
            .bind(initial)
            .bind(now)
            .fetch_one(conn)
            .await)?;
        Ok(guard)
    }

    /// Locks the account's guard if it has one.
    pub async fn lock_existing_guard(
        &mut self,
        source: &str,
        account_id: &str,
    ) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(LOCK_EXISTING_GUARD)
            .bind(source)
            .bind(account_id)
            .fetch_optional(conn)
            .await)?;
        Ok(row.map(|(guard,)| guard))
    }

    /// The ids of the account's stale events above `sequence`, lowest
    /// first; read under the guard's lock, which every stale decision holds.
    pub async fn stale_event_ids_above(
        &mut self,
        source: &str,
        account_id: &str,
        sequence: i64,
        limit: i64,
    ) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = on_tx!(self, conn => sqlx::query_as(STALE_ABOVE)
            .bind(source)
            .bind(account_id)
            .bind(sequence)
            .bind(limit)
            .fetch_all(conn)
            .await)?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Clears `late` on an event an operator applied that moved the guard.
    pub async fn mark_in_order(&mut self, intent_id: i64) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(MARK_IN_ORDER)
            .bind(intent_id)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }

    /// Records a reset of a guard this transaction has locked.
    pub async fn insert_guard_reset(
        &mut self,
        source: &str,
        account_id: &str,
        (guard_before, reset_to): (i64, i64),
        audit_id: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(INSERT_GUARD_RESET)
            .bind(source)
            .bind(account_id)
            .bind(guard_before)
            .bind(reset_to)
            .bind(audit_id)
            .bind(now)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }

    /// Sets a guard this transaction has locked.
    pub async fn set_guard(
        &mut self,
        source: &str,
        account_id: &str,
        sequence: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(SET_GUARD)
            .bind(source)
            .bind(account_id)
            .bind(sequence)
            .bind(now)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }

    /// The id of another event holding `sequence` on this account.
    pub async fn sequence_holder(
        &mut self,
        source: &str,
        account_id: &str,
        sequence: i64,
        except_intent_id: i64,
    ) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = on_tx!(self, conn => sqlx::query_as(SEQUENCE_HOLDER)
            .bind(source)
            .bind(account_id)
            .bind(sequence)
            .bind(except_intent_id)
            .fetch_optional(conn)
            .await)?;
        Ok(row.map(|(event_id,)| event_id))
    }

    /// Up to `limit` parked events of the account, lowest sequence first.
    pub async fn parked(
        &mut self,
        source: &str,
        account_id: &str,
        limit: i64,
    ) -> Result<Vec<Parked>, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query_as(PARKED)
            .bind(source)
            .bind(account_id)
            .bind(limit)
            .fetch_all(conn)
            .await)?)
    }

    /// Moves a parked event to `status`; false if it is no longer waiting.
    pub async fn settle_parked(
        &mut self,
        intent_id: i64,
        status: Status,
        (reason, late): (&str, bool),
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let result = on_tx!(self, conn => sqlx::query(SETTLE_PARKED)
            .bind(intent_id)
            .bind(status.as_str())
            .bind(reason)
            .bind(late)
            .execute(conn)
            .await
            .map(|r| r.rows_affected()))?;
        if result == 1 {
            self.enqueue_status(intent_id, status, now).await?;
        }
        Ok(result == 1)
    }

    /// The audit id of the operator action that skipped `sequence`.
    pub async fn skipped_by(
        &mut self,
        source: &str,
        account_id: &str,
        sequence: i64,
    ) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(SKIPPED_BY)
            .bind(source)
            .bind(account_id)
            .bind(sequence)
            .fetch_optional(conn)
            .await)?;
        Ok(row.map(|(audit_id,)| audit_id))
    }

    /// Records that an operator skipped `first..=last`.
    pub async fn insert_skip(
        &mut self,
        source: &str,
        account_id: &str,
        skipped: (i64, i64),
        audit_id: i64,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(INSERT_SKIP)
            .bind(source)
            .bind(account_id)
            .bind(skipped.0)
            .bind(skipped.1)
            .bind(audit_id)
            .bind(now)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }
}

/// SQLite's plans: the reads by sequence find their rows through
/// `intents_sequenced`, whose condition (a sequence) their comparisons
/// imply; without it they would walk an account's every event.
#[cfg(test)]
mod plans {
    use super::{SEQUENCE_HOLDER, STALE_ABOVE};
    use crate::store::plans::{migrated, plan, scans_a_table};

    #[tokio::test]
    async fn the_reads_by_sequence_search_the_sequenced_index() {
        let pool = migrated().await;
        for (name, sql) in [("holder", SEQUENCE_HOLDER), ("stale", STALE_ABOVE)] {
            let plan = plan(&pool, sql).await;
            assert!(
                plan.contains(
                    "USING INDEX intents_sequenced (source=? AND account_id=? AND event_sequence"
                ),
                "{name}:\n{plan}"
            );
            assert!(!scans_a_table(&plan), "{name}:\n{plan}");
        }
    }
}
