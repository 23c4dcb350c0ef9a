//! Row types read back from the database. Column names are the admin API's
//! JSON names, so the API serialises these directly.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::StoreError;
use crate::domain::Status;

#[derive(Debug, sqlx::FromRow)]
pub(super) struct IntentUpsertRow {
    pub intent_id: i64,
    pub status: String,
    pub deliveries: i64,
    pub payload_sha256: String,
}

impl IntentUpsertRow {
    pub fn status(&self) -> Result<Status, StoreError> {
        parse_status(&self.status)
    }
}

pub(super) fn parse_status(text: &str) -> Result<Status, StoreError> {
    text.parse()
        .map_err(|e| StoreError::Corrupt(format!("intents.status: {e}")))
}

/// An event (intent row) without its payload, for lists.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EventRow {
    pub intent_id: i64,
    pub source: String,
    pub event_id: String,
    pub event_type: String,
    pub status: String,
    pub reason: Option<String>,
    pub account_id: Option<String>,
    pub currency: Option<String>,
    /// The signed effect: positive credits, negative debits.
    pub amount_minor: Option<i64>,
    pub object_id: Option<String>,
    pub sequence: Option<i64>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub deliveries: i64,
    pub conflicts: i64,
    pub payload_sha256: String,
    pub first_received_at: DateTime<Utc>,
    pub last_received_at: DateTime<Utc>,
}

/// An event with its raw payload, for the detail view.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EventDetailRow {
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub event: EventRow,
    pub payload: String,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct BalanceRow {
    pub account_id: String,
    pub currency: String,
    pub balance_minor: i64,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct LedgerEntryRow {
    pub entry_id: i64,
    pub source: String,
    pub event_id: String,
    pub account_id: String,
    pub currency: String,
    pub amount_minor: i64,
    pub balance_after_minor: i64,
    pub object_id: Option<String>,
    pub operator_applied: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct AuditRow {
    pub audit_id: i64,
    pub action: String,
    pub source: String,
    pub event_id: String,
    pub previous_status: String,
    pub actor: String,
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
}
