//! Linking what was written without a link: every entry and audit row
//! stored before the upgrade that added chains, and those a version before
//! it writes while both run on one database. `hookledger migrate` and
//! `serve`'s start-up run it, and the periodic check after a walk that
//! found an unlinked row; each writer that finds the entry before its own
//! unlinked links that chain itself (`entries::link_unlinked`). Resumable: each
//! transaction links at most `LINK_BATCH` entries of one chain, and what
//! it linked stays linked; run again, it starts where the chains stop.

use chrono::{DateTime, Utc};

use super::entries::LINK_BATCH;
use crate::store::write::{TxConn, WriteTx};
use crate::store::{Store, StoreError, on_pool};

/// The chains with an entry written without a link, and the number of
/// their first such entry. One pass over the ledger.
const UNLINKED_CHAINS: &str = "
select account_id, currency, min(account_seq) from ledger_entries
where entry_hash is null
group by account_id, currency
order by account_id, currency";

/// The chain's end, its balance row locked (PostgreSQL) after the
/// account's write key: no entry of it is written meanwhile.
const LOCK_END_PG: &str =
    "select postings from balances where account_id = $1 and currency = $2 for update";
const READ_END_SQLITE: &str =
    "select postings from balances where account_id = $1 and currency = $2";

/// What the backfill linked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backfilled {
    pub chains: u64,
    pub transactions: u64,
}

impl Store {
    /// Links every entry and audit row written without a link, each marked
    /// `chained_at` `now`.
    pub async fn link_unlinked(&self, now: DateTime<Utc>) -> Result<Backfilled, StoreError> {
        let mut done = Backfilled::default();
        let chains: Vec<(String, String, i64)> = on_pool!(self, pool => sqlx::query_as(UNLINKED_CHAINS)
            .fetch_all(pool)
            .await)?;
        for (account, currency, first) in chains {
            done.chains += 1;
            let mut from = first;
            loop {
                let mut tx = self.begin().await?;
                let end = tx.lock_chain_end(&account, &currency).await?;
                let upto = end.min(from + LINK_BATCH - 1);
                if upto >= from {
                    tx.link_unlinked(&account, &currency, upto, now).await?;
                }
                tx.commit().await?;
                done.transactions += 1;
                if upto >= end {
                    break;
                }
                from = upto + 1;
            }
        }
        let mut tx = self.begin().await?;
        tx.lock_audit_head(now, true).await?;
        tx.commit().await?;
        Ok(done)
    }
}

impl WriteTx {
    /// The number of a chain's last entry, with the account's key and its
    /// balance row held.
    async fn lock_chain_end(&mut self, account: &str, currency: &str) -> Result<i64, StoreError> {
        self.lock_account_key(account).await?;
        let end: Option<(i64,)> = match &mut self.conn {
            TxConn::Postgres(tx) => {
                sqlx::query_as(LOCK_END_PG)
                    .bind(account)
                    .bind(currency)
                    .fetch_optional(&mut **tx)
                    .await?
            }
            TxConn::Sqlite(tx, _) => {
                sqlx::query_as(READ_END_SQLITE)
                    .bind(account)
                    .bind(currency)
                    .fetch_optional(&mut **tx)
                    .await?
            }
        };
        Ok(end.map_or(0, |(postings,)| postings))
    }
}
