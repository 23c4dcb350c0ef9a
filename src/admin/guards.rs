//! The operator's "reset sequence guard", shared by the JSON API and the
//! pages: the preview, the reset with its log line, and the held queue's
//! accounts that hold many events.

use crate::context::Context;
use crate::operator::{self, GuardPreview, OperatorError, ResetOutcome, ResetRequest};
use crate::store::{HeldAccountRow, StoreError};

/// An account holding this many events for an operator is listed on its
/// own in the held queue: one sender's bug (an absurd sequence) holds every
/// late debit after it.
pub const MANY_HELD: i64 = 5;
const ACCOUNTS_LISTED: i64 = 50;

pub async fn held_accounts(context: &Context) -> Result<Vec<HeldAccountRow>, StoreError> {
    context
        .store
        .held_accounts(MANY_HELD, ACCOUNTS_LISTED)
        .await
}

pub async fn preview(
    context: &Context,
    source: &str,
    account_id: &str,
    to: Option<i64>,
) -> Result<GuardPreview, OperatorError> {
    operator::preview_reset(
        &context.store,
        context.source(source).map(|s| &**s),
        source,
        account_id,
        to,
    )
    .await
}

pub struct Reset<'a> {
    pub to: i64,
    pub guard_seen: i64,
    pub actor: &'a str,
    pub note: &'a str,
}

pub async fn reset(
    context: &Context,
    source: &str,
    account_id: &str,
    reset: &Reset<'_>,
) -> Result<ResetOutcome, OperatorError> {
    let request = ResetRequest {
        source,
        account_id,
        to: reset.to,
        guard_seen: reset.guard_seen,
        actor: reset.actor,
        note: reset.note,
        configured: context.source(source).map(|s| &**s),
        now: context.clock.now(),
    };
    let outcome = operator::reset_guard(&context.store, &request).await?;
    context
        .metrics
        .ordering(source, "released", outcome.applied.len() as u64);
    tracing::info!(
        source,
        account_id,
        guard_before = outcome.guard_before,
        to = reset.to,
        applied = outcome.applied.len(),
        still_held = outcome.still_held.len(),
        "operator reset a sequence guard"
    );
    Ok(outcome)
}
