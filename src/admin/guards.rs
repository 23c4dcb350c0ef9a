//! The operator's "reset sequence guard", shared by the JSON API and the
//! pages: the preview, and the held queue's accounts that hold many events.
//! The reset itself is an action (`action::reset_guard`).

use crate::context::Context;
use crate::operator::{self, GuardPreview, OperatorError};
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
