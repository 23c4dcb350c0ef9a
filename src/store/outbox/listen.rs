//! PostgreSQL: every instance's relays wake on a commit that wrote messages
//! anywhere (`pg_notify` in that transaction, see `enqueue`). On SQLite a
//! commit wakes the relays of its own process; a `hookledger relay` process
//! beside the server polls.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};

use super::super::Store;

const CHANNEL: &str = "hookledger_outbox";

impl Store {
    /// Runs until dropped: wakes this process's relays on each
    /// notification; on a lost connection, listens again after a second
    /// (the relays' poll covers the gap). The listening connection is its
    /// own, never one of the pool's: the pool keeps its whole size for
    /// requests.
    pub async fn forward_outbox_notifications(&self) {
        let Store::Postgres(pool, outbox) = self else {
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
}
