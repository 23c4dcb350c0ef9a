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
//! two drift apart by far less than a lease's margin in that time).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::store::Store;

/// How long a reading of the database's clock is counted on from.
pub const REREAD: Duration = Duration::from_secs(10);

pub struct RowClock {
    host: Arc<dyn Clock>,
    /// The database's clock as last read (milliseconds since the epoch),
    /// and the moment it stood for on this host's monotonic clock.
    database: Option<(i64, Instant)>,
    read: Option<Instant>,
}

impl RowClock {
    pub fn new(host: Arc<dyn Clock>) -> Self {
        Self {
            host,
            database: None,
            read: None,
        }
    }

    /// Now, in milliseconds since the epoch.
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
    /// ago. A failed read keeps the last reading (this host's clock before
    /// the first) and is tried again at the next call: the claim that
    /// follows would fail the same way.
    pub async fn refresh(&mut self, store: &Store) {
        if self.read.is_some_and(|read| read.elapsed() < REREAD) {
            return;
        }
        let before = Instant::now();
        match store.database_clock_ms().await {
            Ok(reading) => {
                let after = Instant::now();
                // The server read its clock somewhere in the round trip:
                // its middle is off by at most half of it.
                self.database = reading.map(|ms| (ms, before + (after - before) / 2));
                self.read = Some(after);
            }
            Err(error) => tracing::debug!("outbox: cannot read the database's clock: {error}"),
        }
    }
}
