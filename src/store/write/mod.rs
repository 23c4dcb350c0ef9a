//! The write transaction and its primitives. Each primitive is one statement,
//! one round trip, through sqlx's per-connection prepared-statement cache.
//!
//! Concurrency model, relied on by every statement below:
//! - SQLite: every write transaction starts with `BEGIN IMMEDIATE`, which takes
//!   the database's single write lock up front; writers queue on the busy
//!   timeout instead of failing mid-transaction, and run strictly one at a time.
//! - PostgreSQL: READ COMMITTED. Every check-and-write is ONE statement whose
//!   conflict path locks the row it tests (`insert ... on conflict do update
//!   ... where`, or `update ... where status = ...`), and PostgreSQL re-checks
//!   the condition against the latest committed row version after waiting
//!   for that lock. No statement reads a value that a later one writes back.
//!
//! Lock order, per event, is intent -> payment (see `payments`) -> sequence
//! guard -> balances -> the parked or unmatched intents a release settles ->
//! ledger. A transaction that posts several balances of one account (a
//! contiguous release) locks them up front in currency order. Nothing that
//! holds only an intent's lock (a dismiss, a redelivery) waits for anything
//! else; a batch of redelivery counts (`redelivery`) locks many intents but
//! only rows no one holds, so it never waits. So two single-event deliveries never wait on each other in a cycle.
//! A batch (Adyen), and a group of deliveries committed together
//! (`ingest::group_commit`), is several events in one transaction, each
//! taking its row locks in this order after the previous one's; two such
//! transactions naming the same accounts or events in opposite orders (two
//! instances' groups) would wait for each other's rows. So every
//! transaction that writes several of these rows first takes the write
//! keys of everything it may touch (accounts, events, payments), in one
//! global order (`keys`): of two that share anything, the second waits at
//! its first key in common, holding no row yet. Two such transactions
//! never deadlock; a 40P01 left to PostgreSQL's detector comes from the
//! cases `keys` lists (a writer outside the order, instances that disagree
//! on the config), and the group writer runs its group again.

use std::collections::HashMap;

use sqlx::{Sqlite, Transaction};

use super::chain::hash::Head;
use super::write_turn::WriteTurn;
use super::{Outbox, Store, StoreError};
use pg_tx::PgTx;

/// One write transaction, and the outbox it may write messages to.
pub struct WriteTx {
    pub(in crate::store) conn: TxConn,
    outbox: Outbox,
    /// Messages were written: the relays are woken once it commits.
    pub(in crate::store) queued: bool,
    /// The heads of the ledger chains this transaction read or wrote
    /// (`store::chain`), by balance (account, currency).
    pub(in crate::store) chains: HashMap<(String, String), Head>,
}

pub(in crate::store) enum TxConn {
    /// With the turn to write, released when the transaction ends.
    Sqlite(Transaction<'static, Sqlite>, WriteTurn),
    /// Closes its connection when dropped unfinished (see `pg_tx`).
    Postgres(PgTx),
}

/// Runs `$body` with `$conn` bound to the concrete connection of either
/// backend's transaction.
macro_rules! on_tx {
    ($tx:expr, $conn:ident => $body:expr) => {
        match &mut $tx.conn {
            $crate::store::write::TxConn::Sqlite(tx, _) => {
                let $conn = &mut **tx;
                $body
            }
            $crate::store::write::TxConn::Postgres(tx) => {
                let $conn = &mut **tx;
                $body
            }
        }
    };
}

pub(in crate::store) use on_tx;

mod audit;
mod balances;
mod intent;
mod keys;
mod ordering;
mod payments;
mod pg_tx;
mod posting;
mod redelivery;
mod rewrite;
mod run;
mod run_payments;
mod run_pg;
mod run_reversals;
mod run_streams;
mod scope;

pub use audit::NewAudit;
/// For the ceiling's pgbench script (`store::ceiling`).
pub(in crate::store) use balances::upsert_balance;
/// For the ceiling's pgbench script (`store::ceiling`).
pub(in crate::store) use intent::INSERT_INTENT;
pub use intent::{Claimed, IntentUpsert, NewIntent};
pub use keys::WriteKeys;
pub use ordering::Parked;
/// For the ceiling's pgbench script (`store::ceiling`).
pub(in crate::store) use ordering::{ADVANCE_GUARD, LOCK_GUARD};
pub use payments::{MatchedRow, PaymentCredit, PaymentRow, UnmatchedRow};
pub use posting::{NewLedgerEntry, NewPosting, RunPosting};
pub use redelivery::{Redelivered, RedeliveryCount, received_at_text};
pub use rewrite::ReplayedInto;
pub use run::{RowKey, RunBalance, RunBalances, RunGuard, RunLate};
pub use run_payments::{PaymentKey, RunCredit, RunPayment};
/// For the ceiling's set-based pgbench script (`store::ceiling`).
pub(in crate::store) use run_pg::{INSERT_INTENTS, LOCK_BALANCES, LOCK_GUARDS};
pub use run_reversals::{RunMatch, RunReversed};
pub use scope::Rescoped;

impl Store {
    pub async fn begin(&self) -> Result<WriteTx, StoreError> {
        let conn = match self {
            Store::Sqlite(_, writer, _) => {
                // The turn first: the writing connection is then free,
                // and the write lock free in this process.
                let (tx, turn) = writer.begin().await?;
                TxConn::Sqlite(tx, turn)
            }
            Store::Postgres(pool, ..) => TxConn::Postgres(PgTx::begin(pool).await?),
        };
        Ok(WriteTx {
            conn,
            outbox: self.outbox().clone(),
            queued: false,
            chains: HashMap::new(),
        })
    }
}

impl WriteTx {
    /// Ends the transaction writing nothing (dropping it does the same, but
    /// an explicit rollback frees the connection's lock at once).
    pub async fn rollback(self) -> Result<(), StoreError> {
        match self.conn {
            TxConn::Sqlite(tx, _turn) => tx.rollback().await?,
            TxConn::Postgres(tx) => tx.rollback().await?,
        }
        Ok(())
    }

    /// Commits; if the transaction wrote messages, wakes this process's
    /// relays (and its notifier, which wakes the other instances'; see
    /// `store::outbox::listen`).
    pub async fn commit(self) -> Result<(), StoreError> {
        match self.conn {
            TxConn::Sqlite(tx, turn) => {
                tx.commit().await?;
                turn.committed();
            }
            TxConn::Postgres(tx) => tx.commit().await.map_err(|error| {
                match StoreError::from(error) {
                    // A refusal (a serialization failure, a constraint
                    // checked at commit): rolled back.
                    refused if !refused.is_transient() || refused.lost_to_another_transaction() => {
                        refused
                    }
                    // The server may have committed before the answer was
                    // lost (the connection is closed by now).
                    lost => StoreError::OutcomeUnknown(format!(
                        "the answer to COMMIT was lost ({lost})"
                    )),
                }
            })?,
        }
        if self.queued {
            self.outbox.committed();
        }
        Ok(())
    }

    /// The outbox's destinations, for the primitives that write messages.
    pub(in crate::store) fn outbox(&self) -> &Outbox {
        &self.outbox
    }
}
