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
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct EventRow {
    pub intent_id: i64,
    /// The source that received it first.
    pub source: String,
    /// The scope its event id is unique in (docs/once-per-payment.md).
    pub scope: String,
    pub event_id: String,
    pub event_type: String,
    pub status: String,
    pub reason: Option<String>,
    pub account_id: Option<String>,
    pub currency: Option<String>,
    /// The signed effect: positive credits, negative debits.
    pub amount_minor: Option<i64>,
    pub object_id: Option<String>,
    /// The provider payment it credits or reverses.
    pub payment_ref: Option<String>,
    pub sequence: Option<i64>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub deliveries: i64,
    pub conflicts: i64,
    pub payload_sha256: String,
    pub first_received_at: DateTime<Utc>,
    pub last_received_at: DateTime<Utc>,
    /// Arrived below its account's sequence guard (applied late or stale).
    pub late: bool,
    /// `webhook`, or `reconcile` for an event fetched from the provider's
    /// records.
    pub origin: String,
}

/// An event with its raw payload, for the detail view.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct EventDetailRow {
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub event: EventRow,
    /// The body as received: JSON text when it is UTF-8 (`payload`), else
    /// `payload_base64`.
    #[serde(rename = "payload", serialize_with = "payload_text")]
    #[schema(value_type = Option<String>)]
    pub payload: Vec<u8>,
    #[sqlx(skip)]
    pub payload_base64: Option<String>,
    /// When retention emptied the payload (its hash is kept).
    pub payload_purged_at: Option<DateTime<Utc>>,
    /// For a `duplicate_effect`: the event that credited the payment.
    pub credited_by_source: Option<String>,
    pub credited_by_event: Option<String>,
    /// The headers the source's scheme read on the first delivery, as a
    /// JSON object (none for events stored before they were kept).
    #[serde(serialize_with = "json_object")]
    #[schema(value_type = Option<std::collections::HashMap<String, String>>)]
    pub signature_headers: Option<String>,
    /// The time the signature covered (unix seconds), where signed.
    pub signed_at: Option<i64>,
    /// The event id the signature covered outside the body, where signed.
    pub signed_event_id: Option<String>,
    /// The SHA-256 of the latest redelivered body that differed.
    pub conflict_sha256: Option<String>,
    /// The event id (same scope) a replay applied this event's payload
    /// under, when the current config maps it to another key.
    pub replayed_into: Option<String>,
    /// The event whose replay created this one, for such a re-keyed replay.
    pub replayed_from: Option<String>,
}

impl EventDetailRow {
    /// The payload as text, if it is UTF-8.
    pub fn payload_text(&self) -> Option<&str> {
        std::str::from_utf8(&self.payload).ok()
    }
}

impl EventDetailRow {
    /// The headers received, as (name, value) pairs by name.
    pub fn signature_headers(&self) -> Vec<(String, String)> {
        let object = self
            .signature_headers
            .as_deref()
            .and_then(|text| {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).ok()
            })
            .unwrap_or_default();
        object
            .into_iter()
            .map(|(name, value)| (name, value.as_str().unwrap_or_default().to_owned()))
            .collect()
    }
}

/// Stored JSON text written out as the JSON it is.
fn json_object<S: serde::Serializer>(
    text: &Option<String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let value = text
        .as_deref()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
    serializer.serialize_some(&value)
}

fn payload_text<S: serde::Serializer>(payload: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_some(&std::str::from_utf8(payload).ok())
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct BalanceRow {
    pub account_id: String,
    pub currency: String,
    pub balance_minor: i64,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct LedgerEntryRow {
    pub entry_id: i64,
    pub source: String,
    pub event_id: String,
    pub account_id: String,
    pub currency: String,
    pub amount_minor: i64,
    pub balance_after_minor: i64,
    /// Its number among the postings of its account and currency.
    pub account_seq: i64,
    pub object_id: Option<String>,
    pub operator_applied: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AuditRow {
    pub audit_id: i64,
    pub action: String,
    pub source: String,
    /// The event acted on; none for account-level actions (skip gap).
    pub event_id: Option<String>,
    pub account_id: Option<String>,
    pub previous_status: String,
    pub actor: String,
    pub note: Option<String>,
    /// What an account-level action did.
    pub detail: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// An account of a source with events parked behind a gap.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct GapRow {
    pub source: String,
    pub account_id: String,
    /// The last number applied (or skipped): the next expected is one more.
    pub guard: i64,
    pub waiting: i64,
    pub lowest_waiting: i64,
    pub highest_waiting: i64,
    /// When the oldest parked event arrived: the gap is at least this old.
    pub waiting_since: DateTime<Utc>,
}

/// An account of a source with events held for an operator.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct HeldAccountRow {
    pub source: String,
    pub account_id: String,
    pub held: i64,
    /// Of them, held as late (a guard reset may release these).
    pub stale: i64,
    pub lowest_sequence: Option<i64>,
    pub highest_sequence: Option<i64>,
}
