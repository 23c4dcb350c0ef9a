//! The outbox handle every store carries: where this process's postings
//! are told (the configured routes, worked out once as the posting
//! statement binds them), the signals that wake its relays, and this
//! host's clock, by which the outbox's rows are timed on SQLite.

use std::sync::Arc;

use tokio::sync::watch;

use crate::clock::{Clock, SystemClock};
use crate::domain::{MessageType, Routes};

/// Where this process's postings are told: the configured routes, the
/// signal that wakes this process's relays (a commit here that wrote
/// messages, or on PostgreSQL a notification from any instance), and the
/// signal of this process's own such commits (which the notifier passes on
/// to the other instances).
#[derive(Clone)]
pub struct Outbox {
    routes: Routes,
    posted: Arc<PostedTo>,
    wake: Arc<watch::Sender<u64>>,
    committed: Arc<watch::Sender<u64>>,
    /// This host's clock (the system's): on SQLite, the database's clock
    /// is this host's.
    host_clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("routes", &self.routes)
            .field("posted", &self.posted)
            .finish_non_exhaustive()
    }
}

impl Default for Outbox {
    fn default() -> Self {
        let routes = Routes::default();
        Self {
            posted: Arc::new(PostedTo::new(&routes)),
            routes,
            wake: Arc::new(watch::channel(0).0),
            committed: Arc::new(watch::channel(0).0),
            host_clock: Arc::new(SystemClock),
        }
    }
}

impl Outbox {
    /// This host's clock: on SQLite, what the outbox's rows are timed by.
    pub fn host_clock(&self) -> &dyn Clock {
        self.host_clock.as_ref()
    }

    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Tells postings to these routes from now on.
    pub(in crate::store) fn set_routes(&mut self, routes: Routes) {
        self.posted = Arc::new(PostedTo::new(&routes));
        self.routes = routes;
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
    pub(in crate::store) fn wake(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A commit here wrote messages.
    pub(in crate::store) fn committed(&self) {
        self.wake();
        self.committed.send_modify(|n| *n = n.wrapping_add(1));
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
