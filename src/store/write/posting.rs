//! A posting's writes: the balance moved in place, its ledger entry,
//! linked to the entry before it (`store::chain`), and its `ledger.posted`
//! message for each destination that takes it. The link is computed in
//! Rust from what the balance's statement reads, so a posting is two
//! statements: the balance's, then the entry and its messages in one
//! (PostgreSQL: a data-modifying CTE; SQLite, which has none: two
//! statements in one call, each call being a handoff to sqlx's SQLite
//! thread that the group-committing writer waits for).

use chrono::{DateTime, Utc};

use super::{StoreError, TxConn, WriteTx};
use crate::domain::MessageType;
use crate::store::chain::hash::EntryLinks;

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
/// whole transaction rather than post twice; a second entry `account_seq`
/// of one balance likewise.
const INSERT_LEDGER_ENTRY: &str = "
insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
    balance_after_minor, object_id, operator_applied, created_at, credits_payment, account_seq,
    prev_hash, entry_hash)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

/// The entry (`INSERT_LEDGER_ENTRY`'s `$1`-`$14`) and its messages, one
/// per destination in `$16`, `ordered` for those in `$17`, as
/// `ENQUEUE_POSTING` writes them one at a time (doing nothing on a
/// conflict): one statement on PostgreSQL, whose data-modifying `with` runs
/// to completion whether or not it is read. The messages join the entry's
/// returned row to the intent this transaction wrote.
const POST_ENTRY_PG: &str = concat!(
    "with entry as (
    insert into ledger_entries (intent_id, source, event_id, account_id, currency,
        amount_minor, balance_after_minor, object_id, operator_applied, created_at,
        credits_payment, account_seq, prev_hash, entry_hash)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
    returning intent_id, account_id, currency, amount_minor, balance_after_minor, account_seq,
        object_id, created_at, operator_applied
)
",
    post_messages!(
        "d.destination",
        "unnest($16::text[]) as d(destination)",
        "d.destination = any($17::text[])",
        "entry e"
    ),
);

/// SQLite's: the same in one call (sqlx runs each statement of the text in
/// order with the same numbered parameters; an error stops it there), the
/// destinations a JSON array in `$16` (none for `[]`), those ordered in
/// `$17`. The messages read the entry the first statement wrote.
const POST_ENTRY_SQLITE: &str =
    concat!(
    "insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
    balance_after_minor, object_id, operator_applied, created_at, credits_payment, account_seq,
    prev_hash, entry_hash)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14);
",
    post_messages!("d.value", "json_each($16) d",
        "d.value in (select value from json_each($17))",
        "(select * from ledger_entries where intent_id = $1) e"),
);

/// The `ledger.posted` messages of the entry `e` (read from `$entry`),
/// message id `$15`, one per destination `$destination` of `$each`.
/// (`where true`: SQLite would read the upsert's `on` as the join's.)
macro_rules! post_messages {
    ($destination:literal, $each:literal, $ordered:literal, $entry:literal) => {
        concat!(
            "insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
    object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
    created_at, ordered)
select ", $destination, ", $15, 'ledger.posted', i.intent_id, i.source, i.event_id, 'applied',
    e.account_id, e.currency, e.amount_minor, e.balance_after_minor, e.account_seq, e.object_id,
    i.occurred_at, e.created_at, e.operator_applied, 'pending', 0, 0, e.created_at, ", $ordered, "
from ", $entry, "
join intents i on i.intent_id = e.intent_id
cross join ", $each, "
where true
on conflict (intent_id, message_type, destination) do nothing"
        )
    };
}
use post_messages;

/// Binds `INSERT_LEDGER_ENTRY`'s `$1`-`$14`, which the posting statements
/// share.
macro_rules! bind_entry {
    ($query:expr, $entry:expr, $links:expr) => {
        $query
            .bind($entry.intent_id)
            .bind($entry.source)
            .bind($entry.event_id)
            .bind($entry.account_id)
            .bind($entry.currency)
            .bind($entry.amount_minor)
            .bind($entry.balance_after_minor)
            .bind($entry.object_id)
            .bind($entry.operator_applied)
            .bind($entry.created_at)
            .bind($entry.credits_payment)
            .bind($entry.account_seq)
            .bind(&$links.prev[..])
            .bind(&$links.own[..])
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
    /// Writes an entry with its links (`store::chain`).
    pub async fn insert_ledger_entry(
        &mut self,
        entry: &NewLedgerEntry<'_>,
        links: &EntryLinks,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => bind_entry!(sqlx::query(INSERT_LEDGER_ENTRY), entry, links)
            .execute(conn)
            .await
            .map(drop))?;
        Ok(())
    }

    /// Moves the balance, writes the ledger entry, linked, and its
    /// messages; returns the balance after the posting. Two statements:
    /// the balance's (which reads the link of the entry before, under the
    /// row's lock), then the entry and its messages in one.
    pub async fn post(&mut self, posting: &NewPosting<'_>) -> Result<i64, StoreError> {
        let (balance_after_minor, account_seq) = self.move_balance(posting).await?;
        let entry = entry_of(posting, balance_after_minor, account_seq);
        let links = self.link_entry(&entry).await?;
        // Shared (an Arc), worked out with the routes: no list per posting.
        let posted = self.outbox().posted().clone();
        let message_id = MessageType::LedgerPosted.message_id(posting.source, posting.event_id);
        match &mut self.conn {
            TxConn::Postgres(tx) => {
                bind_entry!(sqlx::query(POST_ENTRY_PG), entry, links)
                    .bind(&message_id)
                    .bind(&posted.names)
                    .bind(&posted.ordered)
                    .execute(&mut **tx)
                    .await?;
            }
            TxConn::Sqlite(tx, _) => {
                bind_entry!(sqlx::query(POST_ENTRY_SQLITE), entry, links)
                    .bind(&message_id)
                    .bind(posted.names_json.as_str())
                    .bind(posted.ordered_json.as_str())
                    .execute(&mut **tx)
                    .await?;
            }
        }
        self.queued |= !posted.names.is_empty();
        Ok(balance_after_minor)
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
    /// backends what the faster way is tested against.
    pub async fn post_in_steps(&mut self, posting: &NewPosting<'_>) -> Result<i64, StoreError> {
        let (balance_after_minor, account_seq) = self.move_balance(posting).await?;
        let entry = entry_of(posting, balance_after_minor, account_seq);
        let links = self.link_entry(&entry).await?;
        self.insert_ledger_entry(&entry, &links).await?;
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
