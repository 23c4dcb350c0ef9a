//! "Skip gap": an operator decides that the numbers a contiguous stream is
//! waiting for will never come. In one transaction, under the account's
//! guard lock: the missing numbers are passed over and recorded, every
//! parked event is applied in sequence order (up to the release bound; the
//! rest drains as usual), and the action is audited with the operator's note
//! and what it did. An event that arrives later for a skipped number is late
//! and follows `on_stale`.

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};

use super::OperatorError;
use crate::domain::{Ranges, Status};
use crate::ingest::release::{self, Gaps};
use crate::store::{NewAudit, Store};

pub struct SkipRequest<'a> {
    pub source: &'a str,
    pub account_id: &'a str,
    pub actor: &'a str,
    pub note: &'a str,
    /// Release bound for this transaction (the source's `release_batch`).
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
    let Some(guard) = tx.lock_existing_guard(source, account_id).await? else {
        return Err(OperatorError::NothingWaiting);
    };
    let released = release::release(
        &mut tx,
        source,
        account_id,
        guard,
        request.budget,
        Gaps::Skip,
        now,
    )
    .await?;
    if released.applied == 0 {
        // Dropping the transaction rolls it back: nothing was written.
        return Err(OperatorError::NothingWaiting);
    }
    tx.set_guard(source, account_id, released.guard, now)
        .await?;
    let skipped = if released.skipped.is_empty() {
        "nothing (no number was missing)".to_owned()
    } else {
        Ranges(&released.skipped).to_string()
    };
    let detail = format!(
        "skipped {skipped}; applied {} parked event(s) in order through sequence {}",
        released.applied, released.guard
    );
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
        more: released.budget_used_up,
        audit_id,
    })
}
