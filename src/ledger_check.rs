//! The ledger check's latest result: the invariant check, which the task
//! (`background/invariants.rs`) runs every few minutes and at start-up, so
//! the dashboard and the metrics can say whether the ledger holds and when
//! that was last seen. `/admin/api/check` runs it on demand and records its
//! result here too.

use std::sync::Mutex;

use crate::store::Violation;
use chrono::{DateTime, Utc};

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
