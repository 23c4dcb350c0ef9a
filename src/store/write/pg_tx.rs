//! A PostgreSQL write transaction on a pooled connection of its own, begun,
//! committed and rolled back by statement. One that ends any other way
//! (dropped unfinished: an error returned early, a caller cancelled, a
//! group past its bound) closes its connection at once instead of giving
//! it back to the pool. sqlx would give it back after a ping, and the ping
//! waits behind whatever the server has not answered yet: a COMMIT waiting
//! for a synchronous standby that is gone, or a server that went silent
//! behind a moved address (sqlx sets no TCP keepalive). Closed, the
//! connection frees its pool slot now, and the server rolls back whatever
//! it had not committed.

use std::ops::{Deref, DerefMut};

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};

pub struct PgTx {
    /// Taken when the transaction ends.
    conn: Option<PoolConnection<Postgres>>,
}

impl PgTx {
    /// READ COMMITTED, explicitly, so that a server default of REPEATABLE
    /// READ or SERIALIZABLE cannot turn a concurrent duplicate or apply
    /// into a 40001 error.
    pub async fn begin(pool: &PgPool) -> Result<PgTx, sqlx::Error> {
        let mut conn = pool.acquire().await?;
        sqlx::raw_sql("begin isolation level read committed")
            .execute(&mut *conn)
            .await?;
        Ok(PgTx { conn: Some(conn) })
    }

    /// `COMMIT`; on an error its outcome may be unknown (the connection
    /// broke after the server received it), and the connection is closed.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.finish("commit").await
    }

    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        self.finish("rollback").await
    }

    /// Ends the transaction with `statement`; the connection goes back to
    /// the pool only when the server has answered it.
    async fn finish(mut self, statement: &'static str) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(statement).execute(&mut *self).await?;
        // Back to the pool (sqlx pings it on the way).
        drop(self.conn.take());
        Ok(())
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // Out of the pool (which may open another in its place), and
            // closed: the socket shut without waiting for anything.
            drop(conn.detach());
        }
    }
}

impl Deref for PgTx {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.conn.as_deref().expect("a transaction in progress")
    }
}

impl DerefMut for PgTx {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn.as_deref_mut().expect("a transaction in progress")
    }
}
