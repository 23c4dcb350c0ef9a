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

mod contiguous;
mod group;
mod high_water;
mod intent;
mod late;
mod ledger;
mod redelivery;
pub(crate) mod release;
mod replay;
mod reverse;
pub(crate) mod settle;
mod writer;

use chrono::{DateTime, Utc};

use crate::domain::{EventId, Link, Movement, NormalisedEvent, OrderingMode, Posting, Status};
use crate::source::Source;
use crate::store::{IntentUpsert, Store, StoreError, WriteTx};
use settle::{Settle, SettleLink, Settled};

pub use group::{GROUP_MAX, Ingestor};
use intent::{event_payload, new_intent};
pub(crate) use ledger::{LedgerPosting, post_to_ledger};
pub use release::{Released, drain_account};
pub use replay::{Replay, rerun};
pub use reverse::{lock_release_guards, release_stranded, release_unmatched};

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

/// The raw delivery the events were mapped from.
pub struct RawDelivery<'a> {
    /// The exact bytes received.
    pub payload: &'a [u8],
    pub payload_sha256: &'a str,
    pub received_at: DateTime<Utc>,
    /// The headers the scheme read, as a JSON object (see
    /// `RecordingHeaders`).
    pub signature_headers: Option<&'a str>,
    /// The time the signature covered, where the scheme signs one.
    pub signed_at: Option<i64>,
    /// The event id the signature covered outside the body, where the
    /// scheme signs one.
    pub signed_event_id: Option<&'a str>,
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

/// A posting being decided: its intent and what it asks of a balance.
pub(crate) struct Posted<'a> {
    pub intent_id: i64,
    /// The source deciding: its ordering policy.
    pub source: &'a Source,
    /// The source the intent row belongs to, whose sequence guard and
    /// ledger entry it takes: the deciding one, or for a reversal released
    /// by a credit another source of the scope received, the one that
    /// received the reversal.
    pub recorded_by: &'a str,
    pub event_id: &'a str,
    pub object_id: Option<&'a str>,
    pub posting: &'a Posting,
    /// For a running-total reversal, the provider's total.
    pub reversal_total: Option<i64>,
    pub now: DateTime<Utc>,
}

impl Posted<'_> {
    fn account(&self) -> &str {
        self.posting.account.as_str()
    }

    fn settle_link(&self) -> SettleLink<'_> {
        match &self.posting.link {
            Link::None => SettleLink::None,
            Link::Pays(payment) => SettleLink::Pays {
                payment,
                part: false,
            },
            Link::PaysPart(payment) => SettleLink::Pays {
                payment,
                part: true,
            },
            Link::Reverses(reversal) => SettleLink::Reverses {
                payment: &reversal.payment_ref,
                total: self.reversal_total,
                undoes: reversal.undoes.as_deref(),
            },
        }
    }

    /// Posts this event's own effect, or records why it may not: the event
    /// ends `applied`, or held (`rejected`) or `ignored` with the reason.
    /// `late` marks an event below its account's guard.
    async fn post(&self, tx: &mut WriteTx, late: bool) -> Result<Decided, StoreError> {
        let negative_balance = match self.source.ordering.mode {
            // An ordered stream is applied as the sender numbered it.
            OrderingMode::Contiguous => crate::domain::NegativeBalance::Allow,
            OrderingMode::HighWater => self.source.negative_balance,
        };
        let settle = Settle {
            scope: &self.source.scope,
            entry: LedgerPosting {
                intent_id: self.intent_id,
                source: self.recorded_by,
                event_id: self.event_id,
                account_id: self.account(),
                currency: self.posting.currency.code(),
                amount_minor: self.posting.signed_amount(),
                object_id: self.object_id,
                operator_applied: false,
            },
            link: self.settle_link(),
            negative_balance,
        };
        match settle::settle(tx, &settle, self.now).await? {
            Settled::Posted { .. } => Ok(Decided {
                late,
                ..Decided::status(Status::Applied)
            }),
            Settled::Refused { status, reason } => {
                self.set_status(tx, status, &reason, late).await?;
                Ok(Decided {
                    late,
                    ..Decided::status(status)
                })
            }
        }
    }

    /// A payment's credit, once applied, applies the refunds and disputes
    /// that arrived before it (in the same transaction).
    async fn release_by_payment(
        &self,
        tx: &mut WriteTx,
        decided: Decided,
    ) -> Result<Decided, StoreError> {
        match self.posting.link.paid() {
            Some((payment, _)) if decided.status == Status::Applied => {
                let released =
                    reverse::release_unmatched(tx, self.source, payment, self.now).await?;
                Ok(Decided {
                    released: decided.released + released,
                    ..decided
                })
            }
            _ => Ok(decided),
        }
    }

    /// Corrects the new intent's status (inserted as `applied`).
    async fn set_status(
        &self,
        tx: &mut WriteTx,
        status: Status,
        reason: &str,
        late: bool,
    ) -> Result<(), StoreError> {
        tx.set_intent_status(self.intent_id, status, reason, late, self.now)
            .await
    }

    async fn reject(&self, tx: &mut WriteTx, reason: &str) -> Result<Decided, StoreError> {
        self.set_status(tx, Status::Rejected, reason, false).await?;
        Ok(Decided::status(Status::Rejected))
    }

    /// The source's ordering decision for this posting.
    async fn decide(&self, tx: &mut WriteTx) -> Result<Decided, StoreError> {
        match self.source.ordering.mode {
            OrderingMode::HighWater => high_water::decide(tx, self).await,
            OrderingMode::Contiguous => contiguous::decide(tx, self).await,
        }
    }
}

/// Stores and decides every event of one delivery in one transaction.
pub async fn ingest(
    store: &Store,
    source: &Source,
    events: &[NormalisedEvent],
    raw: &RawDelivery<'_>,
) -> Result<Vec<Outcome>, StoreError> {
    let mut tx = store.begin().await?;
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
            posted.decide(tx).await?
        }
        Movement::Reverse(request) => {
            reverse::decide(tx, source, event, intent_id, request, now).await?
        }
    })
}
