//! The ledger invariant check, run at start-up and then every [`INTERVAL`]
//! (longer after a long check: [`PAUSE_PER_CHECK`]); its
//! latest result is kept in the app state's
//! [`InvariantWatch`](crate::ledger_check::InvariantWatch).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::context::Context;
use crate::ledger_check::LastCheck;

/// The check reads the whole ledger (linear in its size): often enough to
/// notice a fault within minutes, rarely enough to cost nothing.
pub const INTERVAL: Duration = Duration::from_secs(600);

/// The pause after a check is at least this many times what it took, so
/// that the check never holds a database connection more than 1% of the
/// time, however large the ledger. It took 3 s at a million stored
/// events on PostgreSQL and 36 s at ten million (BENCHMARKS.md,
/// 2026-12-06): the pause stays [`INTERVAL`] up to a few million events
/// and is about an hour at ten million.
const PAUSE_PER_CHECK: u32 = 99;

/// How long to wait after a check that took `took`.
fn pause_after(took: Duration) -> Duration {
    INTERVAL.max(took.saturating_mul(PAUSE_PER_CHECK))
}

pub fn spawn(context: Arc<Context>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let started = std::time::Instant::now();
            // What a version before chains wrote (before the upgrade, or
            // beside this one during it) is linked first.
            match context.store.link_unlinked(context.clock.now()).await {
                Ok(linked) if linked.chains > 0 => tracing::info!(
                    chains = linked.chains,
                    "linked the entries written without a link"
                ),
                Ok(_) => {}
                Err(error) => tracing::warn!("unlinked entries could not be linked: {error}"),
            }
            let outcome = context
                .store
                .check_invariants()
                .await
                .map_err(|e| e.to_string());
            match &outcome {
                Ok(violations) if !violations.is_empty() => {
                    tracing::error!(
                        violations = violations.len(),
                        "ledger invariants violated: see /admin/api/check"
                    );
                }
                Err(error) => tracing::warn!("invariant check could not run: {error}"),
                Ok(_) => {}
            }
            context.invariants.record(LastCheck {
                at: context.clock.now(),
                outcome,
            });
            tokio::time::sleep(pause_after(started.elapsed())).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_check_waits_longer_before_the_next() {
        assert_eq!(pause_after(Duration::from_secs(1)), INTERVAL);
        assert_eq!(pause_after(Duration::from_secs(6)), INTERVAL);
        assert_eq!(
            pause_after(Duration::from_secs(70)),
            Duration::from_secs(6_930)
        );
    }
}
