//! Figures the store counts for the dashboard and the metrics: the events
//! held per status, the connection pool's use, each destination's outbox,
//! and PostgreSQL's replication. Plain values, so that what shows them need not know the store.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Status;

/// The statuses that wait for a delivery or a person.
pub const HELD_STATUSES: [Status; 4] = [
    Status::Stale,
    Status::Rejected,
    Status::Waiting,
    Status::Unmatched,
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCount {
    pub status: String,
    pub count: i64,
    pub oldest_received_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUsage {
    pub max: u32,
    /// Connections open now, idle ones included.
    pub open: u32,
    pub idle: u32,
}

/// PostgreSQL: whether a commit is on a standby before it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replication {
    /// Every commit waits for a synchronous standby
    /// (`synchronous_standby_names` set, and `synchronous_commit` `on`,
    /// `remote_write` or `remote_apply`).
    pub synchronous: bool,
    /// Synchronous (or quorum) standbys streaming now; `None` where the
    /// role may not read `pg_stat_replication`'s details (it needs
    /// `pg_monitor` or `pg_read_all_stats`).
    pub standbys: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct OutboxStats {
    pub destination: String,
    /// Not delivered yet, in flight included.
    pub pending: i64,
    pub in_flight: i64,
    pub oldest_pending_at: Option<DateTime<Utc>>,
    pub delivered_last_hour: i64,
    pub dead: i64,
}
