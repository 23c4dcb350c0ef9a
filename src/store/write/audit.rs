//! The audit log: one row per operator action, written in the action's own
//! transaction.

use chrono::{DateTime, Utc};

use super::{StoreError, WriteTx};
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

const INSERT_AUDIT: &str = "
insert into audit_log (action, source, event_id, account_id, previous_status, actor, note,
    detail, created_at)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
returning audit_id";

impl WriteTx {
    /// Writes the audit row; returns its id.
    pub async fn insert_audit(&mut self, audit: &NewAudit<'_>) -> Result<i64, StoreError> {
        let (audit_id,): (i64,) = on_tx!(self, conn => sqlx::query_as(INSERT_AUDIT)
            .bind(audit.action)
            .bind(audit.source)
            .bind(audit.event_id)
            .bind(audit.account_id)
            .bind(audit.previous_status.as_str())
            .bind(audit.actor)
            .bind(audit.note)
            .bind(audit.detail)
            .bind(audit.created_at)
            .fetch_one(conn)
            .await)?;
        Ok(audit_id)
    }
}
