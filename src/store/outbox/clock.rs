//! The clock the outbox's leases and due times are judged by: PostgreSQL's
//! own, so that the relays of every instance agree on when a lease ends
//! whatever their hosts' clocks say; on SQLite, whose database is on this
//! host, this host's.

use std::time::{Duration, Instant};

use super::super::{Store, StoreError};

const DATABASE_CLOCK_MS: &str = "select (extract(epoch from clock_timestamp()) * 1000)::bigint";

/// PostgreSQL's clock as read: milliseconds since the epoch, the moment on
/// this host's monotonic clock it stands for, and the query's round trip
/// (how far off that moment may be, twice over).
#[derive(Debug, Clone, Copy)]
pub struct ClockReading {
    pub ms: i64,
    pub at: Instant,
    pub round_trip: Duration,
}

impl Store {
    /// A reading of the clock that judges the outbox's leases and due
    /// times: PostgreSQL's own, so that the relays of every instance agree
    /// on when a lease ends whatever their hosts' clocks say; `None` on
    /// SQLite, whose database is on this host and shares its clock. Timed
    /// on a connection already held: a wait for one is not part of the
    /// round trip.
    pub async fn database_clock(&self) -> Result<Option<ClockReading>, StoreError> {
        let Store::Postgres(pool, ..) = self else {
            return Ok(None);
        };
        let mut conn = pool.acquire().await?;
        let sent = Instant::now();
        let (ms,): (i64,) = sqlx::query_as(DATABASE_CLOCK_MS)
            .fetch_one(&mut *conn)
            .await?;
        let answered = Instant::now();
        Ok(Some(ClockReading {
            ms,
            // The server read its clock somewhere in the round trip: its
            // middle is off by at most half of it.
            at: sent + (answered - sent) / 2,
            round_trip: answered - sent,
        }))
    }

    /// Now by that clock, in milliseconds since the epoch: PostgreSQL's, or
    /// on SQLite this host's (the outbox handle's).
    pub async fn database_now_ms(&self) -> Result<i64, StoreError> {
        Ok(match self.database_clock().await? {
            Some(reading) => reading.ms,
            None => self.outbox().host_clock().now().timestamp_millis(),
        })
    }
}
