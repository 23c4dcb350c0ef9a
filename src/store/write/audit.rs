//! The audit log: one row per operator action, written in the action's own
//! transaction, linked to the row before it (`store::chain::audit`).

use chrono::{DateTime, Utc};

use crate::domain::Status;

/// An audit row: about one event, or (skip gap) about one account.
pub struct NewAudit<'a> {
    pub action: &'a str,
    pub source: &'a str,
    pub event_id: Option<&'a str>,
    pub account_id: Option<&'a str>,
    pub previous_status: Status,
    pub actor: &'a str,
    pub note: Option<&'a str>,
    /// What the action did, for account-level actions.
    pub detail: Option<&'a str>,
    pub created_at: DateTime<Utc>,
}
