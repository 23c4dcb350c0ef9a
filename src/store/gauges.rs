//! Figures read at each metrics scrape: the held queue by status, and the
//! connection pool's use. Cheap by construction: the held counts read held
//! rows only (through `intents_by_status`), and the pool's figures are the
//! pool's own counters (no query).

use chrono::{DateTime, Utc};

use super::{Store, StoreError, on_pool};
use crate::domain::{HeldCount, PoolUsage};

/// Held events per status, and when the oldest of each was first received
/// (SQLite: the minimum of RFC 3339 text in UTC, exact to the second).
const HELD: &str = "
select status, count(*), min(first_received_at)
from intents where status in ('stale', 'rejected', 'waiting', 'unmatched')
group by status
order by status";

impl Store {
    /// The held statuses that have events; a status with none is absent.
    pub async fn held_counts(&self) -> Result<Vec<HeldCount>, StoreError> {
        let rows: Vec<(String, i64, DateTime<Utc>)> =
            on_pool!(self, pool => sqlx::query_as(HELD).fetch_all(pool).await)?;
        Ok(rows
            .into_iter()
            .map(|(status, count, oldest_received_at)| HeldCount {
                status,
                count,
                oldest_received_at,
            })
            .collect())
    }

    /// The reading pool's use (on SQLite, the writer takes its turn from
    /// the same pool).
    pub fn pool_usage(&self) -> PoolUsage {
        on_pool!(self, pool => PoolUsage {
            max: pool.options().get_max_connections(),
            open: pool.size(),
            idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
        })
    }
}
