//! Figures read at each metrics scrape: the held queue by status, the
//! connection pool's use, and PostgreSQL's replication. Cheap by
//! construction: the held counts read held rows only (through
//! `intents_by_status`), the pool's figures are the pool's own counters
//! (no query), and replication is two settings and the server's list of
//! WAL senders.

use chrono::{DateTime, Utc};

use super::{Store, StoreError, on_pool};
use crate::domain::{HeldCount, PoolUsage, Replication};

/// Held events per status, and when the oldest of each was first received
/// (SQLite: the minimum of RFC 3339 text in UTC, exact to the second).
const HELD: &str = "
select status, count(*), min(first_received_at)
from intents where status in ('stale', 'rejected', 'waiting', 'unmatched')
group by status
order by status";

/// PostgreSQL only. The standbys' details (`sync_state`) are null for a role
/// without `pg_monitor`: then the count is unknown, not zero.
const REPLICATION: &str = "
select current_setting('synchronous_standby_names'),
       current_setting('synchronous_commit'),
       (select count(*) from pg_stat_replication where sync_state in ('sync', 'quorum')),
       (select count(*) from pg_stat_replication where sync_state is null)";

impl Store {
    /// Whether commits wait for a synchronous standby, and how many are
    /// streaming; `None` on SQLite.
    pub async fn replication(&self) -> Result<Option<Replication>, StoreError> {
        let Store::Postgres(pool, ..) = self else {
            return Ok(None);
        };
        let (names, commit, standbys, hidden): (String, String, i64, i64) =
            sqlx::query_as(REPLICATION).fetch_one(pool).await?;
        Ok(Some(Replication {
            synchronous: !names.trim().is_empty()
                && matches!(commit.as_str(), "on" | "remote_write" | "remote_apply"),
            standbys: (hidden == 0).then_some(standbys),
        }))
    }

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
