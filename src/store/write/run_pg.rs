//! PostgreSQL's texts for the largest of a run's statements (`run`): one
//! text however long the run, each column bound as one array and unnested
//! back into rows in order, so the statement is prepared once per
//! connection instead of parsed and planned for every run (a multi-row
//! `values` of 60 intents is some 1,600 expressions). They write the same
//! rows as `run`'s multi-row texts, which SQLite runs.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::NewIntent;
use super::balances::last_link;
use super::posting::RunPosting;
use crate::domain::MessageType;
use crate::store::chain::hash::EntryLinks;

/// `INSERT_INTENT`'s insert path for many rows; a key that exists is left
/// as it is. Race-free as `INSERT_INTENT`: a concurrent insert of one key
/// waits for the first transaction, then does nothing here.
pub(in crate::store) const INSERT_INTENTS: &str = "
insert into intents (source, scope, event_id, event_type, status, reason, account_id, currency,
    amount_minor, object_id, event_sequence, occurred_at, deliveries, conflicts,
    payload_sha256, payload, first_received_at, last_received_at, payment_ref, reversal,
    reversal_total, undoes, partial, signature_headers, signed_at, signed_event_id, origin)
select source, scope, event_id, event_type, status, reason, account_id, currency,
    amount_minor, object_id, event_sequence, occurred_at, 1, 0,
    payload_sha256, payload, received_at, received_at, payment_ref, reversal,
    reversal_total, undoes, partial, signature_headers, signed_at, signed_event_id, origin
from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::int8[], $10::text[], $11::int8[], $12::timestamptz[],
    $13::text[], $14::bytea[], $15::timestamptz[], $16::text[], $17::text[], $18::int8[],
    $19::text[], $20::bool[], $21::text[], $22::int8[], $23::text[], $24::text[])
    as t(source, scope, event_id, event_type, status, reason, account_id, currency,
        amount_minor, object_id, event_sequence, occurred_at, payload_sha256, payload,
        received_at, payment_ref, reversal, reversal_total, undoes, partial,
        signature_headers, signed_at, signed_event_id, origin)
on conflict (scope, event_id) do nothing
returning intent_id, scope, event_id";

const INSERT_LEDGER_ENTRIES: &str = "
insert into ledger_entries (intent_id, source, event_id, account_id, currency, amount_minor,
    balance_after_minor, object_id, operator_applied, created_at, credits_payment, account_seq,
    prev_hash, entry_hash)
select * from unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[],
    $7::int8[], $8::text[], $9::bool[], $10::timestamptz[], $11::int8[], $12::int8[],
    $13::bytea[], $14::bytea[])";

/// The messages of the entries in `$1`-`$12` (as `INSERT_LEDGER_ENTRIES`
/// binds them) with their message ids and times (`$15`, `$16`), one per
/// destination in `$17`, `ordered` for those in `$18`, in entry order then
/// destination order, as `post` writes them one posting at a time.
const INSERT_MESSAGES: &str = "
insert into outbox (destination, message_id, message_type, intent_id, source, event_id,
    event_status, account_id, currency, amount_minor, balance_after_minor, account_seq,
    object_id, occurred_at, posted_at, operator_applied, state, attempts, next_attempt_ms,
    created_at, ordered)
select d.destination, e.message_id, 'ledger.posted', e.intent_id, e.source, e.event_id,
    'applied', e.account_id, e.currency, e.amount_minor, e.balance_after_minor,
    e.account_seq, e.object_id, e.occurred_at, e.created_at, e.operator_applied, 'pending',
    0, 0, e.created_at, d.destination = any($18::text[])
from unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[],
    $7::int8[], $8::text[], $9::bool[], $10::timestamptz[], $11::int8[], $12::int8[],
    $15::text[], $16::timestamptz[])
    with ordinality as e(intent_id, source, event_id, account_id, currency, amount_minor,
        balance_after_minor, object_id, operator_applied, created_at, credits_payment,
        account_seq, message_id, occurred_at, n)
cross join unnest($17::text[]) with ordinality as d(destination, m)
order by e.n, d.m
on conflict (intent_id, message_type, destination) do nothing";

/// The late events of a run: each intent's `late` and reason, as
/// `SET_INTENT_STATUS` sets them for one.
const MARK_LATE: &str = "
update intents set late = true, reason = t.reason
from unnest($1::int8[], $2::text[]) as t(intent_id, reason)
where intents.intent_id = t.intent_id";

/// The run's existing guards, locked in key order.
pub(in crate::store) const LOCK_GUARDS: &str = "
select source, account_id, last_sequence from sequence_guards
where (source, account_id) in (select * from unnest($1::text[], $2::text[]))
order by source, account_id
for update";

/// The run's existing balances, locked in key order, each with the link
/// of its last entry (`store::chain`). Read in the statement's snapshot: a
/// row this waited for may name an entry committed after it, which then
/// reads as no link, and the writer reads it again (`link_unlinked`).
pub(in crate::store) const LOCK_BALANCES: &str = concat!(
    "select b.account_id, b.currency, b.balance_minor, b.postings, ",
    last_link!(),
    "
from balances b
where (b.account_id, b.currency) in (select * from unnest($1::text[], $2::text[]))
order by b.account_id, b.currency
for update of b"
);

/// The existing rows of `sorted`'s keys, locked in key order by `lock`
/// (`LOCK_GUARDS`, `LOCK_BALANCES`): a row lock without writing the row,
/// as a no-op upsert would.
pub(super) async fn lock_existing<T>(
    conn: &mut PgConnection,
    lock: &'static str,
    sorted: &[((&str, &str), DateTime<Utc>)],
) -> Result<Vec<T>, sqlx::Error>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    sqlx::query_as(lock)
        .bind(column(sorted, |((first, _), _)| *first))
        .bind(column(sorted, |((_, second), _)| *second))
        .fetch_all(conn)
        .await
}

pub(super) async fn insert_intents(
    conn: &mut PgConnection,
    intents: &[NewIntent<'_>],
) -> Result<Vec<(i64, String, String)>, sqlx::Error> {
    sqlx::query_as(INSERT_INTENTS)
        .bind(column(intents, |i| i.source))
        .bind(column(intents, |i| i.scope))
        .bind(column(intents, |i| i.event_id))
        .bind(column(intents, |i| i.event_type))
        .bind(column(intents, |i| i.status.as_str()))
        .bind(column(intents, |i| i.reason))
        .bind(column(intents, |i| i.account_id))
        .bind(column(intents, |i| i.currency))
        .bind(column(intents, |i| i.amount_minor))
        .bind(column(intents, |i| i.object_id))
        .bind(column(intents, |i| i.sequence))
        .bind(column(intents, |i| i.occurred_at))
        .bind(column(intents, |i| i.payload_sha256))
        .bind(column(intents, |i| i.payload))
        .bind(column(intents, |i| i.received_at))
        .bind(column(intents, |i| i.payment_ref))
        .bind(column(intents, |i| i.reversal))
        .bind(column(intents, |i| i.reversal_total))
        .bind(column(intents, |i| i.undoes))
        .bind(column(intents, |i| i.partial))
        .bind(column(intents, |i| i.signature_headers))
        .bind(column(intents, |i| i.signed_at))
        .bind(column(intents, |i| i.signed_event_id))
        .bind(column(intents, |i| i.origin.as_str()))
        .fetch_all(conn)
        .await
}

/// `INSERT_LEDGER_ENTRIES` and `INSERT_MESSAGES` as one statement, on the
/// same bound arrays: the entries' insert in a `with` (PostgreSQL runs a
/// data-modifying `with` once, to the end, whether or not it is read), the
/// messages' as the statement. One round trip for both tables where the
/// group writer waits for each (the messages are not read from the
/// entries: each comes from the same arrays).
static INSERT_ENTRIES_AND_MESSAGES: LazyLock<String> =
    LazyLock::new(|| format!("with entries as ({INSERT_LEDGER_ENTRIES}\n)\n{INSERT_MESSAGES}"));

/// The ledger entries of `postings`, with their `links`; with
/// `destinations` (the names, and those ordered), their messages too, in
/// the same statement.
pub(super) async fn insert_postings(
    conn: &mut PgConnection,
    postings: &[RunPosting<'_>],
    links: &[EntryLinks],
    destinations: Option<(&[String], &[String])>,
) -> Result<(), sqlx::Error> {
    let text = match destinations {
        None => INSERT_LEDGER_ENTRIES,
        Some(_) => INSERT_ENTRIES_AND_MESSAGES.as_str(),
    };
    let query = sqlx::query(text)
        .bind(column(postings, |p| p.entry.intent_id))
        .bind(column(postings, |p| p.entry.source))
        .bind(column(postings, |p| p.entry.event_id))
        .bind(column(postings, |p| p.entry.account_id))
        .bind(column(postings, |p| p.entry.currency))
        .bind(column(postings, |p| p.entry.amount_minor))
        .bind(column(postings, |p| p.entry.balance_after_minor))
        .bind(column(postings, |p| p.entry.object_id))
        .bind(column(postings, |p| p.entry.operator_applied))
        .bind(column(postings, |p| p.entry.created_at))
        .bind(column(postings, |p| p.entry.credits_payment))
        .bind(column(postings, |p| p.entry.account_seq))
        .bind(column(links, |l| &l.prev[..]))
        .bind(column(links, |l| &l.own[..]));
    let query = match destinations {
        None => query,
        Some((names, ordered)) => query
            .bind(
                postings
                    .iter()
                    .map(|p| MessageType::LedgerPosted.message_id(p.entry.source, p.entry.event_id))
                    .collect::<Vec<_>>(),
            )
            .bind(column(postings, |p| p.occurred_at))
            .bind(names)
            .bind(ordered),
    };
    query.execute(conn).await.map(drop)
}

/// `MARK_LATE` for the intents `ids`, each with its reason.
pub(super) async fn mark_late(
    conn: &mut PgConnection,
    ids: Vec<i64>,
    reasons: Vec<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(MARK_LATE)
        .bind(ids)
        .bind(reasons)
        .execute(conn)
        .await
        .map(drop)
}

/// One column of `rows`, as the array it is bound as.
fn column<'a, T, V>(rows: &'a [T], value: impl Fn(&'a T) -> V) -> Vec<V> {
    rows.iter().map(value).collect()
}
