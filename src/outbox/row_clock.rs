//! The time a relay judges the outbox's rows by: when a lease ends, when a
//! retry is due. On PostgreSQL that is the database's clock, so the relays
//! of every instance agree on it whatever their hosts' clocks say: a relay
//! on a host whose clock ran ahead would otherwise take rows whose lease
//! had not ended, send them a second time, and the first relay's record of
//! the acknowledgement would be dropped. On SQLite the database is on this
//! host and its clock is this host's.
//!
//! The database's clock is read once every [`REREAD`]; in between the relay
//! counts on from the last reading with this host's monotonic clock (the
//! two drift apart by far less than a lease's margin in that time). A
//! reading whose round trip took longer than [`MAX_ROUND_TRIP`] is not
//! used (it could be off by half of it), and on PostgreSQL the relay claims
//! nothing before its first good reading.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::store::Store;

/// How long a reading of the database's clock is counted on from.
pub const REREAD: Duration = Duration::from_secs(10);
/// The slowest reading used: off by at most half of this, well inside the
/// 2 s by which a relay's record ends before its lease.
pub const MAX_ROUND_TRIP: Duration = Duration::from_millis(500);

pub struct RowClock {
    host: Arc<dyn Clock>,
    /// The database's clock as last read (milliseconds since the epoch),
    /// and the moment it stood for on this host's monotonic clock.
    database: Option<(i64, Instant)>,
    /// The database is SQLite: this host's clock is its clock.
    on_this_host: bool,
    read: Option<Instant>,
}

impl RowClock {
    pub fn new(host: Arc<dyn Clock>) -> Self {
        Self {
            host,
            database: None,
            on_this_host: false,
            read: None,
        }
    }

    /// Whether [`RowClock::now_ms`] tells the database's time: on SQLite at
    /// once, on PostgreSQL after a first good reading.
    pub fn ready(&self) -> bool {
        self.on_this_host || self.database.is_some()
    }

    /// Now, in milliseconds since the epoch (this host's clock until
    /// [`RowClock::ready`]).
    pub fn now_ms(&self) -> i64 {
        match self.database {
            Some((ms, at)) => {
                let since = i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX);
                ms.saturating_add(since)
            }
            None => self.host.now().timestamp_millis(),
        }
    }

    /// Reads the database's clock, unless it was read less than [`REREAD`]
    /// ago. A failed or slow read keeps the last reading and is tried again
    /// at the next call.
    pub async fn refresh(&mut self, store: &Store) {
        if self.read.is_some_and(|read| read.elapsed() < REREAD) {
            return;
        }
        match store.database_clock().await {
            Ok(None) => {
                self.on_this_host = true;
                self.read = Some(Instant::now());
            }
            Ok(Some(reading)) if reading.round_trip <= MAX_ROUND_TRIP => {
                self.database = Some((reading.ms, reading.at));
                self.read = Some(Instant::now());
            }
            Ok(Some(reading)) => tracing::debug!(
                "outbox: the database's clock took {} ms to read: not used",
                reading.round_trip.as_millis()
            ),
            Err(error) => tracing::debug!("outbox: cannot read the database's clock: {error}"),
        }
    }
}
