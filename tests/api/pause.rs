//! Pausing a PostgreSQL transaction at one statement: a trigger function
//! waits on an advisory lock the test holds, so a test can force an
//! interleaving that ordinary concurrency hits only by chance
//! (`interleavings`, `lock_order`).

use std::time::Duration;

use sqlx::{Connection, PgConnection};

use crate::helpers::TestApp;

pub const PAUSE_KEY: i64 = 4242;

/// A trigger function that waits for `PAUSE_KEY` while the test holds it.
/// Shared: once released, every paused transaction goes on at once, and a
/// transaction passes later pauses of its own freely.
pub const PAUSE: &str = "
create function pause() returns trigger language plpgsql as $$
begin
    perform pg_advisory_xact_lock_shared(4242);
    return new;
end $$;";

/// The test's hold on `PAUSE_KEY`, and a connection to watch the waits.
pub struct Pause {
    holder: PgConnection,
    observer: PgConnection,
}

impl Pause {
    pub async fn hold(app: &TestApp) -> Pause {
        Self::hold_on(&app.database_url).await
    }

    /// The pause on the database at `database_url` (a server started as a
    /// process).
    pub async fn hold_on(database_url: &str) -> Pause {
        let mut holder = PgConnection::connect(database_url).await.unwrap();
        let observer = PgConnection::connect(database_url).await.unwrap();
        sqlx::query("select pg_advisory_lock($1)")
            .bind(PAUSE_KEY)
            .execute(&mut holder)
            .await
            .unwrap();
        Pause { holder, observer }
    }

    pub async fn release(&mut self) {
        sqlx::query("select pg_advisory_unlock($1)")
            .bind(PAUSE_KEY)
            .execute(&mut self.holder)
            .await
            .unwrap();
    }

    /// Backends of this test's database waiting for a lock of `kind`:
    /// `advisory` a test's pause (a small key: `PAUSE_KEY`, or another a
    /// test holds apart), `key` a transaction's write key
    /// (`store::WriteKeys`: advisory locks on 64-bit digests, whose high 32
    /// bits are all zero once in four billion), any other a
    /// `pg_locks` lock type (`transactionid`: another transaction's row).
    pub async fn waiting_on(&mut self, kind: &str) -> i64 {
        sqlx::query_scalar(
            "select count(*) from pg_locks l join pg_stat_activity a on a.pid = l.pid
             where a.datname = current_database() and not l.granted and case $1
                 when 'advisory' then l.locktype = 'advisory'
                     and l.classid = 0 and l.objsubid = 1
                 when 'key' then l.locktype = 'advisory'
                     and not (l.classid = 0 and l.objsubid = 1)
                 else l.locktype = $1 end",
        )
        .bind(kind)
        .fetch_one(&mut self.observer)
        .await
        .unwrap()
    }

    pub async fn until_waiting_on(&mut self, kind: &str) {
        self.until_waiting(kind, 1).await
    }

    /// Until at least `count` transactions wait on a lock of `kind`.
    pub async fn until_waiting(&mut self, kind: &str, count: i64) {
        for _ in 0..200 {
            if self.waiting_on(kind).await >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{count} transaction(s) never waited on a {kind} lock at once");
    }

    /// Transactions waiting for another's row or write key.
    pub async fn blocked(&mut self) -> i64 {
        self.waiting_on("transactionid").await + self.waiting_on("key").await
    }

    /// Runs `request` while the pause is held, and releases the pause once
    /// the request either answers or waits on another transaction's row
    /// lock or write key: a request that should wait for the paused
    /// transaction shows up as answered first only when it did not wait.
    /// One that does neither within 10 s waits somewhere else (in an
    /// instance's queue, behind the paused transaction's own writer): the
    /// interleaving was not forced, and the test fails.
    pub async fn release_once_blocked<T>(&mut self, request: impl Future<Output = T>) -> T {
        tokio::pin!(request);
        let mut answered = None;
        let mut waited = false;
        for _ in 0..200 {
            tokio::select! {
                answer = &mut request => {
                    answered = Some(answer);
                    break;
                }
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if self.blocked().await > 0 {
                        waited = true;
                        break;
                    }
                }
            }
        }
        assert!(
            answered.is_some() || waited,
            "the request neither answered nor waited on a row lock or write key"
        );
        self.release().await;
        match answered {
            Some(answer) => answer,
            None => request.await,
        }
    }
}
