//! The ledger invariant check, run every [`INTERVAL`] (and at start-up) so
//! the dashboard and the metrics can say whether the ledger holds and when
//! that was last seen. `/admin/api/check` runs it on demand and records its
//! result here too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;

use crate::context::Context;
use crate::store::Violation;

/// The check reads the whole ledger (linear in its size): often enough to
/// notice a fault within minutes, rarely enough to cost nothing.
pub const INTERVAL: Duration = Duration::from_secs(600);

#[derive(Debug, Clone)]
pub struct LastCheck {
    pub at: DateTime<Utc>,
    /// The violations found, or why the check could not run.
    pub outcome: Result<Vec<Violation>, String>,
}

#[derive(Debug, Default)]
pub struct InvariantWatch {
    last: Mutex<Option<LastCheck>>,
}

impl InvariantWatch {
    pub fn record(&self, check: LastCheck) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(check);
    }

    /// The latest result, if a check has run since start.
    pub fn last(&self) -> Option<LastCheck> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

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
