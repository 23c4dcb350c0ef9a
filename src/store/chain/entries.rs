//! Linking ledger entries as they are written: each entry's previous link
//! is the link of the entry before it in its chain (its account and
//! currency, by `account_seq`), which the transaction holds the balance
//! row of. Whoever writes entry `n` has locked the balance row whose
//! `postings` reached `n` (the posting's own upsert, or a run's lock of
//! the row), so no one else writes entry `n - 1` or `n` meanwhile, on
//! either backend (SQLite runs one writer at a time).
//!
//! The link of the entry before is read with the balance row (its
//! `postings`-th entry, by the unique key) and kept in the transaction
//! (`WriteTx::chains`), so a run's entries are linked in memory. An entry
//! written without a link (by the version before chains, during an
//! upgrade, or before the upgrade) is linked first, by the writer of the
//! next one (`link_unlinked`) or by the backfill (`chain::backfill`),
//! with `chained_at` set: `hookledger verify` tells those apart.

use chrono::{DateTime, Utc};

use super::hash::{EntryContent, EntryLinks, GENESIS, Link, entry_link, stored};
use crate::store::write::{NewLedgerEntry, RowKey, RunPosting, WriteTx, on_tx};
use crate::store::{LedgerEntryRow, StoreError};

/// A stored entry with what else its link covers, and its links.
#[derive(Debug, sqlx::FromRow)]
pub(in crate::store) struct ChainEntryRow {
    #[sqlx(flatten)]
    pub entry: LedgerEntryRow,
    pub intent_id: i64,
    pub credits_payment: Option<i64>,
    pub prev_hash: Option<Vec<u8>>,
    pub entry_hash: Option<Vec<u8>>,
    /// Linked after it was written (`chained_at` is set).
    pub linked_late: bool,
}

/// The columns of `ChainEntryRow`, as every statement reading it selects
/// them (of the table named `$t`, where another has such columns too).
macro_rules! chain_entry_columns {
    () => {
        chain_entry_columns!("ledger_entries")
    };
    ($t:literal) => {
        concat!(
            $t,
            ".entry_id, ",
            $t,
            ".account_id, ",
            $t,
            ".currency, ",
            $t,
            ".account_seq, ",
            $t,
            ".amount_minor, ",
            $t,
            ".balance_after_minor, ",
            $t,
            ".source, ",
            $t,
            ".event_id, ",
            $t,
            ".intent_id, ",
            $t,
            ".created_at, ",
            $t,
            ".object_id, ",
            $t,
            ".operator_applied, ",
            $t,
            ".credits_payment, ",
            $t,
            ".prev_hash, ",
            $t,
            ".entry_hash, (",
            $t,
            ".chained_at is not null) as linked_late"
        )
    };
}
pub(in crate::store) use chain_entry_columns;

impl ChainEntryRow {
    pub fn content(&self) -> EntryContent<'_> {
        let entry = &self.entry;
        EntryContent {
            account_id: &entry.account_id,
            currency: &entry.currency,
            account_seq: entry.account_seq,
            amount_minor: entry.amount_minor,
            balance_after_minor: entry.balance_after_minor,
            source: &entry.source,
            event_id: &entry.event_id,
            intent_id: self.intent_id,
            created_at: entry.created_at,
            object_id: entry.object_id.as_deref(),
            operator_applied: entry.operator_applied,
            credits_payment: self.credits_payment,
        }
    }
}

/// What an entry about to be written is linked over.
pub(in crate::store) fn content_of<'a>(entry: &'a NewLedgerEntry<'a>) -> EntryContent<'a> {
    EntryContent {
        account_id: entry.account_id,
        currency: entry.currency,
        account_seq: entry.account_seq,
        amount_minor: entry.amount_minor,
        balance_after_minor: entry.balance_after_minor,
        source: entry.source,
        event_id: entry.event_id,
        intent_id: entry.intent_id,
        created_at: entry.created_at,
        object_id: entry.object_id,
        operator_applied: entry.operator_applied,
        credits_payment: entry.credits_payment,
    }
}

/// The last linked entry of a chain at or below `$3`.
const LAST_LINKED: &str = "
select account_seq, entry_hash from ledger_entries
where account_id = $1 and currency = $2 and account_seq <= $3 and entry_hash is not null
order by account_seq desc
limit 1";

/// The entries of a chain after `$3`, up to `$4`, in order.
const ENTRIES_BETWEEN: &str = concat!(
    "select ",
    chain_entry_columns!(),
    " from ledger_entries
where account_id = $1 and currency = $2 and account_seq > $3 and account_seq <= $4
order by account_seq
limit $5"
);

/// Links an entry written without one. `entry_hash is null`: a link once
/// written is never changed, whatever this writer computed (a wrong one
/// shows in `verify`, it is not papered over).
const SET_LINKS: &str = "
update ledger_entries set prev_hash = $2, entry_hash = $3, chained_at = $4
where entry_id = $1 and entry_hash is null";

/// Entries linked after they were written, per statement batch.
pub(in crate::store) const LINK_BATCH: i64 = 5_000;

impl WriteTx {
    /// Notes the head of a chain read under its balance row's lock: its
    /// last entry's number and stored link.
    pub(in crate::store) fn saw_head(&mut self, key: RowKey, seq: i64, link: Option<Vec<u8>>) {
        self.chains.insert(key, (seq, stored(link.as_deref())));
    }

    /// The links of `entry`, the next entry of its chain, which the caller
    /// then writes with them (the transaction holds its balance row).
    pub(in crate::store) async fn link_entry(
        &mut self,
        entry: &NewLedgerEntry<'_>,
    ) -> Result<EntryLinks, StoreError> {
        let before = entry.account_seq - 1;
        let key = (entry.account_id.to_owned(), entry.currency.to_owned());
        let prev = match self.chains.get(&key) {
            _ if before <= 0 => GENESIS,
            Some(&(seq, Some(link))) if seq == before => link,
            _ => {
                self.link_unlinked(entry.account_id, entry.currency, before, entry.created_at)
                    .await?
            }
        };
        let own = entry_link(&content_of(entry), &prev);
        self.chains.insert(key, (entry.account_seq, Some(own)));
        Ok(EntryLinks { prev, own })
    }

    /// The links of a run's entries, in their order (each chain's entries
    /// come in `account_seq` order).
    pub(in crate::store) async fn link_entries(
        &mut self,
        postings: &[RunPosting<'_>],
    ) -> Result<Vec<EntryLinks>, StoreError> {
        let mut links = Vec::with_capacity(postings.len());
        for posting in postings {
            links.push(self.link_entry(&posting.entry).await?);
        }
        Ok(links)
    }

    /// The link of entry `upto` of a chain, linking first the entries up
    /// to it that were written without one (from the last linked entry
    /// on), each marked `chained_at` `now`. Entries linked over a gap in
    /// the numbers (a deleted entry) are linked to the entry before the
    /// gap: `verify` reports the gap.
    pub(in crate::store) async fn link_unlinked(
        &mut self,
        account_id: &str,
        currency: &str,
        upto: i64,
        now: DateTime<Utc>,
    ) -> Result<Link, StoreError> {
        let last: Option<(i64, Vec<u8>)> = on_tx!(self, conn => sqlx::query_as(LAST_LINKED)
            .bind(account_id)
            .bind(currency)
            .bind(upto)
            .fetch_optional(conn)
            .await)?;
        let (mut seq, mut link) = match last {
            Some((seq, bytes)) => (seq, stored(Some(&bytes)).unwrap_or(GENESIS)),
            None => (0, GENESIS),
        };
        while seq < upto {
            let rows: Vec<ChainEntryRow> = on_tx!(self, conn => sqlx::query_as(ENTRIES_BETWEEN)
                .bind(account_id)
                .bind(currency)
                .bind(seq)
                .bind(upto)
                .bind(LINK_BATCH)
                .fetch_all(conn)
                .await)?;
            let Some(last) = rows.last() else {
                break;
            };
            seq = last.entry.account_seq;
            for row in &rows {
                let own = entry_link(&row.content(), &link);
                on_tx!(self, conn => sqlx::query(SET_LINKS)
                    .bind(row.entry.entry_id)
                    .bind(&link[..])
                    .bind(&own[..])
                    .bind(now)
                    .execute(conn)
                    .await
                    .map(drop))?;
                link = own;
            }
        }
        Ok(link)
    }
}
