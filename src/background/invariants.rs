//! The ledger invariant check, run every [`INTERVAL`] (and at start-up); its
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

pub fn spawn(context: Arc<Context>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
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
            tokio::time::sleep(INTERVAL).await;
        }
    })
}
