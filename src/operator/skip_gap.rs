//! "Skip gap": an operator decides that the numbers a contiguous stream is
//! waiting for will never come. The request names the highest missing number
//! the operator saw (`through`): numbers that went missing after the page
//! was read are never skipped unseen, and a repeated click skips nothing
//! new. In one transaction, under the account's guard lock: the missing
//! numbers up to `through` are passed over and recorded, the parked events
//! between them are applied in sequence order (up to the release bound; the
//! rest drains as usual), and the action is audited with the operator's note
//! and what it did. An event that arrives later for a skipped number is late
//! and follows `on_stale`.

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};

use super::error::OperatorError;
use crate::domain::{OnStale, Ranges, Status};
use crate::ingest::release::{self, Gaps, Release};
use crate::store::{NewAudit, Store};

pub struct SkipRequest<'a> {
    pub source: &'a str,
    pub account_id: &'a str,
    /// Skip missing numbers up to and including this one.
    pub through: i64,
    pub actor: &'a str,
    pub note: &'a str,
    /// The source's policy: late events met on the way, and the bound.
    pub on_stale: OnStale,
    pub budget: u32,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipOutcome {
    pub skipped: Vec<RangeInclusive<i64>>,
    /// Parked events applied by this action.
    pub released: u64,
    /// The account's guard afterwards.
    pub guard: i64,
    /// A parked event that could not be applied (balance range): now
    /// `rejected`, held for an operator, and the stream waits before it.
    pub held: Option<String>,
    /// More parked events remain beyond the bound (the drain task goes on
    /// where they are contiguous; another gap needs another skip).
    pub more: bool,
    pub audit_id: i64,
}

pub async fn skip_gap(
    store: &Store,
    request: &SkipRequest<'_>,
) -> Result<SkipOutcome, OperatorError> {
    let (source, account_id, now) = (request.source, request.account_id, request.now);
    let mut tx = store.begin().await?;
    tx.lock_account_key(account_id).await?;
    let Some(guard) = tx.lock_existing_guard(source, account_id).await? else {
        return Err(OperatorError::NothingWaiting);
    };
    let release = Release {
        source,
        account_id,
        on_stale: request.on_stale,
        budget: request.budget,
        gaps: Gaps::SkipThrough(request.through),
        now,
    };
    let released = release::release(&mut tx, &release, guard).await?;
    if !released.did_something() {
        // Dropping the transaction rolls it back: nothing was written.
        if tx.parked(source, account_id, 1).await?.is_empty() {
            return Err(OperatorError::NothingWaiting);
        }
        return Err(OperatorError::NothingToSkip {
            through: request.through,
            next_expected: guard + 1,
        });
    }
    tx.set_guard(source, account_id, released.guard, now)
        .await?;
    let mut detail = format!(
        "skipped {}; applied {} parked event(s) in order through sequence {}",
        if released.skipped.is_empty() {
            "nothing (no number was missing)".to_owned()
        } else {
            Ranges(&released.skipped).to_string()
        },
        released.applied,
        released.guard
    );
    if let Some(held) = &released.held {
        detail.push_str(&format!(
            "; event {held} could not be applied (its balance would leave the supported range) and is held"
        ));
    }
    let audit_id = tx
        .insert_audit(&NewAudit {
            action: "skip_gap",
            source,
            event_id: None,
            account_id: Some(account_id),
            previous_status: Status::Waiting,
            actor: request.actor,
            note: Some(request.note),
            detail: Some(&detail),
            created_at: now,
        })
        .await?;
    for range in &released.skipped {
        tx.insert_skip(
            source,
            account_id,
            (*range.start(), *range.end()),
            audit_id,
            now,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(SkipOutcome {
        skipped: released.skipped,
        released: released.applied,
        guard: released.guard,
        held: released.held,
        more: released.budget_used_up,
        audit_id,
    })
}
