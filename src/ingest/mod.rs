//! The use case at the heart of hookledger: verified, normalised events ->
//! ONE database transaction -> an [`Outcome`] per event. This module and its
//! children are the only place that decides an event's status.
//!
//! Per event, in the delivery's transaction (a batch, as Adyen sends, is
//! several events in one):
//! 1. insert the intent for (scope, event_id), or count a redelivery (and a
//!    conflict if the body differs) and stop: a duplicate has no other effect
//!    (the scope is the source's, or shared by the sources of a kind whose
//!    ids are provider-wide: one event sent to two endpoints applies once);
//! 2. an event with no balance effect is `ignored`; one whose effect cannot be
//!    applied is `rejected` (held);
//! 3. a refund or dispute is matched to its payment ([`reverse`]): `unmatched`
//!    until the payment is credited, then an ordinary posting on the
//!    payment's account;
//! 4. the source's ordering policy decides against the per-(source, account)
//!    sequence guard: [`high_water`] (apply in order, late events by
//!    `on_stale`) or [`contiguous`] (apply the next number and release what
//!    waited behind it, park later numbers);
//! 5. [`settle`] checks what the posting may do (a payment credited once, a
//!    refund within what its payment has left, `negative_balance`) and posts
//!    the balance change and the ledger entry, or refuses and the event gets
//!    a status with the reason (a second credit of one payment is
//!    `duplicate_effect`, never applied).
//!
//! The intent is inserted as `applied` for a posting and corrected in the same
//! transaction when the decision is another, which saves the common path a
//! statement; no other transaction can see the interim value.

mod backlog;
mod contiguous;
mod group_commit;
mod high_water;
mod ingestor;
mod intent;
mod keys;
mod late;
mod ledger;
mod order;
mod outcome;
mod posted;
mod redelivery;
pub(crate) mod release;
mod replay;
mod reverse;
mod run_length;
mod run_of_postings;
pub(crate) mod settle;

use chrono::{DateTime, Utc};

use crate::domain::{Movement, NormalisedEvent, OrderingMode, Status};
use crate::source::Source;
use crate::store::{IntentUpsert, Store, StoreError, WriteTx};
use intent::{event_payload, new_intent};
use outcome::Decided;
use posted::Posted;

pub use backlog::DrainSignal;
pub use group_commit::{GROUP_MAX, GroupCounts, commit_together, commit_together_counted};
pub use ingestor::{Ingestor, ingest_direct};
pub use intent::{RawDelivery, sha256_hex};
pub(crate) use ledger::{LedgerPosting, post_to_ledger};
pub use outcome::Outcome;
pub use release::{Released, drain_account};
pub use replay::{Replay, rekey, rerun};
pub use reverse::{lock_release_guards, release_stranded, release_unmatched};

/// Stores and decides every event of one delivery in one transaction.
pub async fn ingest(
    store: &Store,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Result<Vec<Outcome>, StoreError> {
    let mut tx = store.begin().await?;
    if tx.takes_keys() {
        let keys = keys::of_events(events.iter().map(|event| (source.scope.as_str(), event)));
        tx.lock_keys(keys).await?;
    }
    let mut outcomes = Vec::with_capacity(events.len());
    for event in events {
        outcomes.push(run(&mut tx, source, event, raw).await?);
    }
    tx.commit().await?;
    Ok(outcomes)
}

/// One event, inside the delivery's transaction.
async fn run(
    tx: &mut WriteTx,
    source: &Source,
    event: &NormalisedEvent,
    raw: &RawDelivery<'_>,
) -> Result<Outcome, StoreError> {
    let now = raw.received_at;
    let (body, sha256) = event_payload(event, raw);
    let intent = new_intent(source, event, raw, (body, &sha256));
    let outcome = |decided: Decided, duplicate, conflict| Outcome {
        event_id: event.event_id.clone(),
        status: decided.status,
        duplicate,
        conflict,
        late: decided.late,
        released: decided.released,
        backlog: decided.backlog,
    };
    let intent_id = match tx.insert_intent(&intent).await? {
        IntentUpsert::Duplicate { status, conflict } => {
            return Ok(outcome(Decided::status(status), true, conflict));
        }
        IntentUpsert::Inserted { intent_id } => intent_id,
    };
    let decided = decide_new(tx, source, event, intent_id, now).await?;
    Ok(outcome(decided, false, false))
}

/// Decides an event whose intent this transaction has just written (as
/// `new_intent` makes it): a new delivery's, or a replay's.
async fn decide_new(
    tx: &mut WriteTx,
    source: &Source,
    event: &NormalisedEvent,
    intent_id: i64,
    now: DateTime<Utc>,
) -> Result<Decided, StoreError> {
    Ok(match &event.movement {
        Movement::None => Decided::status(Status::Ignored),
        Movement::Rejected(_) => Decided::status(Status::Rejected),
        Movement::Post(posting) => {
            let posted = Posted {
                intent_id,
                source,
                recorded_by: source.name.as_str(),
                event_id: event.event_id.as_str(),
                object_id: event.object_id.as_deref(),
                posting,
                reversal_total: None,
                now,
            };
            if let Some((payment, _)) = posting.link.paid() {
                // Before the guard: lock order intent -> payment -> guards
                // (in name order, see lock_release_guards) -> balance.
                tx.lock_payment(&source.scope, payment, now).await?;
                reverse::lock_release_guards(
                    tx,
                    &source.scope,
                    payment,
                    source.name.as_str(),
                    posting.account.as_str(),
                    now,
                )
                .await?;
            }
            decide_posting(tx, &posted).await?
        }
        Movement::Reverse(request) => {
            reverse::decide(tx, source, event, intent_id, request, now).await?
        }
    })
}

/// A new posting's ordering decision, then the reversals its payment's
/// credit releases, decided against the guard as the decision left it.
/// Which decisions release: every high-water one; of the
/// contiguous ones only a late one (`late.rs`), not the next number
/// applied in order, whose own release is of the events parked behind it.
/// A decision that did not apply a credit of a payment releases nothing.
async fn decide_posting(tx: &mut WriteTx, posted: &Posted<'_>) -> Result<Decided, StoreError> {
    let decided = order::decide(tx, posted).await?;
    let releases = match posted.source.ordering.mode {
        OrderingMode::HighWater => true,
        OrderingMode::Contiguous => decided.late,
    };
    if releases {
        release_by_payment(tx, posted, decided).await
    } else {
        Ok(decided)
    }
}

/// A payment's credit, once applied, applies the refunds and disputes
/// that arrived before it (in the same transaction).
async fn release_by_payment(
    tx: &mut WriteTx,
    posted: &Posted<'_>,
    decided: Decided,
) -> Result<Decided, StoreError> {
    match posted.posting.link.paid() {
        Some((payment, _)) if decided.status == Status::Applied => {
            let released =
                reverse::release_unmatched(tx, posted.source, payment, posted.now).await?;
            Ok(Decided {
                released: decided.released + released,
                ..decided
            })
        }
        _ => Ok(decided),
    }
}
