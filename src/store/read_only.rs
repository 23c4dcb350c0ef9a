//! Connections only to a PostgreSQL server that takes writes. hookledger
//! writes on every delivery, so a connection to a server that refuses them
//! is worth nothing: a standby (reached through an address that has not
//! moved yet after a failover), or a primary fenced read-only
//! (`default_transaction_read_only`, as some failover tools do to an old
//! primary).
//!
//! - A new connection asks `transaction_read_only` (one round trip, as
//!   libpq's `target_session_attrs=read-write` does) and is refused if it
//!   is on; the pool then tries again until its acquire timeout (503).
//! - A statement refused with SQLSTATE 25006 (read-only transaction) marks
//!   the moment: every pooled connection opened before it is closed when
//!   next taken from or given back to the pool, so the pool opens new ones
//!   wherever the address leads now; and `Store::recycle_after_refusal`
//!   (called where a delivery or a probe failed) passes every idle one
//!   through the pool at once, so none is left idle on the server. The mark is process-wide (one process
//!   serves one database; another pool in the process, a side pool say,
//!   only opens its connections again).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::PgConnection;

/// When the process started; marks are counted from it.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// The latest 25006, in microseconds since [`EPOCH`]; 0 for never.
static REFUSED_AT: AtomicU64 = AtomicU64::new(0);

fn since_epoch() -> u64 {
    // At least 1, so that a mark is never taken for "never".
    (EPOCH.elapsed().as_micros() as u64).max(1)
}

/// A statement was refused as a write on a read-only server.
pub(super) fn refused_a_write() {
    REFUSED_AT.fetch_max(since_epoch(), Ordering::Relaxed);
}

/// Whether a pooled connection of `age` was opened before the latest
/// refused write (and must be closed).
pub(super) fn opened_before_a_refusal(age: Duration) -> bool {
    let refused = REFUSED_AT.load(Ordering::Relaxed);
    if refused == 0 {
        return false;
    }
    let opened = since_epoch().saturating_sub(age.as_micros() as u64);
    opened <= refused
}

/// Whether any write was refused yet.
pub(super) fn any_refused() -> bool {
    REFUSED_AT.load(Ordering::Relaxed) != 0
}

/// Why a connection was refused.
pub(super) const READ_ONLY: &str = "the server is read-only (a standby, or a primary fenced \
     read-only); hookledger keeps connections only to a server that takes writes";

/// Whether the server a connection reached refuses writes.
pub(super) async fn is_read_only(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    let (setting,): (String,) = sqlx::query_as("show transaction_read_only")
        .fetch_one(&mut *conn)
        .await?;
    Ok(setting == "on")
}

/// After connecting: an error for a server that refuses writes.
pub(super) async fn refuse_if_read_only(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    if is_read_only(conn).await? {
        return Err(sqlx::Error::Protocol(READ_ONLY.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_opened_before_a_refusal_are_marked_and_later_ones_are_not() {
        let opened_earlier = EPOCH.elapsed() + Duration::from_secs(1);
        std::thread::sleep(Duration::from_millis(2));
        refused_a_write();
        assert!(opened_before_a_refusal(opened_earlier));
        std::thread::sleep(Duration::from_millis(2));
        // Opened a millisecond ago: after the refusal.
        assert!(!opened_before_a_refusal(Duration::from_millis(1)));
    }
}
