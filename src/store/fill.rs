//! The stored-data fill of `hookledger bench --stored`: a database made to
//! hold N postings as a running instance would after months of traffic,
//! written set-based (a few statements per batch of 100,000, not N
//! deliveries), so that the cost per event can be measured at 1 or 10
//! million stored events. Benchmark-only: nothing in `serve` calls it.
//!
//! The shape, the same on both backends and for any N:
//! - posting k (0, 1, 2, ...) is an applied credit of source `k % 4` (four
//!   sources named after providers); every 100th goes to `acct_0` (100,000
//!   entries at 10 million), the others round-robin over `acct_1` ..
//!   `acct_{accounts-1}`; its account's j-th posting has sequence j and
//!   amount `100 * (1 + a % 50) + j % 2` minor units, so that every balance
//!   after is a closed form of (a, j) and a batch needs no earlier row;
//! - every tenth k also stores an ignored event (no money), every 1000th a
//!   refund held as stale (a late debit waiting for a person);
//! - receipt times spread evenly over `span` seconds up to now; payloads
//!   older than the retention period are emptied as retention would have
//!   emptied them, and delivered outbox rows exist for the postings of the
//!   last `outbox_days`, as retention keeps them;
//! - sequence guards and balances are computed from the rows at the end;
//!   the ledger entries are linked as `serve` links a run's (`store::chain`).
//!
//! Not in the shape: payments (`payment_path` rows), audit rows, parked
//! events. Payload hashes are placeholders (the events are never
//! redelivered) and message ids are not the relay's own.

use chrono::{DateTime, Utc};

use std::collections::BTreeMap;

use sqlx::QueryBuilder;

use super::write::{NewLedgerEntry, RunPosting, WriteTx, on_tx};
use super::{Store, StoreError, on_pool};

/// The fill's four sources (`numbered!` names them by `k % 4`), whose
/// rows it counts and finishes.
macro_rules! fill_sources {
    () => {
        "('stripe', 'paddle', 'adyen', 'shopify')"
    };
}

/// A batch's postings, numbered k in [$1, $2), with the numbers every row
/// is derived from: account a, its j-th posting, receipt second t, and
/// whether the payload is past retention. `$3` accounts, `$4` the fill's
/// N, `$5` now and `$6` the span (unix seconds), `$7` the first second
/// whose payloads are kept. Recursive on both backends: SQLite has no
/// `generate_series` built in.
macro_rules! numbered {
    () => {
        "
with recursive s(k) as (
    select cast($1 as bigint) union all select k + 1 from s where k + 1 < $2
), g as (
    select k, k % 4 as src,
        case when k % 100 = 0 then 0 else 1 + (k - k / 100 - 1) % (cast($3 as bigint) - 1) end as a,
        case when k % 100 = 0 then k / 100 + 1 else (k - k / 100 - 1) / (cast($3 as bigint) - 1) + 1 end as j,
        $5 - (($4 - k) * $6) / $4 as t
    from s
), e as (
    select k, a, j, t,
        case src when 0 then 'stripe' when 1 then 'paddle' when 2 then 'adyen'
            else 'shopify' end as source,
        'acct_' || a as account_id,
        case a % 3 when 0 then 'EUR' when 1 then 'USD' else 'GBP' end as currency,
        100 * (1 + a % 50) + j % 2 as amount,
        case when t < $7 then 1 else 0 end as purged
    from g
), b as (
    select e.*, '{\"id\":\"evt_' || k || '\",\"type\":\"payment.succeeded\",\"data\":{\"account\":\"'
        || account_id || '\",\"amount\":' || amount || ',\"currency\":\"' || currency
        || '\",\"sequence\":' || j || ',\"description\":\"' || $8 || '\"}}' as text_body
    from e
)"
    };
}

/// The intents of a batch: every posting applied, the ignored events and
/// the held refunds. `$8` pads each payload to a realistic size, `$9` is
/// the retention period in seconds (when an emptied payload was emptied),
/// `$10` an empty payload. The backends differ only in `f`, the columns
/// written as each stores them: times (PostgreSQL's `timestamptz`,
/// SQLite's RFC 3339 text as sqlx writes it), the placeholder hash, and
/// the payload's bytes.
macro_rules! fill_intents {
    ($received:literal, $occurred:literal, $purged_at:literal, $sha:literal, $body:literal) => {
        concat!(
            numbered!(),
            ", f as (
    select b.*, ",
            $received,
            " as received, ",
            $occurred,
            " as occurred, ",
            $purged_at,
            " as purged_at, ",
            $sha,
            " as sha, ",
            $body,
            " as body
    from b
)
insert into intents (source, scope, event_id, event_type, status, reason, account_id, currency,
    amount_minor, object_id, event_sequence, occurred_at, deliveries, conflicts, payload_sha256,
    payload, first_received_at, last_received_at, late, payload_purged_at)
select source, source, 'evt_' || k, 'payment.succeeded', 'applied', null, account_id, currency,
    amount, 'pay_' || k, j, occurred, 1, 0, sha, case when purged = 1 then $10 else body end,
    received, received, false, case when purged = 1 then purged_at end
from f
union all
select source, source, 'evt_' || k || '_u', 'customer.updated', 'ignored', null, null, null,
    null, 'cus_' || a, null, occurred, 1, 0, sha, case when purged = 1 then $10 else body end,
    received, received, false, case when purged = 1 then purged_at end
from f where k % 10 = 5
union all
select source, source, 'evt_' || k || '_late', 'charge.refunded', 'stale',
    'out of order: sequence ' || (j - 1) || ' is below ' || j || ', already applied for this account',
    account_id, currency, -amount, 'pay_' || k, j - 1, occurred, 1, 0, sha, body,
    received, received, true, null
from f where k % 1000 = 500"
        )
    };
}

const FILL_INTENTS_PG: &str = fill_intents!(
    "to_timestamp(t)",
    "to_timestamp(t - 1)",
    "to_timestamp(t + $9)",
    "lpad(to_hex(k), 64, '0')",
    "convert_to(text_body, 'UTF8')"
);
const FILL_INTENTS_SQLITE: &str = fill_intents!(
    "strftime('%Y-%m-%dT%H:%M:%S', t, 'unixepoch') || '+00:00'",
    "strftime('%Y-%m-%dT%H:%M:%S', t - 1, 'unixepoch') || '+00:00'",
    "strftime('%Y-%m-%dT%H:%M:%S', t + $9, 'unixepoch') || '+00:00'",
    "printf('%064x', k)",
    "cast(text_body as blob)"
);

/// The ledger entries of the postings just written (`$1`: the highest
/// intent id before them), in intent order, which is each account's
/// posting order: the balance after the j-th posting of amount
/// `c + j % 2` is `j * c + (j + 1) / 2`. Written by the run's own insert
/// (`insert_run_entries`), which links them.
const FILL_ENTRIES: &str = "
select intent_id, source, event_id, account_id, currency, amount_minor,
    event_sequence * (amount_minor - event_sequence % 2) + (event_sequence + 1) / 2,
    object_id, first_received_at, event_sequence
from intents where intent_id > $1 and status = 'applied'
order by intent_id";

/// A row of `FILL_ENTRIES`.
type FillEntry = (
    i64,
    String,
    String,
    String,
    String,
    i64,
    i64,
    Option<String>,
    DateTime<Utc>,
    i64,
);

/// The links of the entries before a batch's, by (account, currency,
/// number): the heads its chains continue from.
const FILL_HEADS: &str = "select account_id, currency, account_seq, entry_hash from ledger_entries \
    where (account_id, currency, account_seq) in (";

/// Delivered `ledger.posted` messages for the entries just written (`$1`:
/// the highest entry id before them) received from second `$2` on, to a
/// destination named `warehouse`; each delivered 250 ms after its receipt,
/// whose second is recomputed from k as in `numbered!` (`$3` N, `$4` now,
/// `$5` span).
const FILL_OUTBOX: &str = "
insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
    object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
    created_at, delivered_ms)
select 'warehouse', 'fill-' || intent_id, 'ledger.posted', intent_id, source, event_id,
    'applied', account_id, currency, amount_minor, balance_after_minor, account_seq, object_id,
    created_at, created_at, $6, 'delivered', 1, 0, created_at, t * 1000 + 250
from (
    select l.*, $4 - (($3 - cast(substr(l.event_id, 5) as bigint)) * $5) / $3 as t
    from ledger_entries l where l.entry_id > $1
) as entries
where t >= $2
order by entry_id";

/// Each (source, account)'s guard: the highest sequence applied, as the
/// postings would have left it. Whole, so that running it again changes
/// nothing (`where true`: SQLite's upsert after a select needs a where).
const FINISH_GUARDS: &str = concat!(
    "
insert into sequence_guards (source, account_id, last_sequence, updated_at)
select source, account_id, max(event_sequence), max(last_received_at) from intents
where status = 'applied' and source in ",
    fill_sources!(),
    "
group by source, account_id
on conflict (source, account_id) do update
    set last_sequence = excluded.last_sequence, updated_at = excluded.updated_at"
);

/// Each (account, currency)'s balance and number of postings, from its
/// entries (`cast`: PostgreSQL's sum of bigint is numeric).
const FINISH_BALANCES: &str = concat!(
    "
insert into balances (account_id, currency, balance_minor, updated_at, postings)
select account_id, currency, cast(sum(amount_minor) as bigint), max(created_at), count(*)
from ledger_entries
where source in ",
    fill_sources!(),
    "
group by account_id, currency
on conflict (account_id, currency) do update
    set balance_minor = excluded.balance_minor, postings = excluded.postings,
        updated_at = excluded.updated_at"
);

/// The fill's postings already stored: a batch commits whole, so this is
/// the next k.
const FILLED_POSTINGS: &str = concat!(
    "select count(*) from ledger_entries where source in ",
    fill_sources!()
);

/// What to fill: how many postings, over how many accounts, the time they
/// spread over and what retention keeps.
#[derive(Debug, Clone, Copy)]
pub struct FillShape {
    pub postings: u64,
    /// At least 2: `acct_0` and the accounts the rest go round.
    pub accounts: u64,
    pub now: DateTime<Utc>,
    pub span_secs: i64,
    pub payload_days: u32,
    pub outbox_days: u32,
}

/// A payload's padding: Stripe's `payment_intent.succeeded` bodies run to
/// a few kilobytes; 400 characters of description bring ours to ~550
/// bytes, a modest provider's size.
const PADDING: usize = 400;

impl Store {
    /// The fill's postings already in the database.
    pub async fn filled_postings(&self) -> Result<u64, StoreError> {
        let (n,): (i64,) =
            on_pool!(self, pool => sqlx::query_as(FILLED_POSTINGS).fetch_one(pool).await)?;
        Ok(n.max(0) as u64)
    }

    /// Writes postings `from..to` of `shape` in one transaction: their
    /// intents (with the ignored and held events among them), ledger
    /// entries and delivered messages. Batches must come in order.
    pub async fn fill_batch(
        &self,
        shape: &FillShape,
        from: u64,
        to: u64,
    ) -> Result<(), StoreError> {
        let now = shape.now.timestamp();
        let day = 86_400_i64;
        let padding = "x".repeat(PADDING);
        let mut tx = self.begin().await?;
        let intents = match self {
            Store::Sqlite(..) => FILL_INTENTS_SQLITE,
            Store::Postgres(..) => FILL_INTENTS_PG,
        };
        let (last_intent, last_entry): (i64, i64) = on_tx!(&mut tx, conn => sqlx::query_as(
            "select (select coalesce(max(intent_id), 0) from intents),
                (select coalesce(max(entry_id), 0) from ledger_entries)")
            .fetch_one(conn)
            .await)?;
        on_tx!(&mut tx, conn => sqlx::query(intents)
            .bind(from as i64)
            .bind(to as i64)
            .bind(shape.accounts as i64)
            .bind(shape.postings as i64)
            .bind(now)
            .bind(shape.span_secs)
            .bind(now - i64::from(shape.payload_days) * day)
            .bind(&padding)
            .bind(i64::from(shape.payload_days) * day)
            .bind(Vec::<u8>::new())
            .execute(conn)
            .await
            .map(drop))?;
        let entries: Vec<FillEntry> = on_tx!(&mut tx, conn => sqlx::query_as(FILL_ENTRIES)
            .bind(last_intent)
            .fetch_all(conn)
            .await)?;
        let postings: Vec<RunPosting<'_>> = entries.iter().map(run_posting).collect();
        fill_heads(&mut tx, &postings).await?;
        tx.insert_run_entries(&postings, false).await?;
        on_tx!(&mut tx, conn => sqlx::query(FILL_OUTBOX)
            .bind(last_entry)
            .bind(now - i64::from(shape.outbox_days) * day)
            .bind(shape.postings as i64)
            .bind(now)
            .bind(shape.span_secs)
            .bind(false)
            .execute(conn)
            .await
            .map(drop))?;
        tx.commit().await
    }

    /// Sets the fill's guards and balances from its rows, then (PostgreSQL)
    /// has the tables vacuumed and analysed, as autovacuum would have
    /// after months of inserts.
    pub async fn finish_fill(&self) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        on_tx!(&mut tx, conn => sqlx::query(FINISH_GUARDS).execute(conn).await.map(drop))?;
        on_tx!(&mut tx, conn => sqlx::query(FINISH_BALANCES).execute(conn).await.map(drop))?;
        tx.commit().await?;
        if let Store::Postgres(pool, ..) = self {
            sqlx::raw_sql(
                "vacuum (analyze) intents, ledger_entries, outbox, balances, sequence_guards",
            )
            .execute(pool)
            .await?;
        }
        Ok(())
    }

    /// The database's size on disk, in bytes: PostgreSQL's own count for
    /// the database; SQLite's pages (the file after a checkpoint).
    pub async fn stored_bytes(&self) -> Result<i64, StoreError> {
        let sql = match self {
            Store::Sqlite(..) => {
                "select page_count * page_size from pragma_page_count(), pragma_page_size()"
            }
            Store::Postgres(..) => "select pg_database_size(current_database())",
        };
        let (bytes,): (i64,) = on_pool!(self, pool => sqlx::query_as(sql).fetch_one(pool).await)?;
        Ok(bytes)
    }
}

/// A fill's entry as a run writes it.
fn run_posting(row: &FillEntry) -> RunPosting<'_> {
    let (intent_id, source, event_id, account, currency, amount, after, object, at, seq) = row;
    RunPosting {
        entry: NewLedgerEntry {
            intent_id: *intent_id,
            credits_payment: None,
            source,
            event_id,
            account_id: account,
            currency,
            amount_minor: *amount,
            balance_after_minor: *after,
            account_seq: *seq,
            object_id: object.as_deref(),
            operator_applied: false,
            created_at: *at,
        },
        occurred_at: None,
    }
}

/// Reads the heads of the chains `postings` continue (the entry before
/// each chain's first in the batch), into the transaction's, so that the
/// batch is linked in memory.
async fn fill_heads(tx: &mut WriteTx, postings: &[RunPosting<'_>]) -> Result<(), StoreError> {
    let mut before = BTreeMap::new();
    for posting in postings {
        let entry = &posting.entry;
        before
            .entry((entry.account_id, entry.currency))
            .or_insert(entry.account_seq - 1);
    }
    let keys: Vec<_> = before.into_iter().filter(|(_, seq)| *seq > 0).collect();
    for chunk in keys.chunks(10_000) {
        let heads: Vec<(String, String, i64, Option<Vec<u8>>)> = on_tx!(tx, conn => {
            let mut query = QueryBuilder::new(FILL_HEADS);
            query.push_values(chunk, |mut row, ((account, currency), seq)| {
                row.push_bind(*account).push_bind(*currency).push_bind(*seq);
            });
            query.push(")");
            query.build_query_as().persistent(false).fetch_all(&mut *conn).await
        })?;
        for (account, currency, seq, link) in heads {
            tx.saw_head((account, currency), seq, link);
        }
    }
    Ok(())
}
