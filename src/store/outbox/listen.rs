//! PostgreSQL: every instance's relays wake soon after a commit that wrote
//! messages anywhere. The writing process's own relays are woken in process
//! at once; its notifier then sends one `pg_notify` for every burst of such
//! commits, outside any transaction, and every instance's listener wakes its
//! relays. The notification is a hint, so it is never part of a posting's
//! transaction: PostgreSQL serialises the commits of transactions that
//! notify, and a failed notify must not roll a posting back (measured:
//! inside the transaction it cost a third of the ingest ceiling). A lost
//! one costs at most the relays' one-second poll. On SQLite a commit wakes
//! the relays of its own process; a `hookledger relay` process beside the
//! server polls.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};

use super::super::Store;

const CHANNEL: &str = "hookledger_outbox";
const NOTIFY: &str = "select pg_notify('hookledger_outbox', '')";

/// Commits within this long of a notification share the next one.
const COALESCE: Duration = Duration::from_millis(20);

impl Store {
    /// Runs until dropped: wakes this process's relays on each
    /// notification; on a lost connection, listens again after a second
    /// (the relays' poll covers the gap). The listening connection is its
    /// own, never one of the pool's: the pool keeps its whole size for
    /// requests.
    pub async fn forward_outbox_notifications(&self) {
        let Store::Postgres(pool, outbox, _) = self else {
            return;
        };
        let options = (*pool.connect_options()).clone();
        loop {
            let listening = PgPoolOptions::new()
                .max_connections(1)
                .max_lifetime(None)
                .idle_timeout(None)
                .connect_with(options.clone())
                .await;
            let listener = match listening {
                Ok(own) => PgListener::connect_with(&own).await,
                Err(error) => Err(error),
            };
            match listener {
                Ok(mut listener) => {
                    if listener.listen(CHANNEL).await.is_ok() {
                        while listener.recv().await.is_ok() {
                            outbox.wake();
                        }
                    }
                }
                Err(error) => tracing::debug!("outbox: cannot listen for commits: {error}"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Runs until dropped (PostgreSQL; returns at once on SQLite): after
    /// each burst of this process's commits that wrote messages, one
    /// notification to every instance's listener.
    pub async fn notify_outbox_commits(&self) {
        let Store::Postgres(pool, outbox, _) = self else {
            return;
        };
        let mut commits = outbox.commits();
        while commits.changed().await.is_ok() {
            if let Err(error) = sqlx::query(NOTIFY).execute(pool).await {
                tracing::debug!("outbox: notify failed, the relays' poll covers it: {error}");
            }
            tokio::time::sleep(COALESCE).await;
        }
    }
}
