//! The payment rows of a run of postings (`ingest::run_of_postings`):
//! whether a reversal waits for a payment its credits pay, the rows its credits
//! and reversals need (created where missing and locked, in one
//! statement), and the credits the run decided in memory (one statement;
//! what its reversals took: `run_reversals`).
//!
//! A run decides a payment's credit in memory only on a row that holds
//! nothing yet (no credit, no reversal), and only where no reversal waits
//! `unmatched` for any payment of the run: then the credit is the first
//! thing its row records and releases nothing, and a credit decided alone
//! touches its payment row, its guard and its balance, and nothing else.
//! A run with a reversal waiting (a refund that came before its payment)
//! is decided event by event, by the statements `payments.rs` runs for
//! one. A reversal is decided in memory against the row as the run read it
//! and left it. Creating or locking a row is `LOCK_PAYMENT`'s statement
//! for many: on PostgreSQL the run's write keys (`keys`) were taken first,
//! so no other writer that takes them holds, creates, credits or reverses
//! one of these rows, or records a reversal of one, meanwhile; SQLite runs
//! one writer.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::QueryBuilder;

use super::run::per_statement;
use super::{PaymentRow, StoreError, TxConn, WriteTx};

/// (scope, payment_ref) of a payment row.
pub type PaymentKey = (String, String);

/// A payment row as the run found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPayment {
    pub row: PaymentRow,
    /// A running-total reversal of it is applied (`TOTAL_REVERSED`'s
    /// question, asked with the lock).
    pub total_reversed: bool,
}

impl RunPayment {
    /// The row holds nothing (no credit, no reversal): its first credit
    /// may be decided in memory.
    pub fn fresh(&self) -> bool {
        let row = &self.row;
        row.credited_minor == 0 && row.reversed_minor == 0 && row.credited_by.is_none()
    }

    /// The account the payment credited, once it has (what a reversal of
    /// it is matched to, as `ingest::reverse` matches one).
    pub fn credited_account(&self) -> Option<&str> {
        let row = &self.row;
        row.account_id.as_deref().filter(|_| row.credited_minor > 0)
    }
}

/// A credit the run decided for a fresh row, as `CREDIT_PAYMENT` writes
/// it on a row with nothing credited.
pub struct RunCredit<'a> {
    pub payment_id: i64,
    pub account_id: &'a str,
    pub currency: &'a str,
    pub amount_minor: i64,
    /// The intent that credits the payment whole; `None` for a part.
    pub credited_by: Option<i64>,
    pub updated_at: DateTime<Utc>,
}

/// Whether a reversal of any of the payments waits `unmatched` (the
/// partial index `intents_unmatched` serves it, prepared or not: the keys
/// drive the join).
const WAITING_PG: &str = "
select exists (
    select 1 from unnest($1::text[], $2::text[]) as k(scope, payment_ref)
    join intents u on u.scope = k.scope and u.payment_ref = k.payment_ref
        and u.status = 'unmatched')";
const WAITING_SQLITE: &str = "
select exists (
    select 1 from intents where status = 'unmatched' and (scope, payment_ref) in (";
const WAITING_SQLITE_END: &str = "))";

/// `LOCK_PAYMENT` for each key, in the order given (so new rows are
/// numbered as one by one would number them): created where missing, and
/// in every case locked (the no-op update) and returned, with whether a
/// running-total reversal of it is applied (as `TOTAL_REVERSED` asks, by
/// the same partial index: read under the row's lock, which every
/// reversal of the payment takes first, so none is applied meanwhile).
const LOCK_PAYMENTS_PG: &str = "
insert into payments (scope, payment_ref, account_id, currency, credited_minor,
    reversed_minor, updated_at)
select scope, payment_ref, null, null, 0, 0, updated_at
from unnest($1::text[], $2::text[], $3::timestamptz[]) as t(scope, payment_ref, updated_at)
on conflict (scope, payment_ref) do update
set updated_at = payments.updated_at
returning payment_id, scope, payment_ref, account_id, currency, credited_minor,
    reversed_minor, credited_by, exists (
        select 1 from intents t
        where t.scope = payments.scope and t.payment_ref = payments.payment_ref
            and t.reversal = 'total' and t.status = 'applied') as total_reversed";

/// SQLite's, as a multi-row `values` list.
const LOCK_PAYMENTS_SQLITE: &str = "
insert into payments (scope, payment_ref, account_id, currency, credited_minor,
    reversed_minor, updated_at) ";
const LOCK_PAYMENTS_SQLITE_END: &str = "
on conflict (scope, payment_ref) do update
set updated_at = payments.updated_at
returning payment_id, scope, payment_ref, account_id, currency, credited_minor,
    reversed_minor, credited_by, exists (
        select 1 from intents t
        where t.scope = payments.scope and t.payment_ref = payments.payment_ref
            and t.reversal = 'total' and t.status = 'applied') as total_reversed";

/// The credits, each on a row holding nothing (as `CREDIT_PAYMENT` leaves
/// such a row: its account, currency, the amount, its time, the crediting
/// intent).
const CREDIT_PAYMENTS_PG: &str = "
update payments
set account_id = t.account_id, currency = t.currency, credited_minor = t.amount_minor,
    updated_at = t.updated_at, credited_by = t.credited_by
from unnest($1::int8[], $2::text[], $3::text[], $4::int8[], $5::timestamptz[], $6::int8[])
    as t(payment_id, account_id, currency, amount_minor, updated_at, credited_by)
where payments.payment_id = t.payment_id";

/// SQLite's: a `values` list's columns are named column1, column2, ...
const CREDIT_PAYMENTS_SQLITE: &str = "
update payments
set account_id = v.column2, currency = v.column3, credited_minor = v.column4,
    updated_at = v.column5, credited_by = v.column6
from (";
const CREDIT_PAYMENTS_SQLITE_END: &str = ") as v where payments.payment_id = v.column1";

type Locked = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    i64,
    i64,
    Option<i64>,
    bool,
);

impl WriteTx {
    /// Whether a reversal of any payment of `keys` (scope, payment) waits
    /// `unmatched` for its credit.
    pub async fn run_payments_waited_for(
        &mut self,
        keys: &[(&str, &str)],
    ) -> Result<bool, StoreError> {
        let waiting = match &mut self.conn {
            TxConn::Postgres(tx) => {
                let (scopes, payments): (Vec<&str>, Vec<&str>) = keys.iter().copied().unzip();
                let (waiting,): (bool,) = sqlx::query_as(WAITING_PG)
                    .bind(scopes)
                    .bind(payments)
                    .fetch_one(&mut **tx)
                    .await?;
                waiting
            }
            TxConn::Sqlite(tx, _) => {
                let mut waiting = false;
                for chunk in keys.chunks(per_statement(2)) {
                    let mut query = QueryBuilder::new(WAITING_SQLITE);
                    query.push_values(chunk, |mut row, (scope, payment)| {
                        row.push_bind(*scope).push_bind(*payment);
                    });
                    query.push(WAITING_SQLITE_END);
                    let (found,): (bool,) = query
                        .build_query_as()
                        .persistent(false)
                        .fetch_one(&mut **tx)
                        .await?;
                    waiting |= found;
                }
                waiting
            }
        };
        Ok(waiting)
    }

    /// The payment rows of `keys` (scope, payment, the time of the first
    /// event that takes it; each key once, in arrival order): each created
    /// where missing, locked, and returned.
    pub async fn lock_run_payments(
        &mut self,
        keys: &[(&str, &str, DateTime<Utc>)],
    ) -> Result<HashMap<PaymentKey, RunPayment>, StoreError> {
        let mut rows: Vec<Locked> = Vec::with_capacity(keys.len());
        match &mut self.conn {
            TxConn::Postgres(tx) => {
                rows = sqlx::query_as(LOCK_PAYMENTS_PG)
                    .bind(keys.iter().map(|k| k.0).collect::<Vec<_>>())
                    .bind(keys.iter().map(|k| k.1).collect::<Vec<_>>())
                    .bind(keys.iter().map(|k| k.2).collect::<Vec<_>>())
                    .fetch_all(&mut **tx)
                    .await?;
            }
            TxConn::Sqlite(tx, _) => {
                for chunk in keys.chunks(per_statement(3)) {
                    let mut query = QueryBuilder::new(LOCK_PAYMENTS_SQLITE);
                    query.push_values(chunk, |mut row, (scope, payment, now)| {
                        row.push_bind(*scope)
                            .push_bind(*payment)
                            .push("null, null, 0, 0")
                            .push_bind(*now);
                    });
                    query.push(LOCK_PAYMENTS_SQLITE_END);
                    let locked: Vec<Locked> = query
                        .build_query_as()
                        .persistent(false)
                        .fetch_all(&mut **tx)
                        .await?;
                    rows.extend(locked);
                }
            }
        }
        Ok(rows
            .into_iter()
            .map(
                |(id, scope, payment, account, currency, credited, reversed, by, total)| {
                    let row = PaymentRow {
                        payment_id: id,
                        account_id: account,
                        currency,
                        credited_minor: credited,
                        reversed_minor: reversed,
                        credited_by: by,
                    };
                    let locked = RunPayment {
                        row,
                        total_reversed: total,
                    };
                    ((scope, payment), locked)
                },
            )
            .collect())
    }

    /// Writes the credits a run decided on fresh rows.
    pub async fn credit_run_payments(
        &mut self,
        credits: &[RunCredit<'_>],
    ) -> Result<(), StoreError> {
        if credits.is_empty() {
            return Ok(());
        }
        match &mut self.conn {
            TxConn::Postgres(tx) => {
                sqlx::query(CREDIT_PAYMENTS_PG)
                    .bind(credits.iter().map(|c| c.payment_id).collect::<Vec<_>>())
                    .bind(credits.iter().map(|c| c.account_id).collect::<Vec<_>>())
                    .bind(credits.iter().map(|c| c.currency).collect::<Vec<_>>())
                    .bind(credits.iter().map(|c| c.amount_minor).collect::<Vec<_>>())
                    .bind(credits.iter().map(|c| c.updated_at).collect::<Vec<_>>())
                    .bind(credits.iter().map(|c| c.credited_by).collect::<Vec<_>>())
                    .execute(&mut **tx)
                    .await?;
            }
            TxConn::Sqlite(tx, _) => {
                for chunk in credits.chunks(per_statement(6)) {
                    let mut query = QueryBuilder::new(CREDIT_PAYMENTS_SQLITE);
                    query.push_values(chunk, |mut row, credit| {
                        row.push_bind(credit.payment_id)
                            .push_bind(credit.account_id)
                            .push_bind(credit.currency)
                            .push_bind(credit.amount_minor)
                            .push_bind(credit.updated_at)
                            .push_bind(credit.credited_by);
                    });
                    query.push(CREDIT_PAYMENTS_SQLITE_END);
                    query.build().persistent(false).execute(&mut **tx).await?;
                }
            }
        }
        Ok(())
    }
}
