//! The use case at the heart of hookledger: one verified, normalised event ->
//! ONE database transaction -> an [`Outcome`]. This module and its children
//! are the only place that decides an event's status.
//!
//! Per delivery, in one transaction:
//! 1. insert the intent for (source, event_id), or count a redelivery (and a
//!    conflict if the body differs) and stop: a duplicate has no other effect;
//! 2. an event with no balance effect is `ignored`; one whose effect cannot be
//!    applied is `rejected` (held);
//! 3. the source's ordering policy decides against the per-(source, account)
//!    sequence guard: [`high_water`] (apply in order, late events by
//!    `on_stale`) or [`contiguous`] (apply the next number and release what
//!    waited behind it, park later numbers);
//! 4. the balance changes and the ledger entry is written.
//!
//! The intent is inserted as `applied` for a posting and corrected in the same
//! transaction when the decision is another, which saves the common path a
//! statement; no other transaction can see the interim value.

mod contiguous;
mod high_water;
mod late;
pub(crate) mod release;

use chrono::{DateTime, Utc};

use crate::domain::{EventId, Movement, NormalisedEvent, OrderingMode, Posting, Status};
use crate::source::Source;
use crate::store::{IntentUpsert, NewIntent, NewLedgerEntry, Store, StoreError, WriteTx};

pub use release::{Released, drain_account};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub event_id: EventId,
    pub status: Status,
    pub duplicate: bool,
    /// A redelivery whose body differs from the stored one.
    pub conflict: bool,
    /// The event arrived below its account's sequence guard.
    pub late: bool,
    /// Parked events this delivery released and applied after its own.
    pub released: u64,
    /// The release stopped at its per-transaction bound with more parked
    /// events ready: the drain task must go on.
    pub backlog: bool,
}

/// The raw delivery the event was mapped from.
pub struct RawDelivery<'a> {
    pub payload: &'a str,
    pub payload_sha256: &'a str,
    pub received_at: DateTime<Utc>,
}

/// What an ordering decision did with a posting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decided {
    status: Status,
    late: bool,
    released: u64,
    backlog: bool,
}

impl Decided {
    fn status(status: Status) -> Self {
        Self {
            status,
            late: false,
            released: 0,
            backlog: false,
        }
    }
}

/// A posting being decided: the new intent and what it asks of a balance.
struct Posted<'a> {
    intent_id: i64,
    source: &'a Source,
    event: &'a NormalisedEvent,
    posting: &'a Posting,
    now: DateTime<Utc>,
}

impl Posted<'_> {
    fn account(&self) -> &str {
        self.posting.account.as_str()
    }

    /// Posts this event's own effect.
    async fn apply(&self, tx: &mut WriteTx) -> Result<i64, StoreError> {
        let entry = LedgerPosting {
            intent_id: self.intent_id,
            source: self.source.name.as_str(),
            event_id: self.event.event_id.as_str(),
            account_id: self.account(),
            currency: self.posting.currency.code(),
            amount_minor: self.posting.signed_amount(),
            object_id: self.event.object_id.as_deref(),
            operator_applied: false,
        };
        post_to_ledger(tx, &entry, self.now).await
    }

    /// Corrects the new intent's status (inserted as `applied`).
    async fn set_status(
        &self,
        tx: &mut WriteTx,
        status: Status,
        reason: &str,
        late: bool,
    ) -> Result<(), StoreError> {
        tx.set_intent_status(self.intent_id, status, reason, late)
            .await
    }

    async fn reject(&self, tx: &mut WriteTx, reason: &str) -> Result<Decided, StoreError> {
        self.set_status(tx, Status::Rejected, reason, false).await?;
        Ok(Decided::status(Status::Rejected))
    }
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
    let now = raw.received_at;
    let mut intent = NewIntent {
        source: source.name.as_str(),
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
    let outcome = |decided: Decided, duplicate, conflict| Outcome {
        event_id: event.event_id.clone(),
        status: decided.status,
        duplicate,
        conflict,
        late: decided.late,
        released: decided.released,
        backlog: decided.backlog,
    };

    let mut tx = store.begin().await?;
    let intent_id = match tx.insert_intent(&intent).await? {
        IntentUpsert::Duplicate { status, conflict } => {
            tx.commit().await?;
            return Ok(outcome(Decided::status(status), true, conflict));
        }
        IntentUpsert::Inserted { intent_id } => intent_id,
    };
    let decided = match movement {
        Movement::None => Decided::status(Status::Ignored),
        Movement::Rejected(_) => Decided::status(Status::Rejected),
        Movement::Post(posting) => {
            let posted = Posted {
                intent_id,
                source,
                event,
                posting,
                now,
            };
            match source.ordering.mode {
                OrderingMode::HighWater => high_water::decide(&mut tx, &posted).await?,
                OrderingMode::Contiguous => contiguous::decide(&mut tx, &posted).await?,
            }
        }
    };
    tx.commit().await?;
    Ok(outcome(decided, false, false))
}

/// A balance movement about to be posted, by ingest, a release or an operator.
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
