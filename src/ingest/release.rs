//! Releasing parked events: once the number before a parked event is
//! applied (or an operator skips the gap), the event is applied, in sequence
//! order, in the transaction that closed the gap. Callers hold the account's
//! guard row lock (`lock_guard` / `lock_existing_guard`) and write the guard
//! this returns.
//!
//! A release is bounded: at most `budget` events per transaction, so one
//! delivery never turns into an unbounded transaction. When the bound is
//! reached with more ready, [`Released::budget_used_up`] tells the caller to
//! wake the drain task, which goes on in later transactions
//! ([`drain_account`]); after a crash, the drain task's start-up sweep finds
//! the same work again, because it is derived from the rows themselves (a
//! waiting event at guard + 1).

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};

use super::{LedgerPosting, post_to_ledger};
use crate::domain::{Ranges, Status};
use crate::store::{Parked, Store, StoreError, WriteTx};

/// What to do at a gap (a missing number before the next parked event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gaps {
    /// Stop: the missing event may still arrive.
    Wait,
    /// Skip the missing numbers (an operator's decision) and go on.
    Skip,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Released {
    /// Parked events applied.
    pub applied: u64,
    /// The guard after the release: the last number applied or passed.
    pub guard: i64,
    /// Missing numbers passed over (only with [`Gaps::Skip`]).
    pub skipped: Vec<RangeInclusive<i64>>,
    /// The bound was reached and more parked events may be ready.
    pub budget_used_up: bool,
}

pub(crate) async fn release(
    tx: &mut WriteTx,
    source: &str,
    account_id: &str,
    guard: i64,
    budget: u32,
    gaps: Gaps,
    now: DateTime<Utc>,
) -> Result<Released, StoreError> {
    let parked = tx
        .parked_after(source, account_id, guard, i64::from(budget))
        .await?;
    let mut released = Released {
        guard,
        ..Released::default()
    };
    for event in &parked {
        let next = released.guard + 1;
        let gap = (event.event_sequence > next).then(|| next..=event.event_sequence - 1);
        let reason = match (&gap, gaps) {
            (None, _) => format!("released in order after sequence {}", released.guard),
            (Some(_), Gaps::Wait) => break,
            (Some(gap), Gaps::Skip) => format!(
                "released in order after an operator skipped {}",
                Ranges(std::slice::from_ref(gap))
            ),
        };
        if !apply_parked(tx, source, account_id, event, &reason, now).await? {
            break;
        }
        released.skipped.extend(gap);
        released.guard = event.event_sequence;
        released.applied += 1;
    }
    released.budget_used_up = released.applied == u64::from(budget);
    Ok(released)
}

/// Applies one parked event; false if it could not be (an operator
/// dismissed it meanwhile, or its balance would leave the supported range,
/// in which case it is now `rejected` and held), which ends the release.
async fn apply_parked(
    tx: &mut WriteTx,
    source: &str,
    account_id: &str,
    event: &Parked,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    if !tx.release_parked(event.intent_id, reason).await? {
        return Ok(false);
    }
    let posting = LedgerPosting {
        intent_id: event.intent_id,
        source,
        event_id: &event.event_id,
        account_id,
        currency: &event.currency,
        amount_minor: event.amount_minor,
        object_id: event.object_id.as_deref(),
        operator_applied: false,
    };
    match post_to_ledger(tx, &posting, now).await {
        Ok(_) => Ok(true),
        // The balance statement matched no row and changed nothing; the
        // transaction is intact, and the event is held instead of applied.
        Err(StoreError::BalanceLimit { .. }) => {
            let reason = "the balance would leave the supported range (±2^62 minor units)";
            tx.set_intent_status(event.intent_id, Status::Rejected, reason, false)
                .await?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// One drain step for an account, in its own transaction: applies up to
/// `budget` parked events that are contiguous with the guard.
pub async fn drain_account(
    store: &Store,
    source: &str,
    account_id: &str,
    budget: u32,
    now: DateTime<Utc>,
) -> Result<Released, StoreError> {
    let mut tx = store.begin().await?;
    let Some(guard) = tx.lock_existing_guard(source, account_id).await? else {
        tx.commit().await?;
        return Ok(Released::default());
    };
    let released = release(&mut tx, source, account_id, guard, budget, Gaps::Wait, now).await?;
    if released.guard != guard {
        tx.set_guard(source, account_id, released.guard, now)
            .await?;
    }
    tx.commit().await?;
    Ok(released)
}
