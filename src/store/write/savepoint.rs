//! Savepoints: one delivery's part of a group commit, undone alone if it
//! fails. The same statements on both backends; a savepoint name may be
//! reused once released.

use super::{StoreError, WriteTx};

const SAVEPOINT: &str = "savepoint delivery";
const RELEASE: &str = "release savepoint delivery";
const ROLLBACK_TO: &str = "rollback to savepoint delivery";

impl WriteTx {
    pub async fn savepoint(&mut self) -> Result<(), StoreError> {
        self.execute_plain(SAVEPOINT).await
    }

    /// Keeps what was done since the savepoint.
    pub async fn release_savepoint(&mut self) -> Result<(), StoreError> {
        self.execute_plain(RELEASE).await
    }

    /// Undoes what was done since the savepoint (a failed statement
    /// included, which on PostgreSQL makes the transaction usable again),
    /// then releases it.
    pub async fn rollback_to_savepoint(&mut self) -> Result<(), StoreError> {
        self.execute_plain(ROLLBACK_TO).await?;
        self.execute_plain(RELEASE).await
    }

    async fn execute_plain(&mut self, sql: &'static str) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(sql).execute(conn).await.map(drop))?;
        Ok(())
    }
}
