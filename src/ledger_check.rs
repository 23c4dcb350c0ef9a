//! The ledger check's latest result: the invariant check and the walk of
//! the hash chains, which the task (`background/invariants.rs`) runs every
//! few minutes and at start-up, so the dashboard and the metrics can say
//! whether the ledger holds and when that was last seen.
//! `/admin/api/check` and `/admin/api/verify` run them on demand and
//! record their results here too.

use std::sync::Mutex;

use crate::store::Violation;
use crate::store::chain::Break;
use chrono::{DateTime, Utc};

#[derive(Debug, Clone)]
pub struct LastCheck {
    pub at: DateTime<Utc>,
    /// The violations found, or why the check could not run.
    pub outcome: Result<Vec<Violation>, String>,
}

/// The latest walk of the hash chains (`store::chain`): incremental in
/// the periodic check, whole at start-up and on demand.
#[derive(Debug, Clone)]
pub struct LastVerify {
    pub at: DateTime<Utc>,
    /// Entries walked.
    pub entries: u64,
    /// The first break of each broken chain, or why the walk could not run.
    pub outcome: Result<Vec<Break>, String>,
}

#[derive(Debug, Default)]
pub struct InvariantWatch {
    last: Mutex<Option<LastCheck>>,
    chains: Mutex<Option<LastVerify>>,
}

impl InvariantWatch {
    pub fn record(&self, check: LastCheck) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(check);
    }

    /// The latest result, if a check has run since start.
    pub fn last(&self) -> Option<LastCheck> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn record_chains(&self, verify: LastVerify) {
        *self.chains.lock().unwrap_or_else(|e| e.into_inner()) = Some(verify);
    }

    /// The latest walk of the chains, if one has run since start.
    pub fn last_chains(&self) -> Option<LastVerify> {
        self.chains
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
