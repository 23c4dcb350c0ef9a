//! The database: the only module with SQL. [`Store`] is an enum over a SQLite
//! and a PostgreSQL pool; every statement is one SQL string shared by both
//! backends, stamped out for each by the `on_*!` macros below so that it is
//! type-checked against both.

pub mod ceiling;
pub mod ceiling_group;
pub mod chain;
mod check;
mod checkpoint;
mod error;
mod fill;
mod gaps;
mod gauges;
mod guards;
mod open;
mod outbox;
mod pg_pool;
#[cfg(test)]
mod plans;
mod read;
mod read_only;
mod reconcile;
mod recycle;
mod retention;
mod roles;
mod rows;
mod schema;
mod write;
mod write_turn;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};

pub use crate::domain::{HELD_STATUSES, HeldCount, OutboxStats, PoolUsage, Replication};
pub use check::Violation;
pub use error::StoreError;
pub use fill::FillShape;
pub use outbox::{
    AnchorAttempt, AnchorMessage, Attempted, Blocking, ClockReading, Holding, Moved, Outbox,
    OutboxEntry, OutboxRow, Recorded, Replay, Tidied,
};
pub use read::EventFilter;
pub use reconcile::{Lease, ReconcileRun, RunEnd};
pub use rows::{
    AuditRow, BalanceRow, EventDetailRow, EventRow, GapRow, HeldAccountRow, LedgerEntryRow,
};
pub use schema::{Newer, SchemaState};
pub use write::{
    Claimed, IntentUpsert, MatchedRow, NewAudit, NewIntent, NewLedgerEntry, NewPosting, Parked,
    PaymentCredit, PaymentKey, PaymentRow, Redelivered, RedeliveryCount, ReplayedInto, Rescoped,
    RowKey, RunBalance, RunBalances, RunCredit, RunGuard, RunLate, RunMatch, RunPayment,
    RunPosting, RunReversed, UnmatchedRow, WriteKeys, WriteTx, received_at_text,
};

/// Runs `$body` with `$conn` bound to the concrete pool of either backend.
macro_rules! on_pool {
    ($store:expr, $conn:ident => $body:expr) => {
        match $store {
            $crate::store::Store::Sqlite($conn, ..) => $body,
            $crate::store::Store::Postgres($conn, ..) => $body,
        }
    };
}
pub(crate) use on_pool;

#[derive(Debug, Clone)]
pub enum Store {
    /// The pool (readers, and writers in turn), the turn to write, and
    /// where postings are told to other systems.
    Sqlite(SqlitePool, write_turn::WriteTurns, Outbox),
    Postgres(PgPool, Outbox, WriteBound),
}

/// PostgreSQL: how long one group of deliveries may take from its first
/// statement to its COMMIT's answer, client side (`database.
/// statement_timeout_ms`). The server bounds each statement itself, but
/// not a COMMIT waiting for a synchronous standby, nor anything on a
/// connection whose server went silent (sqlx sets no TCP keepalive).
#[derive(Debug, Clone, Copy)]
pub struct WriteBound(pub Duration);

#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// How long a request waits for a pooled connection.
    pub acquire_timeout: Duration,
    /// SQLite: how long a writer waits for the write lock before BUSY (503).
    pub busy_timeout: Duration,
    /// PostgreSQL: server-side bound on one statement (then 503). Providers
    /// give up on a delivery after 10-30 s anyway.
    pub statement_timeout: Duration,
}

impl Store {
    /// Opens the database named by `url`: `sqlite:` (file created if missing
    /// in an existing folder, WAL) or `postgres:`/`postgresql:`. Any other
    /// scheme is refused. Errors say what was tried and what failed.
    pub async fn connect(url: &str, settings: &PoolSettings) -> Result<Self, StoreError> {
        let connect_error = |e: sqlx::Error| StoreError::Connect(e.to_string());
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(connect_error)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                // FULL: a commit we answered 200 for must survive a power cut,
                // or the provider never redelivers and the credit is lost.
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(settings.busy_timeout)
                .foreign_keys(true);
            let path = options.get_filename().to_path_buf();
            if let Some(problem) = open::sqlite_problem(&path) {
                return Err(StoreError::Connect(format!(
                    "SQLite at {} (database_url): {problem}",
                    path.display()
                )));
            }
            // The first connection switches a new file to WAL, which needs
            // the file to itself: instances starting at once take turns.
            let _lock = start_lock(options.get_filename()).await?;
            let pool = SqlitePoolOptions::new()
                .max_connections(settings.max_connections)
                .acquire_timeout(settings.acquire_timeout)
                .connect_with(options.clone())
                .await
                .map_err(|e| open::sqlite_error(&path, &e))?;
            Ok(Store::Sqlite(
                pool,
                write_turn::WriteTurns::new(settings.busy_timeout, &options),
                Outbox::default(),
            ))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let options = pg_pool::connect_options(url, settings.statement_timeout)?;
            open::try_postgres(&options, settings.acquire_timeout).await?;
            let pool = pg_pool::pool_options(settings.max_connections, settings.acquire_timeout)
                .connect_with(options)
                .await
                .map_err(connect_error)?;
            Ok(Store::Postgres(
                pool,
                Outbox::default(),
                WriteBound(settings.statement_timeout),
            ))
        } else {
            Err(StoreError::Connect(
                "database URL must start with sqlite:, postgres: or postgresql:".into(),
            ))
        }
    }

    /// The same database through a pool of its own of at most
    /// `max_connections`, for background work (a reconcile sweep) that must
    /// never take the connections deliveries wait for. PostgreSQL: a second
    /// pool with the same options, opened lazily. SQLite: the same pool,
    /// since its one writer is what every write waits for whatever the
    /// pool, and a statement holds a connection only while it runs.
    pub fn side(&self, max_connections: u32) -> Store {
        match self {
            Store::Sqlite(..) => self.clone(),
            Store::Postgres(pool, outbox, bound) => {
                let side =
                    pg_pool::pool_options(max_connections, pool.options().get_acquire_timeout())
                        .connect_lazy_with((*pool.connect_options()).clone());
                Store::Postgres(side, outbox.clone(), *bound)
            }
        }
    }

    /// Writes a consistent copy of a live SQLite database to `path` (a new
    /// file) with `VACUUM INTO`: one read transaction, so writers carry on
    /// (WAL) and the copy is the database as of one commit. PostgreSQL has
    /// its own tools (pg_dump, base backups and WAL archiving).
    pub async fn backup(&self, path: &Path) -> Result<(), StoreError> {
        let Store::Sqlite(pool, ..) = self else {
            return Err(StoreError::Connect(
                "hookledger backup copies SQLite databases; for PostgreSQL use pg_dump or \
                 a base backup with WAL archiving (docs/production/backup.md)"
                    .to_owned(),
            ));
        };
        let text = path.to_string_lossy().into_owned();
        // SQLite reads `file:` names as URIs (`file:x?mode=memory` would
        // write nowhere): a backup is a plain file.
        if text.starts_with("file:") {
            return Err(StoreError::Connect(format!(
                "{text}: give the backup a plain file path, not a file: URI"
            )));
        }
        if path.exists() {
            return Err(StoreError::Connect(format!(
                "{} exists; a backup never writes over a file",
                path.display()
            )));
        }
        sqlx::query("vacuum into $1")
            .bind(&text)
            .execute(pool)
            .await?;
        match std::fs::metadata(path) {
            Ok(written) if written.len() > 0 => Ok(()),
            _ => Err(StoreError::Connect(format!(
                "the backup to {} wrote no file",
                path.display()
            ))),
        }
    }

    /// A cheap round trip, for `/readyz`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(self, pool => sqlx::query("select 1").execute(pool).await.map(drop))?;
        Ok(())
    }

    /// How long a group of deliveries may take on this database, client
    /// side ([`WriteBound`]); none on SQLite, whose waits are in-process
    /// and bounded by its busy timeout.
    pub fn write_bound(&self) -> Option<Duration> {
        match self {
            Store::Sqlite(..) => None,
            Store::Postgres(_, _, WriteBound(bound)) => Some(*bound),
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Store::Sqlite(..) => "sqlite",
            Store::Postgres(..) => "postgres",
        }
    }

    /// The opened database as a person needs to know it, with no password:
    /// `SQLite at data/hookledger.db`, `PostgreSQL at db:5432/hl as app`.
    pub fn describe(&self) -> String {
        match self {
            Store::Sqlite(pool, ..) => format!(
                "SQLite at {}",
                pool.connect_options().get_filename().display()
            ),
            Store::Postgres(pool, ..) => open::postgres_target(&pool.connect_options()),
        }
    }

    pub async fn close(&self) {
        if let Store::Sqlite(_, writer, _) = self {
            writer.close().await;
        }
        on_pool!(self, pool => pool.close().await);
    }

    /// The SQLite file, if this is a SQLite store (for start-up messages).
    pub fn sqlite_file(&self) -> Option<PathBuf> {
        match self {
            Store::Sqlite(pool, ..) => Some(pool.connect_options().get_filename().to_path_buf()),
            Store::Postgres(..) => None,
        }
    }
}

/// How long a starting instance waits for another one to open and migrate
/// an SQLite database.
const START_LOCK_WAIT: Duration = Duration::from_secs(120);

/// An exclusive lock on `<database>-start.lock` for what SQLite cannot do
/// from two processes at once (switch a new file to WAL, migrate), held
/// until dropped and released by the OS if the process dies. In-memory
/// databases are private to their pool and need none. The file stays; it
/// holds nothing.
async fn start_lock(database: &std::path::Path) -> Result<Option<std::fs::File>, StoreError> {
    // sqlx names an in-memory database `file:sqlx-in-memory-<n>`.
    let name = database.to_string_lossy();
    if name.is_empty() || name == ":memory:" || name.starts_with("file:sqlx-in-memory") {
        return Ok(None);
    }
    // One lock file per database, however its path is spelled
    // (`data/x.db`, `./data/x.db`): the folder exists by now.
    let database = match (database.parent(), database.file_name()) {
        (Some(folder), Some(file)) => {
            let folder = if folder.as_os_str().is_empty() {
                Path::new(".")
            } else {
                folder
            };
            std::fs::canonicalize(folder)
                .map(|f| f.join(file))
                .unwrap_or_else(|_| database.to_path_buf())
        }
        _ => database.to_path_buf(),
    };
    let mut path = database.into_os_string();
    path.push("-start.lock");
    let path = PathBuf::from(path);
    let lock_error = |e: std::io::Error| {
        StoreError::Connect(format!(
            "cannot lock {} to open the database: {e}",
            path.display()
        ))
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(lock_error)?;
    let deadline = tokio::time::Instant::now() + START_LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(lock_error(std::io::Error::other(
                    "another instance has held it for over 120 s",
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(lock_error(e)),
        }
    }
}

#[cfg(test)]
mod start_lock_tests {
    use super::*;

    #[tokio::test]
    async fn in_memory_databases_take_no_lock_and_spellings_share_one() {
        for name in ["", ":memory:", "file:sqlx-in-memory-3"] {
            assert!(
                start_lock(Path::new(name)).await.unwrap().is_none(),
                "{name}"
            );
        }
        assert!(!Path::new("file:sqlx-in-memory-3-start.lock").exists());
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let held = start_lock(&dir.path().join("data/x.db")).await.unwrap();
        assert!(held.is_some());
        let lock = dir.path().join("data/x.db-start.lock");
        let other = std::fs::File::open(&lock).unwrap();
        assert!(other.try_lock().is_err(), "held through the first spelling");
        // Another spelling of the same file waits for the same lock.
        let spelled = dir.path().join("data/../data/./x.db");
        let waited = tokio::time::timeout(Duration::from_millis(300), start_lock(&spelled)).await;
        assert!(waited.is_err(), "the second spelling did not wait");
        drop(held);
        assert!(other.try_lock().is_ok(), "released with its handle");
    }
}
