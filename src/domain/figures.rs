//! Figures the store counts for the dashboard and the metrics: the events
//! held per status, the connection pool's use, and each destination's
//! outbox. Plain values, so that what shows them need not know the store.

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
