//! A posting's writes: the balance moved in place, its ledger entry, and
//! its `ledger.posted` message for each destination that takes it.
//! PostgreSQL runs them as one statement of data-modifying CTEs, which
//! saves two round trips per posting. SQLite has no data-modifying CTEs:
//! it runs the three statements in one call (each call is a handoff to
//! sqlx's SQLite thread, and the group-committing writer waits for every
//! one of them).

use chrono::{DateTime, Utc};

use super::super::outbox::PostedTo;
use super::balances::upsert_balance;
use super::{StoreError, TxConn, WriteTx};
use crate::domain::MessageType;

/// A posting's ledger entry.
pub struct NewLedgerEntry<'a> {
    pub intent_id: i64,
    /// The payment row (`payments.payment_id`) this entry credits whole.
    pub credits_payment: Option<i64>,
    pub source: &'a str,
    pub event_id: &'a str,
    pub account_id: &'a str,
    pub currency: &'a str,
    pub amount_minor: i64,
    pub balance_after_minor: i64,
    /// Its number among the postings of its account and currency: 1, 2, ...
    pub account_seq: i64,
    pub object_id: Option<&'a str>,
    pub operator_applied: bool,
    pub created_at: DateTime<Utc>,
}

/// A posting a run of postings decided in memory (`run`), with what its
/// `ledger.posted` message copies from its intent.
pub struct RunPosting<'a> {
    pub entry: NewLedgerEntry<'a>,
    pub occurred_at: Option<DateTime<Utc>>,
}

/// A plain insert: a second entry for one (source, event_id), or a second
/// entry crediting one payment whole, violates a unique key and fails the
/// whole transaction rather than post twice.
const INSERT_LEDGER_ENTRY: &str = "
insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
    balance_after_minor, object_id, operator_applied, created_at, credits_payment, account_seq)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

/// The three writes of a posting in one statement: the balance's own
/// statement (`upsert_balance!`, whose `$1`-`$4` are this statement's
/// too), then the entry and the messages as `INSERT_LEDGER_ENTRY` and
/// `ENQUEUE_POSTING` write them (keep them in step;
/// `posting_statement::both_ways_write_the_same_rows` compares the rows).
///
/// Why it is as safe as the three: the balance update takes the row lock
/// and adds in place, and out of range is a statement that succeeds and
/// returns no row; the entry is inserted from the balance's returned row
/// only, so then nothing at all is written and the transaction stays
/// usable (the callers that catch `BalanceLimit` go on with it and hold the
/// event, as after the three statements); the unique keys of the ledger
/// fail the whole statement as they failed the insert; the messages join
/// the entry's returned row to the intent this transaction wrote, one per
/// destination in `$12` (none for an empty list), `ordered` for those in
/// `$13`, doing nothing on a conflict. PostgreSQL runs every data-modifying
/// CTE to completion whether or not the outer query reads it.
pub(in crate::store) const POST_PG: &str = concat!(
    "with balance as (",
    upsert_balance!(),
    "
), entry as (
    insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
        balance_after_minor, object_id, operator_applied, created_at, credits_payment,
        account_seq)
    select $5, $6, $7, $1, $2, $3, balance_minor, $8, $9, $4, $10, postings from balance
    returning intent_id, balance_after_minor, account_seq
), message as (
    insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
        event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
        object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
        created_at, ordered)
    select d.destination, $11, 'ledger.posted', i.intent_id, i.source, i.event_id, 'applied',
        $1, $2, $3, e.balance_after_minor, e.account_seq, $8, i.occurred_at, $4, $9,
        'pending', 0, 0, $4, d.destination = any($13::text[])
    from entry e
    join intents i on i.intent_id = e.intent_id
    cross join unnest($12::text[]) as d(destination)
    on conflict (intent_id, message_type, destination) do nothing
)
select balance_minor from balance"
);

/// SQLite's posting in one call: the balance's own statement
/// (`upsert_balance!`), the entry, then its messages (sqlx runs every
/// statement of the text, in order, with the same numbered parameters; an
/// error stops it there). SQLite has no data-modifying CTEs, so the entry
/// reads the balance row the first statement just moved, and only if that
/// statement changed a row (`changes()`: out of range, it changes none and
/// returns none, and then nothing at all is written). The messages read
/// the entry and the intent this transaction wrote and take one row per
/// destination in `$12` (a JSON array; none for `[]`), `ordered` for those
/// in `$13`, as `ENQUEUE_POSTING` does one at a time. Both the balance and
/// the entry return (balance after, number): two equal rows when posted,
/// none when out of range.
/// As safe as separate statements: each is the same write, the unique keys
/// fail it the same way, and the writer holds SQLite's one write lock, so
/// nothing else moves the balance row between the first two. As with
/// separate statements, an entry that fails leaves the balance moved in the
/// open transaction: every caller rolls back on any error but
/// `BalanceLimit` (which writes nothing).
/// `posting_statement::both_ways_write_the_same_rows` compares the rows
/// with `post_in_steps`.
const POST_SQLITE: &str = concat!(
    upsert_balance!(),
    ";
insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
    balance_after_minor, object_id, operator_applied, created_at, credits_payment,
    account_seq)
select $5, $6, $7, $1, $2, $3, b.balance_minor, $8, $9, $4, $10, b.postings
from balances b
where b.account_id = $1 and b.currency = $2 and changes() = 1
returning balance_after_minor, account_seq;
insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
    object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
    created_at, ordered)
select d.value, $11, 'ledger.posted', i.intent_id, i.source, i.event_id, 'applied',
    $1, $2, $3, e.balance_after_minor, e.account_seq, $8, i.occurred_at, $4, $9, 'pending',
    0, 0, $4, d.value in (select value from json_each($13))
from ledger_entries e, intents i, json_each($12) d
where e.intent_id = $5 and i.intent_id = $5
on conflict (intent_id, message_type, destination) do nothing"
);

/// Binds `$1`-`$11`, which `POST_PG` and `POST_SQLITE` share.
macro_rules! bind_posting {
    ($query:expr, $posting:expr, $message_id:expr) => {
        $query
            .bind($posting.account_id)
            .bind($posting.currency)
            .bind($posting.amount_minor)
            .bind($posting.created_at)
            .bind($posting.intent_id)
            .bind($posting.source)
            .bind($posting.event_id)
            .bind($posting.object_id)
            .bind($posting.operator_applied)
            .bind($posting.credits_payment)
            .bind($message_id)
    };
}

/// A balance movement to write: what the ledger entry records.
pub struct NewPosting<'a> {
    pub intent_id: i64,
    /// The payment row (`payments.payment_id`) this entry credits whole.
    pub credits_payment: Option<i64>,
    pub source: &'a str,
    pub event_id: &'a str,
    pub account_id: &'a str,
    pub currency: &'a str,
    /// Signed: positive credits, negative debits.
    pub amount_minor: i64,
    pub object_id: Option<&'a str>,
    pub operator_applied: bool,
    pub created_at: DateTime<Utc>,
}

impl WriteTx {
    pub async fn insert_ledger_entry(
        &mut self,
        entry: &NewLedgerEntry<'_>,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(INSERT_LEDGER_ENTRY)
            .bind(entry.intent_id)
            .bind(entry.source)
            .bind(entry.event_id)
            .bind(entry.account_id)
            .bind(entry.currency)
            .bind(entry.amount_minor)
            .bind(entry.balance_after_minor)
            .bind(entry.object_id)
            .bind(entry.operator_applied)
            .bind(entry.created_at)
            .bind(entry.credits_payment)
            .bind(entry.account_seq)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }

    /// Moves the balance, writes the ledger entry and its messages; returns
    /// the balance after the posting.
    pub async fn post(&mut self, posting: &NewPosting<'_>) -> Result<i64, StoreError> {
        // Shared (an Arc), worked out with the routes: no list per posting.
        let posted = self.outbox().posted().clone();
        let TxConn::Postgres(tx) = &mut self.conn else {
            return self.post_sqlite(posting, &posted).await;
        };
        let message_id = MessageType::LedgerPosted.message_id(posting.source, posting.event_id);
        let row: Option<(i64,)> = bind_posting!(sqlx::query_as(POST_PG), posting, &message_id)
            .bind(&posted.names)
            .bind(&posted.ordered)
            .fetch_optional(&mut **tx)
            .await?;
        let (balance_after,) = row.ok_or_else(|| balance_limit(posting))?;
        self.queued |= !posted.names.is_empty();
        Ok(balance_after)
    }

    /// SQLite's posting, in one call (`POST_SQLITE`).
    async fn post_sqlite(
        &mut self,
        posting: &NewPosting<'_>,
        posted: &PostedTo,
    ) -> Result<i64, StoreError> {
        let message_id = MessageType::LedgerPosted.message_id(posting.source, posting.event_id);
        // Every row: fetching only the first would leave the rest unrun.
        let rows: Vec<(i64, i64)> = on_tx!(self, conn => bind_posting!(sqlx::query_as(POST_SQLITE), posting, &message_id)
            .bind(posted.names_json.as_str())
            .bind(posted.ordered_json.as_str())
            .fetch_all(conn)
            .await)?;
        match rows[..] {
            [] => Err(balance_limit(posting)),
            [balance, entry] if balance == entry => {
                self.queued |= !posted.names.is_empty();
                Ok(entry.0)
            }
            _ => Err(StoreError::Corrupt(format!(
                "the posting of {} returned {rows:?}",
                posting.event_id
            ))),
        }
    }

    /// The balance after `posting`, and the posting's number on it.
    async fn move_balance(&mut self, posting: &NewPosting<'_>) -> Result<(i64, i64), StoreError> {
        self.upsert_balance(
            posting.account_id,
            posting.currency,
            posting.amount_minor,
            posting.created_at,
        )
        .await
    }

    /// The same as three statements, each message on its own: on both
    /// backends what the faster ways are tested against.
    pub async fn post_in_steps(&mut self, posting: &NewPosting<'_>) -> Result<i64, StoreError> {
        let (balance_after_minor, account_seq) = self.move_balance(posting).await?;
        let entry = entry_of(posting, balance_after_minor, account_seq);
        self.insert_ledger_entry(&entry).await?;
        self.enqueue_posting(&entry).await?;
        Ok(balance_after_minor)
    }
}

fn entry_of<'a>(
    posting: &NewPosting<'a>,
    balance_after_minor: i64,
    account_seq: i64,
) -> NewLedgerEntry<'a> {
    NewLedgerEntry {
        intent_id: posting.intent_id,
        credits_payment: posting.credits_payment,
        source: posting.source,
        event_id: posting.event_id,
        account_id: posting.account_id,
        currency: posting.currency,
        amount_minor: posting.amount_minor,
        balance_after_minor,
        account_seq,
        object_id: posting.object_id,
        operator_applied: posting.operator_applied,
        created_at: posting.created_at,
    }
}

fn balance_limit(posting: &NewPosting<'_>) -> StoreError {
    StoreError::BalanceLimit {
        account_id: posting.account_id.to_owned(),
        currency: posting.currency.to_owned(),
    }
}
