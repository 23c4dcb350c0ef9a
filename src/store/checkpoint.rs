//! SQLite's checkpoints, off the writer's path. A checkpoint copies the
//! pages committed to the write-ahead log back into the database file and
//! syncs the file. By itself SQLite runs one in whichever connection
//! commits once the log passes 1,000 pages: here, the one writing
//! connection, inside a group's commit, with every delivery of the group
//! and the queue behind it waiting. Under load the log passed 1,000 pages
//! every few commits (BENCHMARKS.md, 2026-11-29 second session).
//!
//! So the writing connection turns that off (`wal_autocheckpoint = 0`,
//! [`super::write_turn`]) and this task checkpoints instead, on a
//! connection of its own, on the other core: every [`PAUSE`] while commits
//! come ([`TIMING`]), never while none do. Each time:
//! 1. passive checkpoints, while groups go on committing: the first copies
//!    the bulk, each next one what the writer added during the one before,
//!    until that is at most [`CAUGHT_UP`] pages (a few passes at most);
//! 2. then the writer itself, before its next transaction and with the
//!    turn to write it holds anyway, copies the few pages added since
//!    ([`Checkpoints::finish`]). The whole log is then copied, and the
//!    writer's next transaction starts it again from its beginning instead
//!    of letting it grow. Taking the turn from here for that step instead
//!    held every group up for 5-20 ms, mostly waiting for this task to be
//!    scheduled again on a busy runtime.
//!
//! After a while with no commit, or none that wrote a page, the log is
//! copied and truncated to nothing, with the turn held (given up at once
//! if a reader still reads the log).
//!
//! A checkpoint never loses a commit: the log is synced at each commit
//! (`synchronous = FULL`) and a page leaves it only once copied and synced.
//! A failed checkpoint is logged and tried again after the next pause;
//! until one succeeds the log grows, as it would behind a long reader.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection, SqlitePool};
use tokio::sync::{Semaphore, mpsc};

/// When the checkpointer copies.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long commits gather before a checkpoint copies what they wrote
    /// (a page written by many of them is copied once).
    pub pause: Duration,
    /// After this long with no commit, or none that wrote a page, the log
    /// is truncated to nothing.
    pub idle: Duration,
}

/// Every second while commits come: at full speed the log grows by some
/// 200 MB in that time (BENCHMARKS.md), and keeps that size on disk until
/// commits stop writing pages for ten seconds.
pub const TIMING: Timing = Timing {
    pause: Duration::from_secs(1),
    idle: Duration::from_secs(10),
};

/// Pages new to the log since the pass before, at most, for a pass to be
/// the last one of this task's: the writer added about as few while it
/// ran, and copies those itself.
const CAUGHT_UP: i64 = 256;

/// Passes of this task's, at most, each time.
const PASSES: usize = 8;

/// The writer's side of the checkpointer.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    commits: mpsc::Sender<()>,
    /// This task has copied the log up to a few pages: the writer copies
    /// the rest.
    due: Arc<AtomicBool>,
}

impl Checkpoints {
    /// A transaction committed. Never waits: a wake already pending
    /// covers this commit too.
    pub fn committed(&self) {
        let _ = self.commits.try_send(());
    }

    /// Before a write transaction, with the turn: copies the pages added
    /// since the checkpointer's last pass, if it has just made one, on the
    /// `writer`'s connection. A failure is logged; the next pause tries
    /// again.
    pub async fn finish(&self, writer: &SqlitePool) {
        if !self.due.swap(false, Ordering::AcqRel) {
            return;
        }
        let copied = match writer.acquire().await {
            Ok(mut connection) => passive(&mut connection).await.map(drop),
            Err(error) => Err(error),
        };
        if let Err(error) = copied {
            tracing::warn!("SQLite checkpoint failed, trying again after a pause: {error}");
        }
    }
}

/// Starts the checkpointer for the database of `options`; it takes `turn`
/// to truncate the log when idle, and ends once every [`Checkpoints`] is
/// dropped.
pub fn spawn(options: SqliteConnectOptions, turn: Arc<Semaphore>, timing: Timing) -> Checkpoints {
    let (commits, committed) = mpsc::channel(1);
    let due = Arc::new(AtomicBool::new(false));
    tokio::spawn(checkpoints(options, turn, timing, committed, due.clone()));
    Checkpoints { commits, due }
}

async fn checkpoints(
    options: SqliteConnectOptions,
    turn: Arc<Semaphore>,
    timing: Timing,
    mut commits: mpsc::Receiver<()>,
    due: Arc<AtomicBool>,
) {
    let mut connection: Option<SqliteConnection> = None;
    'idle: while commits.recv().await.is_some() {
        // Commits come: a checkpoint every pause, until they stop, or
        // until none wrote a page for a while (the relays' claims commit
        // every second, writing nothing when there is nothing to send).
        let (mut quiet, mut last) = (Duration::ZERO, None);
        loop {
            tokio::time::sleep(timing.pause).await;
            match copy(&mut connection, &options).await {
                // The log as it was: no page written since.
                Ok(log) if last == Some(log) => quiet += timing.pause,
                Ok(log) => {
                    (quiet, last) = (Duration::ZERO, Some(log));
                    due.store(true, Ordering::Release);
                }
                Err(error) => {
                    tracing::warn!("SQLite checkpoint failed, trying again after a pause: {error}");
                    connection = None;
                }
            }
            if quiet >= timing.idle {
                break;
            }
            match tokio::time::timeout(timing.idle, commits.recv()).await {
                Ok(Some(())) => {}
                Ok(None) => break 'idle,
                Err(_idle) => break,
            }
        }
        if let Err(error) = truncate(&mut connection, &options, &turn).await {
            tracing::warn!("SQLite could not truncate its write-ahead log: {error}");
            connection = None;
        }
    }
    if let Some(connection) = connection {
        let _ = connection.close().await;
    }
}

/// The checkpointer's connection, opened if it is not (or was dropped
/// after a failure). It never waits for a lock: a truncation that would
/// wait for readers gives up, and is tried when writes stop again,
/// instead of holding the turn to write (and the deliveries queued for
/// it) for up to the busy timeout.
async fn open<'a>(
    connection: &'a mut Option<SqliteConnection>,
    options: &SqliteConnectOptions,
) -> Result<&'a mut SqliteConnection, sqlx::Error> {
    Ok(match connection {
        Some(connection) => connection,
        None => connection.insert(
            options
                .clone()
                .busy_timeout(Duration::ZERO)
                .connect()
                .await?,
        ),
    })
}

/// Copies the log while the writer goes on, until it adds few pages
/// during a pass: the pages the log held at the first pass.
async fn copy(
    connection: &mut Option<SqliteConnection>,
    options: &SqliteConnectOptions,
) -> Result<i64, sqlx::Error> {
    let connection = open(connection, options).await?;
    let first = passive(connection).await?;
    let mut before = first;
    for _ in 1..PASSES {
        let log = passive(connection).await?;
        // A smaller log than before: the writer started it again.
        let new = if log >= before { log - before } else { log };
        before = log;
        if new <= CAUGHT_UP {
            break;
        }
    }
    Ok(first)
}

/// A passive checkpoint: copies what no reader still needs from the log,
/// waiting for no one. The pages the log held.
async fn passive(connection: &mut SqliteConnection) -> Result<i64, sqlx::Error> {
    let (_busy, log, _copied): (i64, i64, i64) = sqlx::query_as("pragma wal_checkpoint(passive)")
        .fetch_one(&mut *connection)
        .await?;
    Ok(log)
}

/// Copies the whole log and truncates it to nothing, with the turn held,
/// unless a reader still reads the log.
async fn truncate(
    connection: &mut Option<SqliteConnection>,
    options: &SqliteConnectOptions,
    turn: &Semaphore,
) -> Result<(), sqlx::Error> {
    let connection = open(connection, options).await?;
    // Closed only once the store is gone: then nothing writes any more.
    let Ok(_turn) = turn.acquire().await else {
        return Ok(());
    };
    sqlx::query("pragma wal_checkpoint(truncate)")
        .fetch_all(&mut *connection)
        .await
        .map(drop)
}
