//! High-water sequence guards as operators see them, shared by the JSON API
//! and the pages: the preview of a reset, and the held queue's accounts
//! that hold many events (formatted for the dashboard with their guard
//! page). The reset itself is an action (`action::reset_guard`).

use crate::admin::target::guard_href;
use crate::context::Context;
use crate::domain::OrderingMode;
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

/// The same accounts as the dashboard lists them, each with its guard page
/// when its source orders by high water.
pub async fn held_account_views(context: &Context) -> Result<Vec<HeldAccountView>, StoreError> {
    Ok(held_accounts(context)
        .await?
        .into_iter()
        .map(|row| {
            let high_water = context
                .source(&row.source)
                .is_some_and(|s| s.ordering.mode == OrderingMode::HighWater);
            HeldAccountView::new(row, high_water)
        })
        .collect())
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

/// An account holding many events for an operator, on the dashboard.
pub struct HeldAccountView {
    pub source: String,
    pub account_id: String,
    pub held: i64,
    pub stale: i64,
    pub sequences: String,
    /// Its sequence-guard page, for a high-water source.
    pub guard_href: Option<String>,
}

impl HeldAccountView {
    pub fn new(row: HeldAccountRow, high_water: bool) -> Self {
        Self {
            guard_href: high_water.then(|| guard_href(&row.source, &row.account_id)),
            sequences: match (row.lowest_sequence, row.highest_sequence) {
                (Some(low), Some(high)) => format!("{low} to {high}"),
                _ => String::new(),
            },
            source: row.source,
            account_id: row.account_id,
            held: row.held,
            stale: row.stale,
        }
    }
}
