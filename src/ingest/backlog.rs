//! A release's backlog: the signal that wakes the drain task
//! (`background/drain.rs`) when a delivery's release stopped at its
//! per-transaction bound with more parked events ready, and the count of
//! the task's sweeps.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// Wakes the drain task (`background/drain.rs`; the signal is held in the
/// app state), and counts its sweeps.
#[derive(Debug, Default)]
pub struct DrainSignal(Notify, AtomicU64);

impl DrainSignal {
    /// Asks for a sweep now; wakes coalesce while one runs.
    pub fn wake(&self) {
        self.0.notify_one();
    }

    /// Sweeps finished since start-up (the first runs at once).
    pub fn sweeps(&self) -> u64 {
        self.1.load(Ordering::Acquire)
    }

    /// Waits for a wake: the drain task's wait between sweeps.
    pub async fn woken(&self) {
        self.0.notified().await;
    }

    /// Counts one finished sweep.
    pub fn swept(&self) {
        self.1.fetch_add(1, Ordering::Release);
    }
}
