//! The turn to write SQLite, taken in arrival order in-process. SQLite lets one
//! connection write at a time; pooled connections that collide on
//! `BEGIN IMMEDIATE` wait in SQLite's busy handler, which sleeps for up to
//! 100 ms between tries and serves no one in order: under load a few
//! writers wait far longer than the rest (the p99 in BENCHMARKS.md). Taking
//! a turn here first queues writers in arrival order (tokio's semaphore is
//! fair) and wakes each the moment the previous one commits. The busy
//! timeout stays as the bound across processes (a second instance, or
//! `hookledger backup`, on the same file).
//!
//! Every write transaction of the process runs on one connection of its
//! own, kept open, so that settings meant for the writer alone apply to
//! every write: no checkpoints of its own ([`super::checkpoint`] runs
//! them, on a connection of its own), statement journals in memory, and a
//! larger page cache ([`WRITER_CACHE_KIB`]). SQLite keeps a connection's
//! cached pages for as long as no other connection has written the file,
//! so the pages a group touches stay cached from one transaction to the
//! next; by itself that moved the rate little (BENCHMARKS.md, 2026-11-29
//! second session): the other two settings are what it is for.

use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::StoreError;
use super::checkpoint::{self, Checkpoints};

/// The writing connection's page cache, in KiB (SQLite's default is
/// 2,000 KiB per connection). Bounds what it may hold, not what it holds:
/// the pages a process writes, read once.
pub const WRITER_CACHE_KIB: u32 = 16 * 1024;

#[derive(Debug, Clone)]
pub struct WriteTurns {
    turn: Arc<Semaphore>,
    /// How long a writer waits for its turn: the busy timeout, as before.
    wait: Duration,
    /// The one connection that writes, taken with the turn.
    writer: SqlitePool,
    checkpoints: Checkpoints,
}

/// The turn to write, held until the write ends (commit, rollback or drop).
#[derive(Debug)]
pub struct WriteTurn {
    _turn: OwnedSemaphorePermit,
    checkpoints: Checkpoints,
}

impl WriteTurn {
    /// The transaction committed: its pages are for the checkpointer.
    pub fn committed(&self) {
        self.checkpoints.committed();
    }
}

impl WriteTurns {
    /// The turns; the writing connection, opened lazily with `options`
    /// (the readers' own, with the larger cache and no checkpoints of its
    /// own) and never closed for idleness or age, so that its cache stays
    /// warm; and the checkpointer.
    pub fn new(wait: Duration, options: &SqliteConnectOptions) -> Self {
        Self::with_checkpoints(wait, options, checkpoint::TIMING)
    }

    fn with_checkpoints(
        wait: Duration,
        options: &SqliteConnectOptions,
        timing: checkpoint::Timing,
    ) -> Self {
        let turn = Arc::new(Semaphore::new(1));
        let checkpoints = checkpoint::spawn(options.clone(), turn.clone(), timing);
        let options = options
            .clone()
            .pragma("cache_size", format!("-{WRITER_CACHE_KIB}"))
            .pragma("wal_autocheckpoint", "0")
            // A multi-row statement inside a transaction keeps the pages
            // it changes in a statement journal (to undo that statement
            // alone): in memory, not a temporary file written page by
            // page beside the log.
            .pragma("temp_store", "memory");
        // No ping before each use: sqlx pings a connection as it returns.
        let writer = SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(1)
            .acquire_timeout(wait)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options);
        Self {
            turn,
            wait,
            writer,
            checkpoints,
        }
    }

    /// Takes the turn, then begins `begin immediate` on the writing
    /// connection (free by then: only a turn's holder uses it), after the
    /// checkpoint's last step if it is due.
    pub async fn begin(&self) -> Result<(Transaction<'static, Sqlite>, WriteTurn), StoreError> {
        let turn = self.turn().await?;
        self.checkpoints.finish(&self.writer).await;
        let tx = self.writer.begin_with("begin immediate").await?;
        Ok((tx, turn))
    }

    /// Closes the writing connection (at shutdown, with the readers').
    pub async fn close(&self) {
        self.writer.close().await;
    }

    /// Waits for the turn to write; a wait beyond the busy timeout is the
    /// same transient failure as SQLite's BUSY (503, retried by providers).
    async fn turn(&self) -> Result<WriteTurn, StoreError> {
        match tokio::time::timeout(self.wait, self.turn.clone().acquire_owned()).await {
            Ok(Ok(turn)) => Ok(WriteTurn {
                _turn: turn,
                checkpoints: self.checkpoints.clone(),
            }),
            Ok(Err(_closed)) => Err(StoreError::Unavailable(sqlx::Error::PoolClosed)),
            Err(_elapsed) => Err(StoreError::Unavailable(sqlx::Error::PoolTimedOut)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn turns() -> WriteTurns {
        let options = SqliteConnectOptions::from_str("sqlite::memory:").unwrap();
        WriteTurns::new(Duration::from_secs(5), &options)
    }

    #[tokio::test(start_paused = true)]
    async fn writers_take_turns_in_arrival_order() {
        let writer = turns();
        let first = writer.turn().await.unwrap();
        let (order, mut seen) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..3 {
            let (writer, order) = (writer.clone(), order.clone());
            tokio::spawn(async move {
                let _turn = writer.turn().await.unwrap();
                order.send(n).unwrap();
            });
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            seen.try_recv().is_err(),
            "a writer went while the turn was held"
        );
        drop(first);
        for n in 0..3 {
            assert_eq!(seen.recv().await.unwrap(), n);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_beyond_the_busy_timeout_is_transient() {
        let writer = turns();
        let _held = writer.turn().await.unwrap();
        let error = writer.turn().await.unwrap_err();
        assert!(error.is_transient(), "{error}");
    }
}

#[cfg(test)]
mod writer_tests {
    use std::str::FromStr;

    use sqlx::sqlite::SqliteJournalMode;
    use sqlx::{ConnectOptions, Connection};

    use super::*;

    /// Rows in table `t` of the database file alone, as a copy of it
    /// without its log shows them (none if the table is not there yet).
    async fn rows_in_file(database: &std::path::Path) -> i64 {
        let copy = database.with_file_name("copy.db");
        std::fs::copy(database, &copy).unwrap();
        let mut reader = SqliteConnectOptions::new()
            .filename(&copy)
            .connect()
            .await
            .unwrap();
        let rows = sqlx::query_scalar("select count(*) from t")
            .fetch_one(&mut reader)
            .await
            .unwrap_or(0);
        reader.close().await.unwrap();
        std::fs::remove_file(&copy).unwrap();
        rows
    }

    async fn until(mut done: impl AsyncFnMut() -> bool) -> bool {
        for _ in 0..100 {
            if done().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// The writer runs no checkpoints; the checkpointer copies the log
    /// into the file while commits come (its last pages by the writer,
    /// before its next transaction), and truncates it once they stop
    /// writing pages.
    #[tokio::test]
    async fn the_checkpointer_copies_the_log_and_truncates_it_when_idle() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("w.db");
        let options = SqliteConnectOptions::new()
            .filename(&database)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let timing = checkpoint::Timing {
            pause: Duration::from_millis(50),
            idle: Duration::from_millis(500),
        };
        let turns = WriteTurns::with_checkpoints(Duration::from_secs(5), &options, timing);
        // Makes the table, then adds row `n`.
        let write = async |n: i64| {
            let (mut tx, turn) = turns.begin().await.unwrap();
            sqlx::query("create table if not exists t (n integer)")
                .execute(&mut *tx)
                .await
                .unwrap();
            sqlx::query("insert into t values ($1)")
                .bind(n)
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            turn.committed();
        };
        for n in 0..20 {
            write(n).await;
        }
        let wal = dir.path().join("w.db-wal");
        assert!(std::fs::metadata(&wal).unwrap().len() > 0, "nothing logged");
        // Commits go on: the file catches up with them.
        let mut more = 20;
        let caught_up = until(async || {
            write(more).await;
            more += 1;
            rows_in_file(&database).await >= 20
        })
        .await;
        assert!(caught_up, "the file never held the rows");
        // Commits go on that write nothing (as the relays' claims with
        // nothing to send): the log is truncated all the same.
        let truncated = until(async || {
            let (tx, turn) = turns.begin().await.unwrap();
            tx.commit().await.unwrap();
            turn.committed();
            std::fs::metadata(&wal).unwrap().len() == 0
        })
        .await;
        assert!(truncated, "the log was not truncated when idle");
        assert_eq!(rows_in_file(&database).await, more);
        turns.close().await;
    }

    /// Every write transaction runs on the one writing connection, with
    /// its larger cache: one connection's state seen from two
    /// transactions, and the cache asked of the transaction itself.
    #[tokio::test]
    async fn every_write_runs_on_the_one_connection_with_its_cache() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteConnectOptions::from_str("sqlite:")
            .unwrap()
            .filename(dir.path().join("w.db"))
            .create_if_missing(true);
        let turns = WriteTurns::new(Duration::from_secs(5), &options);
        let (mut tx, turn) = turns.begin().await.unwrap();
        let cache: i64 = sqlx::query_scalar("pragma cache_size")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!(cache, -i64::from(WRITER_CACHE_KIB));
        // A temporary table is private to the connection that made it.
        sqlx::query("create temp table mark (n integer)")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        drop(turn);
        let (mut tx, _turn) = turns.begin().await.unwrap();
        let marks: i64 = sqlx::query_scalar("select count(*) from temp.mark")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!(marks, 0, "the second write ran on another connection");
        tx.rollback().await.unwrap();
        turns.close().await;
    }
}
