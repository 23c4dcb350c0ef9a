//! PostgreSQL: every instance's relays wake on a commit that wrote messages
//! anywhere (`pg_notify` in that transaction, see `enqueue`). SQLite has one
//! writer process, whose commits wake its own relays directly.

use std::time::Duration;

use sqlx::postgres::PgListener;

use super::super::Store;

const CHANNEL: &str = "hookledger_outbox";

impl Store {
    /// Runs until dropped: wakes this process's relays on each
    /// notification; on a lost connection, listens again after a second
    /// (the relays' poll covers the gap).
    pub async fn forward_outbox_notifications(&self) {
        let Store::Postgres(pool, outbox) = self else {
            return;
        };
        loop {
            match PgListener::connect_with(pool).await {
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
