//! Payment rows: what each provider payment credited, by which event, and
//! what refunds and disputes have taken back since, per scope. A reversal is matched to its
//! payment here and can never take more than the payment credited.
//!
//! Locking: every transaction that credits or reverses a payment first takes
//! the payment row's lock with [`WriteTx::lock_payment`], which creates the
//! row (empty, `credited_minor = 0`) when the payment is unknown, so a
//! reversal that arrives first holds a lock the crediting transaction must
//! wait for:
//! - a reversal committed as `unmatched` before the credit took the lock is
//!   seen by the credit's [`WriteTx::unmatched`] read, and released by it;
//! - a reversal that takes the lock after the credit committed sees the
//!   credit and is applied at once.
//!
//! So no reversal is stranded. SQLite runs one writer at a time anyway. The
//! lock comes right after the event's own intent row, in every transaction
//! (the lock order is in `write/mod.rs`).

use chrono::{DateTime, Utc};

use super::{StoreError, WriteTx};
use crate::domain::Status;

/// Creates the payment's row if it has none, and in every case locks it and
/// returns it. The conflict path is a no-op update so that PostgreSQL takes
/// the row lock; a concurrent first insert waits for the first transaction
/// and then takes the update path.
const LOCK_PAYMENT: &str = "
insert into payments (scope, payment_ref, account_id, currency, credited_minor,
    reversed_minor, updated_at)
values ($1, $2, null, null, 0, 0, $3)
on conflict (scope, payment_ref) do update
set updated_at = payments.updated_at
returning payment_id, account_id, currency, credited_minor, reversed_minor, credited_by";

/// Credits a locked payment row: whole (`$7` false, `$8` the crediting
/// intent) only if nothing has credited it yet; a part (`$7` true, `$8`
/// null) only if it was never credited whole and every earlier part went to
/// the same account in the same currency. Bounded like balances. One statement, so
/// the test and the write cannot be separated (PostgreSQL re-checks the
/// condition on the row it locked; SQLite runs one writer).
const CREDIT_PAYMENT: &str = "
update payments
set account_id = $3, currency = $4, credited_minor = credited_minor + $5, updated_at = $6,
    credited_by = $8
where payment_id = $1 and payment_ref = $2 and credited_by is null
    and (credited_minor = 0 or ($7 and account_id = $3 and currency = $4))
    and credited_minor + $5 <= 4611686018427387904
returning credited_minor";

/// Adds to (a reversal) or takes from (a reinstatement) what was reversed,
/// only while it stays between zero and what was credited; the table's
/// check constraint is the permanent guard behind this condition.
const ADD_REVERSED: &str = "
update payments set reversed_minor = reversed_minor + $3, updated_at = $4
where scope = $1 and payment_ref = $2
    and reversed_minor + $3 >= 0 and reversed_minor + $3 <= credited_minor
returning reversed_minor";

/// The payment's unmatched reversals, in event order (a withdrawal before
/// the reinstatement that undoes it), then arrival. Read under the payment
/// row's lock (see the module comment).
const UNMATCHED: &str = "
select intent_id, source, event_id, account_id from intents
where scope = $1 and payment_ref = $2 and status = 'unmatched'
order by event_sequence, intent_id";

/// Settles an unmatched reversal that cannot apply (it names another
/// account than the payment's), only while it is still unmatched.
const REJECT_UNMATCHED: &str = "
update intents set status = 'rejected', reason = $2
where intent_id = $1 and status = 'unmatched'";

/// An unmatched reversal taken for applying: it gets the payment's account,
/// with an interim `applied` that the caller's decision corrects in the same
/// transaction. Only from `unmatched`: an operator's dismiss that won the
/// row first makes this change nothing.
const MATCH_INTENT: &str = "
update intents set status = 'applied', account_id = $2
where intent_id = $1 and status = 'unmatched'
returning event_id, event_sequence, currency, amount_minor, reversal_total, undoes, object_id";

/// Sets the amount a running-total reversal actually posts (the intent is
/// locked by this transaction).
const SET_INTENT_AMOUNT: &str = "
update intents set amount_minor = $2 where intent_id = $1";

/// The status and signed amount of an event of this scope, by event id.
const INTENT_EFFECT: &str = "
select status, amount_minor from intents where scope = $1 and event_id = $2";

/// Whether a payment has a running-total reversal applied (`reversal =
/// 'total'`): read under the payment's row lock, which every reversal of it
/// takes first, so none can be applied meanwhile.
const TOTAL_REVERSED: &str = "
select count(*) from intents
where scope = $1 and payment_ref = $2 and reversal = 'total' and status = 'applied'";

/// The source and event id of an intent (the one that credited a payment).
const INTENT_NAME: &str = "
select source, event_id from intents where intent_id = $1";

/// A payment row as locked.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PaymentRow {
    pub payment_id: i64,
    pub account_id: Option<String>,
    pub currency: Option<String>,
    pub credited_minor: i64,
    pub reversed_minor: i64,
    /// The intent that credited the payment whole, if one has.
    pub credited_by: Option<i64>,
}

/// How a credit counts against its payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentCredit {
    /// The payment itself, by this intent: at most once.
    Whole { intent_id: i64 },
    /// One part of a payment captured in parts.
    Part,
}

/// An unmatched reversal, as its payment's credit finds it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UnmatchedRow {
    pub intent_id: i64,
    /// The source that received it (of the payment's scope).
    pub source: String,
    pub event_id: String,
    /// The account the event itself named, if any.
    pub account_id: Option<String>,
}

/// An unmatched reversal once matched.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MatchedRow {
    pub event_id: String,
    pub event_sequence: i64,
    pub currency: String,
    pub amount_minor: i64,
    pub reversal_total: Option<i64>,
    pub undoes: Option<String>,
    pub object_id: Option<String>,
}

impl WriteTx {
    pub async fn lock_payment(
        &mut self,
        scope: &str,
        payment_ref: &str,
        now: DateTime<Utc>,
    ) -> Result<PaymentRow, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query_as(LOCK_PAYMENT)
            .bind(scope)
            .bind(payment_ref)
            .bind(now)
            .fetch_one(conn)
            .await)?)
    }

    /// Credits a payment this transaction locked (`payment_id` from
    /// [`WriteTx::lock_payment`]); false if the row does not admit it
    /// (credited whole before, or to another account or currency).
    pub async fn credit_payment(
        &mut self,
        payment: (i64, &str),
        account_id: &str,
        currency: &str,
        amount_minor: i64,
        credit: PaymentCredit,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (part, by) = match credit {
            PaymentCredit::Whole { intent_id } => (false, Some(intent_id)),
            PaymentCredit::Part => (true, None),
        };
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(CREDIT_PAYMENT)
            .bind(payment.0)
            .bind(payment.1)
            .bind(account_id)
            .bind(currency)
            .bind(amount_minor)
            .bind(now)
            .bind(part)
            .bind(by)
            .fetch_optional(conn)
            .await)?;
        Ok(row.is_some())
    }

    /// The source and event id of intent `intent_id`.
    pub async fn intent_name(
        &mut self,
        intent_id: i64,
    ) -> Result<Option<(String, String)>, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query_as(INTENT_NAME)
            .bind(intent_id)
            .fetch_optional(conn)
            .await)?)
    }

    /// Changes what was reversed on a locked payment by `delta` (positive
    /// for a reversal); false if that would leave 0..=credited.
    pub async fn add_reversed(
        &mut self,
        scope: &str,
        payment_ref: &str,
        delta: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let row: Option<(i64,)> = on_tx!(self, conn => sqlx::query_as(ADD_REVERSED)
            .bind(scope)
            .bind(payment_ref)
            .bind(delta)
            .bind(now)
            .fetch_optional(conn)
            .await)?;
        Ok(row.is_some())
    }

    pub async fn unmatched(
        &mut self,
        scope: &str,
        payment_ref: &str,
    ) -> Result<Vec<UnmatchedRow>, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query_as(UNMATCHED)
            .bind(scope)
            .bind(payment_ref)
            .fetch_all(conn)
            .await)?)
    }

    /// Takes an unmatched reversal for `account_id`; `None` if it is no
    /// longer unmatched.
    pub async fn match_intent(
        &mut self,
        intent_id: i64,
        account_id: &str,
    ) -> Result<Option<MatchedRow>, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query_as(MATCH_INTENT)
            .bind(intent_id)
            .bind(account_id)
            .fetch_optional(conn)
            .await)?)
    }

    /// Rejects an unmatched reversal with `reason`; false if it is no longer
    /// unmatched.
    pub async fn reject_unmatched(
        &mut self,
        intent_id: i64,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let rows = on_tx!(self, conn => sqlx::query(REJECT_UNMATCHED)
            .bind(intent_id)
            .bind(reason)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?;
        if rows == 1 {
            self.enqueue_status(intent_id, Status::Rejected, now)
                .await?;
        }
        Ok(rows == 1)
    }

    pub async fn set_intent_amount(
        &mut self,
        intent_id: i64,
        amount_minor: i64,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(SET_INTENT_AMOUNT)
            .bind(intent_id)
            .bind(amount_minor)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }

    /// Whether `payment`'s refunds were counted as a running total.
    pub async fn reversed_as_total(
        &mut self,
        scope: &str,
        payment: &str,
    ) -> Result<bool, StoreError> {
        let (count,): (i64,) = on_tx!(self, conn => sqlx::query_as(TOTAL_REVERSED)
            .bind(scope)
            .bind(payment)
            .fetch_one(conn)
            .await)?;
        Ok(count > 0)
    }

    /// The status and signed amount of `event_id` in `scope`, if stored.
    pub async fn intent_effect(
        &mut self,
        scope: &str,
        event_id: &str,
    ) -> Result<Option<(String, Option<i64>)>, StoreError> {
        Ok(on_tx!(self, conn => sqlx::query_as(INTENT_EFFECT)
            .bind(scope)
            .bind(event_id)
            .fetch_optional(conn)
            .await)?)
    }
}

#[cfg(test)]
mod tests {
    use super::TOTAL_REVERSED;
    use crate::store::plans::{migrated, plan, scans_a_table};

    /// A refund's check reads the payment's total reversals by index, never
    /// the intents table.
    #[tokio::test]
    async fn the_running_total_check_reads_its_index() {
        let plan = plan(&migrated().await, TOTAL_REVERSED).await;
        assert!(plan.contains("intents_total_reversals"), "{plan}");
        assert!(!scans_a_table(&plan), "{plan}");
    }
}
