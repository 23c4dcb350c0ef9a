//! The use case at the heart of hookledger: one verified, normalised event ->
//! ONE database transaction -> an [`Outcome`]. This is the only place that
//! decides an event's status.
//!
//! Per delivery, in one transaction:
//! 1. insert the intent for (source, event_id), or count a redelivery (and a
//!    conflict if the body differs) and stop: a duplicate has no other effect;
//! 2. an event with no balance effect is `ignored`; one whose effect cannot be
//!    applied is `rejected` (held);
//! 3. the per-(source, account) sequence guard moves up, or the event is older
//!    than it: `stale` (held) or, with `on_stale = apply`, applied anyway;
//! 4. the balance changes and the ledger entry is written.
//!
//! The intent is inserted as `applied` for a posting and corrected to `stale`
//! in the same transaction in the rare out-of-order case, which saves the
//! common path a statement; no other transaction can see the interim value.

use chrono::{DateTime, Utc};

use crate::domain::{EventId, Movement, NormalisedEvent, Status};
use crate::source::{OnStale, Source};
use crate::store::{IntentUpsert, NewIntent, NewLedgerEntry, Store, StoreError, WriteTx};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub event_id: EventId,
    pub status: Status,
    pub duplicate: bool,
    /// A redelivery whose body differs from the stored one.
    pub conflict: bool,
}

/// The raw delivery the event was mapped from.
pub struct RawDelivery<'a> {
    pub payload: &'a str,
    pub payload_sha256: &'a str,
    pub received_at: DateTime<Utc>,
}

pub async fn ingest(
    store: &Store,
    source: &Source,
    event: &NormalisedEvent,
    raw: &RawDelivery<'_>,
) -> Result<Outcome, StoreError> {
    match (
        run(store, source, event, &event.movement, raw).await,
        &event.movement,
    ) {
        (Err(StoreError::BalanceLimit { .. }), Movement::Post(posting)) => {
            // The whole transaction rolled back. Record the event as rejected
            // instead, so it is held for an operator rather than answered 500
            // and retried until the provider gives up.
            let reason = "the balance would leave the supported range (±2^62 minor units)";
            let held = Movement::Rejected(posting.reject(reason));
            run(store, source, event, &held, raw).await
        }
        (outcome, _) => outcome,
    }
}

/// One attempt: the transaction for `event` with `movement`.
async fn run(
    store: &Store,
    source: &Source,
    event: &NormalisedEvent,
    movement: &Movement,
    raw: &RawDelivery<'_>,
) -> Result<Outcome, StoreError> {
    let source_name = source.name.as_str();
    let now = raw.received_at;
    let mut intent = NewIntent {
        source: source_name,
        event_id: event.event_id.as_str(),
        event_type: &event.event_type,
        status: Status::Ignored,
        reason: None,
        account_id: None,
        currency: None,
        amount_minor: None,
        object_id: event.object_id.as_deref(),
        sequence: None,
        occurred_at: event.occurred_at,
        payload_sha256: raw.payload_sha256,
        payload: raw.payload,
        received_at: now,
    };
    match movement {
        Movement::None => {}
        Movement::Rejected(rejection) => {
            intent.status = Status::Rejected;
            intent.reason = Some(&rejection.reason);
            intent.account_id = rejection.account.as_ref().map(|a| a.as_str());
            intent.currency = rejection.currency.as_ref().map(|c| c.code());
            intent.amount_minor = rejection.signed_amount;
            intent.sequence = rejection.sequence;
        }
        Movement::Post(posting) => {
            intent.status = Status::Applied;
            intent.account_id = Some(posting.account.as_str());
            intent.currency = Some(posting.currency.code());
            intent.amount_minor = Some(posting.signed_amount());
            intent.sequence = Some(posting.sequence);
        }
    }
    let outcome = |status, duplicate, conflict| Outcome {
        event_id: event.event_id.clone(),
        status,
        duplicate,
        conflict,
    };

    let mut tx = store.begin().await?;
    let intent_id = match tx.insert_intent(&intent).await? {
        IntentUpsert::Duplicate { status, conflict } => {
            tx.commit().await?;
            return Ok(outcome(status, true, conflict));
        }
        IntentUpsert::Inserted { intent_id } => intent_id,
    };
    let status = match movement {
        Movement::None => Status::Ignored,
        Movement::Rejected(_) => Status::Rejected,
        Movement::Post(posting) => {
            let account = posting.account.as_str();
            let in_order = tx
                .advance_guard(source_name, account, posting.sequence, now)
                .await?;
            if in_order || source.on_stale == OnStale::Apply {
                if !in_order {
                    tx.set_intent_status(intent_id, Status::Applied, "applied out of order")
                        .await?;
                }
                let entry = LedgerPosting {
                    intent_id,
                    source: source_name,
                    event_id: event.event_id.as_str(),
                    account_id: account,
                    currency: posting.currency.code(),
                    amount_minor: posting.signed_amount(),
                    object_id: event.object_id.as_deref(),
                    operator_applied: false,
                };
                post_to_ledger(&mut tx, &entry, now).await?;
                Status::Applied
            } else {
                let guard = tx
                    .guard_sequence(source_name, account)
                    .await?
                    .unwrap_or_default();
                let reason = format!(
                    "out of order: sequence {} is below {guard}, already applied for this account",
                    posting.sequence
                );
                tx.set_intent_status(intent_id, Status::Stale, &reason)
                    .await?;
                Status::Stale
            }
        }
    };
    tx.commit().await?;
    Ok(outcome(status, false, false))
}

/// A balance movement about to be posted, by ingest or by an operator.
pub(crate) struct LedgerPosting<'a> {
    pub intent_id: i64,
    pub source: &'a str,
    pub event_id: &'a str,
    pub account_id: &'a str,
    pub currency: &'a str,
    /// Signed: positive credits, negative debits.
    pub amount_minor: i64,
    pub object_id: Option<&'a str>,
    pub operator_applied: bool,
}

/// Changes the balance and writes the ledger entry, inside the caller's
/// transaction. Returns the balance after the posting.
pub(crate) async fn post_to_ledger(
    tx: &mut WriteTx,
    posting: &LedgerPosting<'_>,
    now: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let balance_after_minor = tx
        .upsert_balance(
            posting.account_id,
            posting.currency,
            posting.amount_minor,
            now,
        )
        .await?;
    tx.insert_ledger_entry(&NewLedgerEntry {
        intent_id: posting.intent_id,
        source: posting.source,
        event_id: posting.event_id,
        account_id: posting.account_id,
        currency: posting.currency,
        amount_minor: posting.amount_minor,
        balance_after_minor,
        object_id: posting.object_id,
        operator_applied: posting.operator_applied,
        created_at: now,
    })
    .await?;
    Ok(balance_after_minor)
}
