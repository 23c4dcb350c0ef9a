//! The reversals a run of postings (`ingest::run_of_postings`) decided in
//! memory: their intents matched to the account their payment credited,
//! and what they took added to their payments' rows (a statement each per
//! run, however many reversals).
//!
//! Each was decided against its payment row as the run read it under lock
//! (`run_payments`: on PostgreSQL the run's write keys were taken first,
//! so no other writer that takes them moves one of these rows meanwhile;
//! SQLite runs one writer), and each intent is one this transaction just
//! inserted as `unmatched`. The statements say so again: an intent no
//! longer `unmatched`, or a payment row that would leave its bounds, is
//! not written, and the count that comes back says the run was wrong.

use chrono::{DateTime, Utc};
use sqlx::QueryBuilder;

use super::run::per_statement;
use super::{StoreError, TxConn, WriteTx};

/// A reversal the run applied: its intent, the payment's account, and the
/// amount it posted (for a running total, the part not reversed before).
pub struct RunMatch<'a> {
    pub intent_id: i64,
    pub account_id: &'a str,
    pub amount_minor: i64,
}

/// What the run's reversals took from one payment, in all, and the time
/// of the last.
pub struct RunReversed {
    pub payment_id: i64,
    pub taken_minor: i64,
    pub updated_at: DateTime<Utc>,
}

/// `MATCH_INTENT` and `SET_INTENT_AMOUNT` for many: `applied`, to the
/// payment's account, with the amount posted.
const MATCH_PG: &str = "
update intents
set status = 'applied', account_id = t.account_id, amount_minor = t.amount_minor
from unnest($1::int8[], $2::text[], $3::int8[]) as t(intent_id, account_id, amount_minor)
where intents.intent_id = t.intent_id and intents.status = 'unmatched'";

/// SQLite's: a `values` list's columns are named column1, column2, ...
const MATCH_SQLITE: &str = "
update intents
set status = 'applied', account_id = v.column2, amount_minor = v.column3
from (";
const MATCH_SQLITE_END: &str =
    ") as v where intents.intent_id = v.column1 and intents.status = 'unmatched'";

/// `ADD_REVERSED` for many: what was reversed grows by what the run took,
/// only while it stays within what was credited.
const REVERSED_PG: &str = "
update payments
set reversed_minor = reversed_minor + t.taken_minor, updated_at = t.updated_at
from unnest($1::int8[], $2::int8[], $3::timestamptz[]) as t(payment_id, taken_minor, updated_at)
where payments.payment_id = t.payment_id
    and reversed_minor + t.taken_minor between 0 and credited_minor";

const REVERSED_SQLITE: &str = "
update payments
set reversed_minor = reversed_minor + v.column2, updated_at = v.column3
from (";
const REVERSED_SQLITE_END: &str = ") as v where payments.payment_id = v.column1
    and payments.reversed_minor + v.column2 between 0 and payments.credited_minor";

impl WriteTx {
    /// Writes the run's matched reversals and what they took from their
    /// payments.
    pub async fn write_run_reversals(
        &mut self,
        matches: &[RunMatch<'_>],
        reversed: &[RunReversed],
    ) -> Result<(), StoreError> {
        if matches.is_empty() && reversed.is_empty() {
            return Ok(());
        }
        let (mut matched, mut taken) = (0, 0);
        match &mut self.conn {
            TxConn::Postgres(tx) => {
                matched = sqlx::query(MATCH_PG)
                    .bind(matches.iter().map(|m| m.intent_id).collect::<Vec<_>>())
                    .bind(matches.iter().map(|m| m.account_id).collect::<Vec<_>>())
                    .bind(matches.iter().map(|m| m.amount_minor).collect::<Vec<_>>())
                    .execute(&mut **tx)
                    .await?
                    .rows_affected();
                taken = sqlx::query(REVERSED_PG)
                    .bind(reversed.iter().map(|r| r.payment_id).collect::<Vec<_>>())
                    .bind(reversed.iter().map(|r| r.taken_minor).collect::<Vec<_>>())
                    .bind(reversed.iter().map(|r| r.updated_at).collect::<Vec<_>>())
                    .execute(&mut **tx)
                    .await?
                    .rows_affected();
            }
            TxConn::Sqlite(tx, _) => {
                for chunk in matches.chunks(per_statement(3)) {
                    let mut query = QueryBuilder::new(MATCH_SQLITE);
                    query.push_values(chunk, |mut row, one| {
                        row.push_bind(one.intent_id)
                            .push_bind(one.account_id)
                            .push_bind(one.amount_minor);
                    });
                    query.push(MATCH_SQLITE_END);
                    let done = query.build().persistent(false).execute(&mut **tx).await?;
                    matched += done.rows_affected();
                }
                for chunk in reversed.chunks(per_statement(3)) {
                    let mut query = QueryBuilder::new(REVERSED_SQLITE);
                    query.push_values(chunk, |mut row, one| {
                        row.push_bind(one.payment_id)
                            .push_bind(one.taken_minor)
                            .push_bind(one.updated_at);
                    });
                    query.push(REVERSED_SQLITE_END);
                    let done = query.build().persistent(false).execute(&mut **tx).await?;
                    taken += done.rows_affected();
                }
            }
        }
        if matched != matches.len() as u64 || taken != reversed.len() as u64 {
            // Checked in memory against the rows read under lock: the rows
            // disagree with the run.
            return Err(StoreError::Corrupt(format!(
                "a run's reversals: {matched} of {} intents matched, {taken} of {} payments \
                 admitted what they took",
                matches.len(),
                reversed.len()
            )));
        }
        Ok(())
    }
}
