//! The outbox's rows: written by the posting's own transaction
//! ([`enqueue`]), claimed, completed and re-queued by relays ([`relay`]),
//! counted and listed ([`stats`]).
//!
//! Scheduling columns (`next_attempt_ms`, `delivered_ms`) are integer
//! milliseconds since the epoch, compared as numbers on both backends.

mod admin;
mod anchors;
mod behind;
mod clock;
mod enqueue;
mod handle;
mod listen;
mod ordered;
#[cfg(test)]
mod plans;
mod relay;
mod requeue;
mod stats;
mod unconfigured;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Store;
use crate::domain::Routes;

pub use admin::Blocking;
pub use anchors::{AnchorAttempt, AnchorMessage};
pub use behind::Tidied;
pub use clock::ClockReading;
pub use relay::{Attempted, Recorded};
pub use requeue::Replay;
pub use stats::OutboxEntry;
pub use unconfigured::{Holding, Moved};

pub use handle::Outbox;

impl Store {
    pub fn outbox(&self) -> &Outbox {
        match self {
            Store::Sqlite(_, _, outbox) | Store::Postgres(_, outbox, _) => outbox,
        }
    }

    /// This store with these routes: every transaction begun from it (or
    /// a clone) writes messages for them.
    pub fn with_routes(mut self, routes: Routes) -> Self {
        match &mut self {
            Store::Sqlite(_, _, outbox) | Store::Postgres(_, outbox, _) => {
                outbox.set_routes(routes)
            }
        }
        self
    }
}

/// A message row as a relay sends it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct OutboxRow {
    pub outbox_id: i64,
    pub destination: String,
    pub message_id: String,
    pub message_type: String,
    pub source: String,
    pub event_id: String,
    pub event_status: String,
    pub reason: Option<String>,
    pub account_id: Option<String>,
    pub currency: Option<String>,
    pub amount_minor: Option<i64>,
    pub balance_after_minor: Option<i64>,
    pub account_seq: Option<i64>,
    pub object_id: Option<String>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub posted_at: DateTime<Utc>,
    pub operator_applied: bool,
    /// Counting the one this claim starts.
    pub attempts: i64,
}
