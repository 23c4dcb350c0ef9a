//! Releasing parked events. Once the number before a parked event is
//! applied (or an operator skips the gap), the event is applied, in sequence
//! order, in the transaction that closed the gap. Callers hold the account's
//! guard row lock (`lock_guard` / `lock_existing_guard`) and write the guard
//! this returns.
//!
//! A release is planned first ([`plan()`], pure), then executed: the balance
//! rows it will post to are locked up front in currency order (see
//! `store/write`), then each step runs. It is bounded: at most `budget`
//! parked events per transaction. When the bound is reached with more
//! waiting, [`Released::budget_used_up`] tells the caller to wake the drain
//! task, which goes on in later transactions ([`drain_account`]); after a
//! crash the drain task's start-up sweep finds the same work again, because
//! it is derived from the rows (a waiting event at or below guard + 1).
//!
//! A waiting event the guard has already passed (the source was switched
//! away from contiguous, or instances disagree on its mode) is late: it
//! follows `on_stale` like any late event, so it is never stranded.

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};

mod plan;

use super::{LedgerPosting, post_to_ledger};
use crate::domain::{OnStale, Ranges, StaleAction, Status};
use crate::store::{Parked, Store, StoreError, WriteTx};
pub(crate) use plan::Gaps;
use plan::{Step, plan};

/// One account's release, as its callers configure it.
pub(crate) struct Release<'a> {
    pub source: &'a str,
    pub account_id: &'a str,
    pub on_stale: OnStale,
    pub budget: u32,
    pub gaps: Gaps,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Released {
    /// Parked events applied in order.
    pub applied: u64,
    /// Parked events the guard had passed, settled as late (applied or held).
    pub late: u64,
    /// The guard after the release: the last number applied or skipped.
    pub guard: i64,
    /// Missing numbers passed over (only with [`Gaps::SkipThrough`]).
    pub skipped: Vec<RangeInclusive<i64>>,
    /// A parked event that could not be applied (its balance would leave
    /// the supported range): now `rejected` and held, and the release
    /// stopped before it.
    pub held: Option<String>,
    /// The bound was reached and more parked events may be ready.
    pub budget_used_up: bool,
}

impl Released {
    /// Whether the release changed anything.
    pub fn did_something(&self) -> bool {
        self.applied > 0 || self.late > 0 || !self.skipped.is_empty() || self.held.is_some()
    }
}

/// A release whose parked events are read and whose balance rows are
/// locked, ready to run.
pub(crate) struct Prepared {
    parked: Vec<Parked>,
    guard: i64,
}

/// Reads the parked events and locks the balance rows the release will post
/// to, together with `own_currency`: the currency of a posting the caller
/// makes between this and [`run`] (the event that closes the gap), so that
/// all of them are locked in order before any is written.
pub(crate) async fn prepare(
    tx: &mut WriteTx,
    release: &Release<'_>,
    guard: i64,
    own_currency: Option<&str>,
) -> Result<Prepared, StoreError> {
    let parked = tx
        .parked(
            release.source,
            release.account_id,
            i64::from(release.budget),
        )
        .await?;
    let currencies: Vec<&str> = plan(guard, &parked, release.gaps)
        .iter()
        .filter_map(|step| match step {
            Step::Apply(event) | Step::Late(event) => Some(event.currency.as_str()),
            Step::Skip(_) => None,
        })
        .chain(own_currency)
        .collect();
    tx.lock_balances(release.account_id, &currencies, release.now)
        .await?;
    Ok(Prepared { parked, guard })
}

pub(crate) async fn run(
    tx: &mut WriteTx,
    release: &Release<'_>,
    prepared: &Prepared,
) -> Result<Released, StoreError> {
    let steps = plan(prepared.guard, &prepared.parked, release.gaps);
    execute(tx, release, prepared.guard, &steps, prepared.parked.len()).await
}

/// [`prepare`] and [`run`] with no posting of the caller's between them.
pub(crate) async fn release(
    tx: &mut WriteTx,
    release: &Release<'_>,
    guard: i64,
) -> Result<Released, StoreError> {
    let prepared = prepare(tx, release, guard, None).await?;
    run(tx, release, &prepared).await
}

/// Runs the steps; stops at the first event that is no longer waiting (an
/// operator dismissed it meanwhile) or cannot be applied.
async fn execute(
    tx: &mut WriteTx,
    release: &Release<'_>,
    guard: i64,
    steps: &[Step<'_>],
    fetched: usize,
) -> Result<Released, StoreError> {
    let mut released = Released {
        guard,
        ..Released::default()
    };
    let mut after_skip: Option<&RangeInclusive<i64>> = None;
    let mut stopped = false;
    for step in steps {
        match step {
            Step::Late(event) => {
                if settle_late(tx, release, guard, event).await? {
                    released.late += 1;
                }
            }
            Step::Skip(gap) => {
                released.skipped.push(gap.clone());
                released.guard = *gap.end();
                after_skip = Some(gap);
            }
            Step::Apply(event) => {
                let reason = match after_skip.take() {
                    Some(gap) => format!(
                        "released in order after an operator skipped {}",
                        Ranges(std::slice::from_ref(gap))
                    ),
                    None => format!("released in order after sequence {}", released.guard),
                };
                match apply(tx, release, event, &reason, false).await? {
                    Applied::Yes => {
                        released.guard = event.event_sequence;
                        released.applied += 1;
                    }
                    Applied::NotWaiting => stopped = true,
                    Applied::OutOfRange => {
                        released.held = Some(event.event_id.clone());
                        stopped = true;
                    }
                }
                if stopped {
                    break;
                }
            }
        }
    }
    released.budget_used_up = !stopped && fetched == release.budget as usize;
    Ok(released)
}

/// A parked event whose number the guard has passed: late, so `on_stale`.
/// False if it was no longer waiting.
async fn settle_late(
    tx: &mut WriteTx,
    release: &Release<'_>,
    guard: i64,
    event: &Parked,
) -> Result<bool, StoreError> {
    let sequence = event.event_sequence;
    let action = if event.amount_minor > 0 {
        release.on_stale.credit
    } else {
        release.on_stale.debit
    };
    let why = "it was waiting when the guard passed it";
    match action {
        StaleAction::Apply => {
            let reason = format!("applied out of order: sequence {sequence} below {guard} ({why})");
            Ok(!matches!(
                apply(tx, release, event, &reason, true).await?,
                Applied::NotWaiting
            ))
        }
        StaleAction::Hold => {
            let reason = format!("out of order: sequence {sequence} is below {guard} ({why})");
            tx.settle_parked(event.intent_id, Status::Stale, (&reason, true), release.now)
                .await
        }
    }
}

enum Applied {
    Yes,
    /// No longer waiting: an operator dismissed it meanwhile.
    NotWaiting,
    /// Its balance would leave the supported range: now `rejected`.
    OutOfRange,
}

async fn apply(
    tx: &mut WriteTx,
    release: &Release<'_>,
    event: &Parked,
    reason: &str,
    late: bool,
) -> Result<Applied, StoreError> {
    if !tx
        .settle_parked(
            event.intent_id,
            Status::Applied,
            (reason, late),
            release.now,
        )
        .await?
    {
        return Ok(Applied::NotWaiting);
    }
    let posting = LedgerPosting {
        intent_id: event.intent_id,
        source: release.source,
        event_id: &event.event_id,
        account_id: release.account_id,
        currency: &event.currency,
        amount_minor: event.amount_minor,
        object_id: event.object_id.as_deref(),
        operator_applied: false,
    };
    // A contiguous stream links no payments (config refuses it).
    match post_to_ledger(tx, &posting, None, release.now).await {
        Ok(_) => Ok(Applied::Yes),
        // The balance statement matched no row and changed nothing; the
        // transaction is intact, and the event is held instead of applied.
        Err(StoreError::BalanceLimit { .. }) => {
            let reason = "the balance would leave the supported range (±2^62 minor units)";
            tx.set_intent_status(event.intent_id, Status::Rejected, reason, late, release.now)
                .await?;
            Ok(Applied::OutOfRange)
        }
        Err(e) => Err(e),
    }
}

/// One drain step for an account, in its own transaction: applies up to
/// `budget` parked events that are contiguous with the guard (and settles
/// any the guard has passed).
pub async fn drain_account(
    store: &Store,
    source: &str,
    account_id: &str,
    on_stale: OnStale,
    budget: u32,
    now: DateTime<Utc>,
) -> Result<Released, StoreError> {
    let mut tx = store.begin().await?;
    tx.lock_account_key(account_id).await?;
    let Some(guard) = tx.lock_existing_guard(source, account_id).await? else {
        tx.commit().await?;
        return Ok(Released::default());
    };
    let release = Release {
        source,
        account_id,
        on_stale,
        budget,
        gaps: Gaps::Wait,
        now,
    };
    let released = self::release(&mut tx, &release, guard).await?;
    if released.guard != guard {
        tx.set_guard(source, account_id, released.guard, now)
            .await?;
    }
    tx.commit().await?;
    Ok(released)
}
