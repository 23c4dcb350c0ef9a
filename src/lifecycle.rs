//! Whether this process still takes new work. A load balancer learns it
//! from `/readyz`: at SIGTERM the process starts draining, `/readyz`
//! answers 503 at once while every other route is still served (each
//! answer closing its connection, so that a client's next request opens a
//! connection the balancer can send elsewhere), and only after the drain
//! does the listener stop accepting.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared by the probes, the answers and the signal handler; cloning
/// shares it.
#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    draining: Arc<AtomicBool>,
}

impl Lifecycle {
    /// From now on the process is draining; it never stops again.
    pub fn start_draining(&self) {
        // Relaxed: a probe that reads the old value an instant late is
        // answered as one sent an instant earlier would be.
        self.draining.store(true, Ordering::Relaxed);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::Lifecycle;

    #[test]
    fn draining_is_shared_by_clones_and_stays() {
        let lifecycle = Lifecycle::default();
        let probe = lifecycle.clone();
        assert!(!probe.is_draining());
        lifecycle.start_draining();
        assert!(probe.is_draining());
        lifecycle.start_draining();
        assert!(probe.is_draining());
    }
}
