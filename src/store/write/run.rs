//! Set-based primitives for a run of postings decided in memory
//! (`ingest::run_of_postings`): each reads or writes the whole run in one
//! statement, where an event decided alone takes one statement per event
//! and table. A run longer than a statement may bind is written in chunks
//! (SQLite binds at most 32,766 values, PostgreSQL 65,535).
//!
//! Locks, on PostgreSQL: the run's new intents (in arrival order), then
//! its guard rows, then its balance rows: of each, those that exist in one
//! `select ... for update` in key order (a row lock, no row written), then
//! the missing ones created (at their source's initial guard, at zero)
//! and so locked. Every value the run writes back was read under those
//! locks, so the balances and guards written from memory are what in-place
//! updates would have written. The transaction around the run (a group) took the write keys
//! of all its events first (`keys`), so no other group holds a row of the
//! run's accounts or events meanwhile: these locks never wait for one.
//! SQLite runs one writer at a time (`BEGIN IMMEDIATE`): nothing moves a
//! row between the read and the write.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sqlx::QueryBuilder;

use super::balances::last_link;
use super::posting::RunPosting;
use super::run_pg;
use super::{NewIntent, StoreError, TxConn, WriteTx};
use crate::domain::MessageType;

/// Values bound by one statement at most: within both backends' limits.
const MAX_BINDS: usize = 32_000;

/// (source, account) of a sequence guard; (account, currency) of a balance.
pub type RowKey = (String, String);

/// A balance row as the run leaves it: the value, the number of postings,
/// and the time of the last one.
pub struct RunBalance<'a> {
    pub account_id: &'a str,
    pub currency: &'a str,
    pub balance_minor: i64,
    pub postings: i64,
    pub updated_at: DateTime<Utc>,
}

/// A guard as the run leaves it.
pub struct RunGuard<'a> {
    pub source: &'a str,
    pub account_id: &'a str,
    pub last_sequence: i64,
    pub updated_at: DateTime<Utc>,
}

/// A late event the run applied: its intent (written as `applied`) gets
/// `late` and this reason, as `SET_INTENT_STATUS` gives it alone.
pub struct RunLate {
    pub intent_id: i64,
    pub reason: String,
}

/// What the run read of its balances: (balance, postings) per existing
/// row, and on PostgreSQL the rows the read created (at zero, to lock
/// them), which must go again if the run posts nothing to them.
#[derive(Default)]
pub struct RunBalances {
    pub rows: HashMap<RowKey, (i64, i64)>,
    pub created: Vec<RowKey>,
}

const INTENT_COLUMNS: &str = "insert into intents (source, scope, event_id, event_type, status, \
    reason, account_id, currency, amount_minor, object_id, event_sequence, occurred_at, \
    deliveries, conflicts, payload_sha256, payload, first_received_at, last_received_at, \
    payment_ref, reversal, reversal_total, undoes, partial, signature_headers, signed_at, \
    signed_event_id, origin) ";
const INTENT_BINDS: usize = 25;

const LEDGER_COLUMNS: &str = "insert into ledger_entries (intent_id, source, event_id, \
    account_id, currency, amount_minor, balance_after_minor, object_id, operator_applied, \
    created_at, credits_payment, account_seq, prev_hash, entry_hash) ";
const LEDGER_BINDS: usize = 14;

/// A balance row as a run reads it: key, balance, postings, and the link
/// of its last entry.
type BalanceHead = (String, String, i64, i64, Option<Vec<u8>>);

const OUTBOX_COLUMNS: &str = "insert into outbox (destination, message_id, message_type, \
    intent_id, source, event_id, event_status, account_id, currency, amount_minor, \
    balance_after_minor, account_seq, object_id, occurred_at, posted_at, operator_applied, \
    state, attempts, next_attempt_ms, created_at, ordered) ";
const OUTBOX_BINDS: usize = 16;

/// Each key once, in key order (the lock order), with the time of the
/// first event that takes it.
fn in_key_order<'a>(
    keys: &[(&'a str, &'a str, DateTime<Utc>)],
) -> Vec<((&'a str, &'a str), DateTime<Utc>)> {
    let mut sorted = BTreeMap::new();
    for &(first, second, now) in keys {
        sorted.entry((first, second)).or_insert(now);
    }
    sorted.into_iter().collect()
}

/// The keys of `sorted` that `exists` does not know, in the same order.
fn missing_of<'a>(
    sorted: &[((&'a str, &'a str), DateTime<Utc>)],
    exists: impl Fn(&RowKey) -> bool,
) -> Vec<((&'a str, &'a str), DateTime<Utc>)> {
    sorted
        .iter()
        .filter(|((first, second), _)| !exists(&((*first).to_owned(), (*second).to_owned())))
        .copied()
        .collect()
}

/// SQLite: the rows `select` (ending `... in (`) finds for the keys of
/// `sorted`, in chunks.
async fn select_existing<T>(
    conn: &mut sqlx::SqliteConnection,
    select: &str,
    sorted: &[((&str, &str), DateTime<Utc>)],
) -> Result<Vec<T>, sqlx::Error>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> + Send + Unpin,
{
    let mut rows = Vec::new();
    for chunk in sorted.chunks(per_statement(2)) {
        let mut query = QueryBuilder::new(select);
        query.push_values(chunk, |mut row, ((first, second), _)| {
            row.push_bind(*first).push_bind(*second);
        });
        query.push(")");
        rows.extend(
            query
                .build_query_as()
                .persistent(false)
                .fetch_all(&mut *conn)
                .await?,
        );
    }
    Ok(rows)
}

/// New intents' ids by their key.
fn by_key(rows: Vec<(i64, String, String)>) -> impl Iterator<Item = ((String, String), i64)> {
    rows.into_iter()
        .map(|(id, scope, event_id)| ((scope, event_id), id))
}

/// Rows of `binds` values each that fit one statement.
pub(super) fn per_statement(binds: usize) -> usize {
    MAX_BINDS / binds
}

impl WriteTx {
    /// Inserts each intent whose key (scope, event_id) is new, as
    /// `INSERT_INTENT`'s insert path writes it; a key that exists is left
    /// as it is (its redelivery is counted by the caller, as one by one).
    /// The keys must be distinct. Returns the new intent id of each, or
    /// `None` where the key existed.
    pub async fn insert_new_intents(
        &mut self,
        intents: &[NewIntent<'_>],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        let mut ids: HashMap<(String, String), i64> = HashMap::with_capacity(intents.len());
        if let TxConn::Postgres(tx) = &mut self.conn {
            ids.extend(by_key(run_pg::insert_intents(tx, intents).await?));
        }
        let sqlite = matches!(self.conn, TxConn::Sqlite(..));
        for chunk in intents
            .chunks(per_statement(INTENT_BINDS))
            .filter(|_| sqlite)
        {
            let rows: Vec<(i64, String, String)> = on_tx!(self, conn => {
                let mut query = QueryBuilder::new(INTENT_COLUMNS);
                query.push_values(chunk, |mut row, new| {
                    row.push_bind(new.source)
                        .push_bind(new.scope)
                        .push_bind(new.event_id)
                        .push_bind(new.event_type)
                        .push_bind(new.status.as_str())
                        .push_bind(new.reason)
                        .push_bind(new.account_id)
                        .push_bind(new.currency)
                        .push_bind(new.amount_minor)
                        .push_bind(new.object_id)
                        .push_bind(new.sequence)
                        .push_bind(new.occurred_at)
                        .push("1")
                        .push("0")
                        .push_bind(new.payload_sha256)
                        .push_bind(new.payload)
                        .push_bind(new.received_at)
                        .push_bind(new.received_at)
                        .push_bind(new.payment_ref)
                        .push_bind(new.reversal)
                        .push_bind(new.reversal_total)
                        .push_bind(new.undoes)
                        .push_bind(new.partial)
                        .push_bind(new.signature_headers)
                        .push_bind(new.signed_at)
                        .push_bind(new.signed_event_id)
                        .push_bind(new.origin.as_str());
                });
                // Race-free as `INSERT_INTENT`: a concurrent insert of one
                // key waits for the first transaction (PostgreSQL), then
                // does nothing here and is counted as a redelivery.
                query.push(
                    " on conflict (scope, event_id) do nothing \
                     returning intent_id, scope, event_id",
                );
                query.build_query_as().persistent(false).fetch_all(&mut *conn).await
            })?;
            ids.extend(by_key(rows));
        }
        Ok(intents
            .iter()
            .map(|new| {
                ids.get(&(new.scope.to_owned(), new.event_id.to_owned()))
                    .copied()
            })
            .collect())
    }

    /// Locks the guards of `keys` (source, account, the time of the first
    /// event that takes it) in key order and returns each: those that
    /// exist first, then each missing one created as `LOCK_GUARD` does, at
    /// its source's `initial` guard (the floor, or a contiguous source's
    /// number before its first).
    pub async fn lock_run_guards(
        &mut self,
        keys: &[(&str, &str, DateTime<Utc>)],
        initial: impl Fn(&str) -> i64,
    ) -> Result<HashMap<RowKey, i64>, StoreError> {
        let sorted = in_key_order(keys);
        let existing: Vec<(String, String, i64)> = match &mut self.conn {
            TxConn::Postgres(tx) => run_pg::lock_existing(tx, run_pg::LOCK_GUARDS, &sorted).await?,
            TxConn::Sqlite(tx, _) => {
                select_existing(
                    tx,
                    "select source, account_id, last_sequence from sequence_guards \
                     where (source, account_id) in (",
                    &sorted,
                )
                .await?
            }
        };
        let mut guards: HashMap<RowKey, i64> = existing
            .into_iter()
            .map(|(source, account, guard)| ((source, account), guard))
            .collect();
        let missing = missing_of(&sorted, |key| guards.contains_key(key));
        for chunk in missing.chunks(per_statement(4)) {
            let rows: Vec<(String, String, i64)> = on_tx!(self, conn => {
                let mut query = QueryBuilder::new(
                    "insert into sequence_guards (source, account_id, last_sequence, updated_at) ",
                );
                query.push_values(chunk, |mut row, ((source, account), now)| {
                    row.push_bind(*source)
                        .push_bind(*account)
                        .push_bind(initial(source))
                        .push_bind(*now);
                });
                // Another transaction may have created one meanwhile: then
                // this waits for it and locks the row.
                query.push(
                    " on conflict (source, account_id) do update \
                     set last_sequence = sequence_guards.last_sequence \
                     returning source, account_id, last_sequence",
                );
                query.build_query_as().persistent(false).fetch_all(&mut *conn).await
            })?;
            guards.extend(
                rows.into_iter()
                    .map(|(source, account, guard)| ((source, account), guard)),
            );
        }
        Ok(guards)
    }

    /// Reads (and on PostgreSQL locks, in key order) the balances of
    /// `keys` (account, currency, the time of the first event that posts
    /// to it).
    pub async fn lock_run_balances(
        &mut self,
        keys: &[(&str, &str, DateTime<Utc>)],
    ) -> Result<RunBalances, StoreError> {
        let sorted = in_key_order(keys);
        let mut read = RunBalances::default();
        let tx = match &mut self.conn {
            // One writer: a plain read holds until commit, and a missing
            // row stays missing.
            TxConn::Sqlite(tx, _) => {
                let rows: Vec<BalanceHead> = select_existing(
                    tx,
                    concat!(
                        "select b.account_id, b.currency, b.balance_minor, b.postings, ",
                        last_link!(),
                        " from balances b where (b.account_id, b.currency) in ("
                    ),
                    &sorted,
                )
                .await?;
                self.read_balances(&mut read, rows);
                return Ok(read);
            }
            TxConn::Postgres(tx) => tx,
        };
        let existing: Vec<BalanceHead> =
            run_pg::lock_existing(tx, run_pg::LOCK_BALANCES, &sorted).await?;
        self.read_balances(&mut read, existing);
        let TxConn::Postgres(tx) = &mut self.conn else {
            return Ok(read);
        };
        // Created at zero where missing, so that every row the run will
        // write is locked now (a row another transaction inserted
        // meanwhile would otherwise be overwritten); `xmax = 0` is true
        // only of a row this statement inserted.
        let missing = missing_of(&sorted, |key| read.rows.contains_key(key));
        for chunk in missing.chunks(per_statement(3)) {
            let mut query = QueryBuilder::new(
                "insert into balances (account_id, currency, balance_minor, updated_at, \
                 postings) ",
            );
            query.push_values(chunk, |mut row, ((account, currency), now)| {
                row.push_bind(*account)
                    .push_bind(*currency)
                    .push("0")
                    .push_bind(*now)
                    .push("0");
            });
            query.push(
                " on conflict (account_id, currency) do update \
                 set balance_minor = balances.balance_minor \
                 returning account_id, currency, balance_minor, postings, (xmax = 0) as created",
            );
            let rows: Vec<(String, String, i64, i64, bool)> = query
                .build_query_as()
                .persistent(false)
                .fetch_all(&mut **tx)
                .await?;
            for (account, currency, balance, postings, created) in rows {
                if created {
                    read.created.push((account, currency));
                } else {
                    read.rows.insert((account, currency), (balance, postings));
                }
            }
        }
        Ok(read)
    }

    /// Balance rows read with their chains' heads, into `read` and the
    /// transaction's heads.
    fn read_balances(&mut self, read: &mut RunBalances, rows: Vec<BalanceHead>) {
        for (account, currency, balance, postings, head) in rows {
            let key = (account, currency);
            self.saw_head(key.clone(), postings, head);
            read.rows.insert(key, (balance, postings));
        }
    }

    /// Writes what a run decided: its ledger entries, linked, their
    /// `ledger.posted` messages for each destination that takes them (as
    /// `post` writes them), its balances and guards as it leaves them (each
    /// row read under lock by this transaction), and removes the balance
    /// rows `unposted` that the read created for nothing.
    pub async fn write_run(
        &mut self,
        postings: &[RunPosting<'_>],
        balances: &[RunBalance<'_>],
        guards: &[RunGuard<'_>],
        unposted: &[RowKey],
    ) -> Result<(), StoreError> {
        self.insert_run_entries(postings, true).await?;
        self.write_run_rows(balances, guards, unposted).await
    }

    /// The ledger entries of a run, each linked after the one before it in
    /// its chain (`store::chain`), with their messages if `messages`.
    pub(in crate::store) async fn insert_run_entries(
        &mut self,
        postings: &[RunPosting<'_>],
        messages: bool,
    ) -> Result<(), StoreError> {
        let links = self.link_entries(postings).await?;
        if let TxConn::Postgres(tx) = &mut self.conn {
            // The entries, and their messages in the same statement.
            let posted = self.outbox.posted().clone();
            let messages = messages && !posted.names.is_empty() && !postings.is_empty();
            let destinations = (posted.names.as_slice(), posted.ordered.as_slice());
            run_pg::insert_postings(tx, postings, &links, messages.then_some(destinations)).await?;
            self.queued |= messages;
        }
        let sqlite = matches!(self.conn, TxConn::Sqlite(..));
        let per = per_statement(LEDGER_BINDS);
        for chunk in postings
            .chunks(per)
            .zip(links.chunks(per))
            .filter(|_| sqlite)
        {
            on_tx!(self, conn => {
                let mut query = QueryBuilder::new(LEDGER_COLUMNS);
                query.push_values(chunk.0.iter().zip(chunk.1), |mut row, (posting, links)| {
                    let entry = &posting.entry;
                    row.push_bind(entry.intent_id)
                        .push_bind(entry.source)
                        .push_bind(entry.event_id)
                        .push_bind(entry.account_id)
                        .push_bind(entry.currency)
                        .push_bind(entry.amount_minor)
                        .push_bind(entry.balance_after_minor)
                        .push_bind(entry.object_id)
                        .push_bind(entry.operator_applied)
                        .push_bind(entry.created_at)
                        .push_bind(entry.credits_payment)
                        .push_bind(entry.account_seq)
                        .push_bind(&links.prev[..])
                        .push_bind(&links.own[..]);
                });
                query.build().persistent(false).execute(&mut *conn).await.map(drop)
            })?;
        }
        if sqlite && messages {
            // PostgreSQL wrote them with the entries, above.
            self.enqueue_run(postings).await?;
        }
        Ok(())
    }

    /// `write_run`'s balances and guards as the run leaves them, and the
    /// balance rows `unposted` removed.
    async fn write_run_rows(
        &mut self,
        balances: &[RunBalance<'_>],
        guards: &[RunGuard<'_>],
        unposted: &[RowKey],
    ) -> Result<(), StoreError> {
        for chunk in balances.chunks(per_statement(5)) {
            on_tx!(self, conn => {
                let mut query = QueryBuilder::new(
                    "insert into balances (account_id, currency, balance_minor, updated_at, \
                     postings) ",
                );
                query.push_values(chunk, |mut row, balance| {
                    row.push_bind(balance.account_id)
                        .push_bind(balance.currency)
                        .push_bind(balance.balance_minor)
                        .push_bind(balance.updated_at)
                        .push_bind(balance.postings);
                });
                query.push(
                    " on conflict (account_id, currency) do update \
                     set balance_minor = excluded.balance_minor, \
                     updated_at = excluded.updated_at, postings = excluded.postings",
                );
                query.build().persistent(false).execute(&mut *conn).await.map(drop)
            })?;
        }
        for chunk in guards.chunks(per_statement(4)) {
            on_tx!(self, conn => {
                let mut query = QueryBuilder::new(
                    "insert into sequence_guards (source, account_id, last_sequence, updated_at) ",
                );
                query.push_values(chunk, |mut row, guard| {
                    row.push_bind(guard.source)
                        .push_bind(guard.account_id)
                        .push_bind(guard.last_sequence)
                        .push_bind(guard.updated_at);
                });
                // A run only raises a guard it read under lock; the
                // condition (as `ADVANCE_GUARD`'s) keeps one from going
                // down whatever a run got wrong.
                query.push(
                    " on conflict (source, account_id) do update \
                     set last_sequence = excluded.last_sequence, \
                     updated_at = excluded.updated_at \
                     where sequence_guards.last_sequence <= excluded.last_sequence",
                );
                query.build().persistent(false).execute(&mut *conn).await.map(drop)
            })?;
        }
        for chunk in unposted.chunks(per_statement(2)) {
            on_tx!(self, conn => {
                let mut query = QueryBuilder::new(
                    "delete from balances where postings = 0 and (account_id, currency) in (",
                );
                query.push_values(chunk, |mut row, (account, currency)| {
                    row.push_bind(account.as_str()).push_bind(currency.as_str());
                });
                query.push(")");
                query.build().persistent(false).execute(&mut *conn).await.map(drop)
            })?;
        }
        Ok(())
    }

    /// Marks the intents of `late` late, each with its reason (their
    /// status is `applied` already).
    pub async fn mark_run_late(&mut self, late: &[RunLate]) -> Result<(), StoreError> {
        if late.is_empty() {
            return Ok(());
        }
        if let TxConn::Postgres(tx) = &mut self.conn {
            let ids = late.iter().map(|one| one.intent_id).collect();
            let reasons = late.iter().map(|one| one.reason.as_str()).collect();
            return Ok(run_pg::mark_late(tx, ids, reasons).await?);
        }
        for chunk in late.chunks(per_statement(2)) {
            on_tx!(self, conn => {
                // SQLite names a `values` list's columns column1, column2.
                let mut query =
                    QueryBuilder::new("update intents set late = true, reason = v.column2 from (");
                query.push_values(chunk, |mut row, one| {
                    row.push_bind(one.intent_id).push_bind(one.reason.as_str());
                });
                query.push(") as v where intents.intent_id = v.column1");
                query.build().persistent(false).execute(&mut *conn).await.map(drop)
            })?;
        }
        Ok(())
    }

    /// SQLite: the run's `ledger.posted` messages, one per posting and
    /// destination that takes them, `ordered` where the destination is.
    async fn enqueue_run(&mut self, postings: &[RunPosting<'_>]) -> Result<(), StoreError> {
        let posted = self.outbox().posted().clone();
        if posted.names.is_empty() || postings.is_empty() {
            return Ok(());
        }
        let messages: Vec<(&RunPosting<'_>, &String, String)> = postings
            .iter()
            .flat_map(|posting| {
                let entry = &posting.entry;
                let id = MessageType::LedgerPosted.message_id(entry.source, entry.event_id);
                posted
                    .names
                    .iter()
                    .map(move |destination| (posting, destination, id.clone()))
            })
            .collect();
        for chunk in messages.chunks(per_statement(OUTBOX_BINDS)) {
            on_tx!(self, conn => {
                let mut query = QueryBuilder::new(OUTBOX_COLUMNS);
                query.push_values(chunk, |mut row, (posting, destination, message_id)| {
                    let entry = &posting.entry;
                    row.push_bind(destination.as_str())
                        .push_bind(message_id.as_str())
                        .push("'ledger.posted'")
                        .push_bind(entry.intent_id)
                        .push_bind(entry.source)
                        .push_bind(entry.event_id)
                        .push("'applied'")
                        .push_bind(entry.account_id)
                        .push_bind(entry.currency)
                        .push_bind(entry.amount_minor)
                        .push_bind(entry.balance_after_minor)
                        .push_bind(entry.account_seq)
                        .push_bind(entry.object_id)
                        .push_bind(posting.occurred_at)
                        .push_bind(entry.created_at)
                        .push_bind(entry.operator_applied)
                        .push("'pending'")
                        .push("0")
                        .push("0")
                        .push_bind(entry.created_at)
                        .push_bind(posted.ordered.contains(destination));
                });
                query.push(" on conflict (intent_id, message_type, destination) do nothing");
                query.build().persistent(false).execute(&mut *conn).await.map(drop)
            })?;
        }
        self.queued = true;
        Ok(())
    }
}
