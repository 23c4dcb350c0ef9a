//! The outbox relay (docs/other-systems.md): every message row
//! the posting transactions wrote is sent to its destination until the
//! destination acknowledges it, at least once, in `account_seq` order per
//! account and currency where the destination asks for it.
//!
//! One relay per destination, in `hookledger serve` or on its own in
//! `hookledger relay`; relays of several instances share the rows through
//! the claims in `store::outbox`. A relay wakes when a commit wrote
//! messages (this process's at once, every instance's on PostgreSQL by
//! `LISTEN/NOTIFY` just after) and polls every second besides, which also
//! picks up expired leases and due retries.

mod anchors;
mod backoff;
pub mod destinations;
mod message;
mod relay;
mod row_clock;
mod sending;
mod unconfigured;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::{Clock, SystemClock};
use crate::config::Destination;
use crate::store::Store;
use crate::telemetry::OutboxInstruments;
use relay::Relay;
pub use unconfigured::{unconfigured, warn_of_unconfigured};

/// The fallback when no wake arrives.
const POLL: Duration = Duration::from_secs(1);

/// At most this long for sends in flight to finish at shutdown (less if
/// `shutdown_timeout_secs` is less); the rest hand their leases back.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What the relays' time is made of: as built, a one-second poll and the
/// system's clock. The tests prove the wake with an hour's poll, and the
/// database's clock with a host clock that runs ahead.
#[derive(Clone)]
pub struct Timing {
    /// How often a relay looks when nothing woke it.
    pub poll: Duration,
    /// This host's clock. On PostgreSQL the rows' leases and due times
    /// are judged by the database's clock instead (`row_clock`).
    pub clock: Arc<dyn Clock>,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            poll: POLL,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The running relays of this process.
pub struct Relays {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The listener and the notifier (PostgreSQL), stopped last.
    background: Vec<JoinHandle<()>>,
}

impl Relays {
    /// Starts one relay per destination (none: nothing runs). `grace`
    /// bounds how long sends in flight may finish at shutdown; the relays
    /// count what they send into `instruments`.
    pub fn spawn(
        store: &Store,
        destinations: &[Destination],
        grace: Duration,
        instruments: OutboxInstruments,
    ) -> Self {
        Self::spawn_with(store, destinations, grace, instruments, Timing::default())
    }

    /// The same, on the given [`Timing`] (the tests' own).
    pub fn spawn_with(
        store: &Store,
        destinations: &[Destination],
        grace: Duration,
        instruments: OutboxInstruments,
        timing: Timing,
    ) -> Self {
        let Timing { poll, clock } = timing;
        let (stop, stopped) = watch::channel(false);
        let owner = owner_name();
        let tasks = destinations
            .iter()
            .map(|destination| {
                let relay = Relay {
                    store: store.clone(),
                    destination: destination.clone(),
                    sender: destinations::sender(destination).into(),
                    owner: owner.clone(),
                    poll,
                    grace,
                    tidy: relay::TIDY,
                    instruments: instruments.clone(),
                    clock: clock.clone(),
                };
                tokio::spawn(relay.run(store.outbox().subscribe(), stopped.clone()))
            })
            .collect::<Vec<_>>();
        let mut background = Vec::new();
        if !tasks.is_empty() {
            let store = store.clone();
            background.push(tokio::spawn(async move {
                store.forward_outbox_notifications().await
            }));
        }
        // Any process that writes messages tells the other instances, also
        // one that leaves relaying to `hookledger relay`.
        if !store.outbox().routes().is_empty() {
            let store = store.clone();
            background.push(tokio::spawn(
                async move { store.notify_outbox_commits().await },
            ));
        }
        Self {
            stop,
            tasks,
            background,
        }
    }

    /// Stops claiming; sends in flight finish (or, after the grace period,
    /// their leases are handed back) and their outcomes are recorded.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        for task in self.background {
            task.abort();
        }
    }
}

/// Names this process's leases (the outbox's, a reconcile run's): host,
/// process id and a random part, so two processes never share a name.
pub fn owner_name() -> String {
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}:{}:{}", std::process::id(), hex::encode(bytes))
}
