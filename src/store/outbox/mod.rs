//! The outbox's rows: written by the posting's own transaction
//! ([`enqueue`]), claimed, completed and re-queued by relays ([`relay`]),
//! counted and listed ([`stats`]).
//!
//! Scheduling columns (`next_attempt_ms`, `delivered_ms`) are integer
//! milliseconds since the epoch, compared as numbers on both backends.

mod admin;
mod behind;
mod clock;
mod enqueue;
mod listen;
mod ordered;
#[cfg(test)]
mod plans;
mod relay;
mod requeue;
mod stats;
mod unconfigured;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::watch;

use super::Store;
use crate::domain::{MessageType, Routes};

pub use admin::Blocking;
pub use behind::Tidied;
pub use clock::ClockReading;
pub use relay::{Attempted, Recorded};
pub use requeue::Replay;
pub use stats::{OutboxEntry, OutboxStats};
pub use unconfigured::{Holding, Moved};

/// Where this process's postings are told: the configured routes, the
/// signal that wakes this process's relays (a commit here that wrote
/// messages, or on PostgreSQL a notification from any instance), and the
/// signal of this process's own such commits (which the notifier passes on
/// to the other instances).
#[derive(Debug, Clone)]
pub struct Outbox {
    routes: Routes,
    posted: Arc<PostedTo>,
    wake: Arc<watch::Sender<u64>>,
    committed: Arc<watch::Sender<u64>>,
}

impl Default for Outbox {
    fn default() -> Self {
        let routes = Routes::default();
        Self {
            posted: Arc::new(PostedTo::new(&routes)),
            routes,
            wake: Arc::new(watch::channel(0).0),
            committed: Arc::new(watch::channel(0).0),
        }
    }
}

impl Outbox {
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Where a posting's `ledger.posted` messages go, as its statement
    /// binds them.
    pub(in crate::store) fn posted(&self) -> &Arc<PostedTo> {
        &self.posted
    }

    /// A receiver that sees every wake after this call.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }

    /// Sees every commit of this process that wrote messages, after this
    /// call.
    pub fn commits(&self) -> watch::Receiver<u64> {
        self.committed.subscribe()
    }

    /// Wakes this process's relays.
    pub(super) fn wake(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A commit here wrote messages.
    pub(super) fn committed(&self) {
        self.wake();
        self.committed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl Store {
    pub fn outbox(&self) -> &Outbox {
        match self {
            Store::Sqlite(_, _, outbox) | Store::Postgres(_, outbox) => outbox,
        }
    }

    /// This store with these routes: every transaction begun from it (or
    /// a clone) writes messages for them.
    pub fn with_routes(mut self, routes: Routes) -> Self {
        match &mut self {
            Store::Sqlite(_, _, outbox) | Store::Postgres(_, outbox) => {
                outbox.posted = Arc::new(PostedTo::new(&routes));
                outbox.routes = routes;
            }
        }
        self
    }
}

/// The destinations of `ledger.posted` messages and those of them that are
/// ordered, as lists (PostgreSQL's arrays) and JSON arrays (SQLite's
/// `json_each`): worked out once from the routes, not for every posting.
#[derive(Debug)]
pub(in crate::store) struct PostedTo {
    pub names: Vec<String>,
    pub ordered: Vec<String>,
    pub names_json: String,
    pub ordered_json: String,
}

impl PostedTo {
    fn new(routes: &Routes) -> Self {
        let names: Vec<String> = routes
            .taking(MessageType::LedgerPosted)
            .map(str::to_owned)
            .collect();
        let ordered: Vec<String> = names
            .iter()
            .filter(|name| routes.is_ordered(name))
            .cloned()
            .collect();
        let json = |list: &[String]| serde_json::to_string(list).expect("strings serialise");
        Self {
            names_json: json(&names),
            ordered_json: json(&ordered),
            names,
            ordered,
        }
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
