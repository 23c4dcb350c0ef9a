//! The intent row's primitives: the insert (or redelivery count) every
//! delivery starts with, the status its own transaction corrects, and the
//! claim an operator action takes a held intent with.

use chrono::{DateTime, Utc};

use super::super::rows::{self, IntentUpsertRow};
use super::{StoreError, WriteTx};
use crate::domain::{Origin, Status};

/// A new intent row, with the status it gets if it is the first delivery.
pub struct NewIntent<'a> {
    pub source: &'a str,
    /// The intent key is (scope, event_id).
    pub scope: &'a str,
    pub event_id: &'a str,
    pub event_type: &'a str,
    pub status: Status,
    pub reason: Option<&'a str>,
    pub account_id: Option<&'a str>,
    pub currency: Option<&'a str>,
    pub amount_minor: Option<i64>,
    pub object_id: Option<&'a str>,
    pub sequence: Option<i64>,
    pub occurred_at: Option<DateTime<Utc>>,
    pub payload_sha256: &'a str,
    /// The exact bytes received (or a batch item's own JSON).
    pub payload: &'a [u8],
    pub received_at: DateTime<Utc>,
    /// The headers its scheme read, as a JSON object.
    pub signature_headers: Option<&'a str>,
    /// The time its signature covered (unix seconds).
    pub signed_at: Option<i64>,
    /// The event id its signature covered outside the body.
    pub signed_event_id: Option<&'a str>,
    /// A webhook's, or fetched by a reconcile run.
    pub origin: Origin,
    /// The provider payment this event credits (`reversal` none) or
    /// reverses.
    pub payment_ref: Option<&'a str>,
    /// `each` or `total`, for a reversal.
    pub reversal: Option<&'a str>,
    pub reversal_total: Option<i64>,
    pub undoes: Option<&'a str>,
    /// A credit of one part of a payment captured in parts.
    pub partial: bool,
}

/// What `insert_intent` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentUpsert {
    /// First delivery: the row was inserted with the given status.
    Inserted { intent_id: i64 },
    /// Redelivery: counted on the existing row, which has this status;
    /// `conflict` if this delivery's body differs from the stored one.
    Duplicate { status: Status, conflict: bool },
}

/// A held intent an operator action has just taken over.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub intent_id: i64,
    pub scope: String,
    pub account_id: Option<String>,
    pub currency: Option<String>,
    pub amount_minor: Option<i64>,
    pub object_id: Option<String>,
    pub event_sequence: Option<i64>,
    pub payment_ref: Option<String>,
    pub reversal: Option<String>,
    pub reversal_total: Option<i64>,
    pub undoes: Option<String>,
    pub partial: bool,
}

/// Inserts the intent, or on a redelivery counts it (and a conflict when the
/// body differs) without touching anything else; the stored payload is never
/// overwritten. One statement answers both cases: `deliveries` is 1 only on
/// the insert path, since the update path always increments it.
/// The key is (scope, event_id): a source of the same scope that recorded
/// the event first owns the row, and this delivery counts on it. A row a
/// reconcile run stored holds the provider API's rendering of the event, so
/// a webhook's body for it differs as bytes: no conflict, unless the row is
/// `rejected` (the API may render an event at another API version than the
/// webhook endpoint's, and a mapping that failed on one rendering is worth
/// a person's look at the other: its digest is kept as for any conflict).
/// Race-free: PostgreSQL makes a concurrent insert of the same key wait for
/// the first transaction, then take the update path; SQLite runs one writer.
pub(in crate::store) const INSERT_INTENT: &str = "
insert into intents (source, scope, event_id, event_type, status, reason, account_id, currency,
    amount_minor, object_id, event_sequence, occurred_at, deliveries, conflicts,
    payload_sha256, payload, first_received_at, last_received_at, payment_ref, reversal,
    reversal_total, undoes, partial, signature_headers, signed_at, signed_event_id, origin)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, 0, $13, $14, $15, $15, $16, $17,
    $18, $19, $20, $21, $22, $23, $24)
on conflict (scope, event_id) do update
set deliveries = intents.deliveries + 1,
    conflicts = intents.conflicts
        + case when intents.payload_sha256 = excluded.payload_sha256
            or ((intents.origin = 'reconcile' or excluded.origin = 'reconcile')
                and intents.status <> 'rejected') then 0 else 1 end,
    conflict_sha256 = case when intents.payload_sha256 = excluded.payload_sha256
            or ((intents.origin = 'reconcile' or excluded.origin = 'reconcile')
                and intents.status <> 'rejected')
        then intents.conflict_sha256 else excluded.payload_sha256 end,
    last_received_at = excluded.last_received_at
returning intent_id, status, deliveries, payload_sha256";

/// Corrects the status this transaction gave its own new intent (the row
/// is locked by the insert on both backends).
const SET_INTENT_STATUS: &str = "
update intents set status = $2, reason = $3, late = $4 where intent_id = $1";

/// Moves an intent from one status to another for an operator action, only
/// if it is in `from` now. The test and the change are one statement: of two
/// concurrent actions, PostgreSQL makes the second wait for the first's row
/// lock and then re-evaluates `status = $3` on the committed row, so exactly
/// one gets the row back; SQLite runs one writer at a time.
const CLAIM_INTENT: &str = "
update intents set status = $4
where source = $1 and event_id = $2 and status = $3
returning intent_id, scope, account_id, currency, amount_minor, object_id, event_sequence,
    payment_ref, reversal, reversal_total, undoes, partial";

const INTENT_STATUS: &str = "
select status from intents where source = $1 and event_id = $2";

impl WriteTx {
    pub async fn insert_intent(&mut self, new: &NewIntent<'_>) -> Result<IntentUpsert, StoreError> {
        let row: IntentUpsertRow = on_tx!(self, conn => sqlx::query_as(INSERT_INTENT)
            .bind(new.source)
            .bind(new.scope)
            .bind(new.event_id)
            .bind(new.event_type)
            .bind(new.status.as_str())
            .bind(new.reason)
            .bind(new.account_id)
            .bind(new.currency)
            .bind(new.amount_minor)
            .bind(new.object_id)
            .bind(new.sequence)
            .bind(new.occurred_at)
            .bind(new.payload_sha256)
            .bind(new.payload)
            .bind(new.received_at)
            .bind(new.payment_ref)
            .bind(new.reversal)
            .bind(new.reversal_total)
            .bind(new.undoes)
            .bind(new.partial)
            .bind(new.signature_headers)
            .bind(new.signed_at)
            .bind(new.signed_event_id)
            .bind(new.origin.as_str())
            .fetch_one(conn)
            .await)?;
        Ok(if row.deliveries == 1 {
            // Inserted `rejected` is final (an event whose effect cannot be
            // read); every other status is decided further on.
            if new.status == Status::Rejected {
                self.enqueue_status(row.intent_id, Status::Rejected, new.received_at)
                    .await?;
            }
            IntentUpsert::Inserted {
                intent_id: row.intent_id,
            }
        } else {
            IntentUpsert::Duplicate {
                status: row.status()?,
                conflict: row.payload_sha256 != new.payload_sha256,
            }
        })
    }

    /// Changes the status of an intent this transaction inserted; `late`
    /// marks an event that arrived below its account's guard. The status
    /// is final for this transaction: its message is written with it.
    pub async fn set_intent_status(
        &mut self,
        intent_id: i64,
        status: Status,
        reason: &str,
        late: bool,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        on_tx!(self, conn => sqlx::query(SET_INTENT_STATUS)
            .bind(intent_id)
            .bind(status.as_str())
            .bind(reason)
            .bind(late)
            .execute(conn)
            .await
            .map(drop))?;
        self.enqueue_status(intent_id, status, now).await
    }

    /// Moves the intent from `from` to `to` if it is in `from` now (and
    /// writes the message `to` is told by).
    pub async fn claim_intent(
        &mut self,
        source: &str,
        event_id: &str,
        (from, to): (Status, Status),
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>, StoreError> {
        let claimed: Option<Claimed> = on_tx!(self, conn => sqlx::query_as(CLAIM_INTENT)
            .bind(source)
            .bind(event_id)
            .bind(from.as_str())
            .bind(to.as_str())
            .fetch_optional(conn)
            .await)?;
        if let Some(claimed) = &claimed {
            self.enqueue_status(claimed.intent_id, to, now).await?;
        }
        Ok(claimed)
    }

    pub async fn intent_status(
        &mut self,
        source: &str,
        event_id: &str,
    ) -> Result<Option<Status>, StoreError> {
        let row: Option<(String,)> = on_tx!(self, conn => sqlx::query_as(INTENT_STATUS)
            .bind(source)
            .bind(event_id)
            .fetch_optional(conn)
            .await)?;
        row.map(|(status,)| rows::parse_status(&status)).transpose()
    }
}
