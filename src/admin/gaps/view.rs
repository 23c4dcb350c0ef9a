//! Contiguous streams waiting behind a gap, as operators see them: the
//! missing numbers, how long the gap has been open, and whether it is past
//! its source's `gap_timeout_secs` (then it is in the held queue). Shared by
//! the JSON API and the pages, which show it formatted (`GapView`);
//! skipping one is an action (`action::skip_gap`).

use std::ops::RangeInclusive;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::admin::target::{gap_action_href, gap_href};
use crate::admin::view::{duration, time};
use crate::context::Context;
use crate::domain::{DEFAULT_GAP_TIMEOUT_SECS, Ranges, missing_ranges};
use crate::store::{AuditRow, EventRow, GapRow, StoreError};

/// Parked numbers read per account to find the missing ones.
const SEQUENCES_READ: i64 = 10_000;
/// Missing ranges listed per account; `missing_more` says there are others.
const RANGES_LISTED: usize = 50;
/// Accounts listed.
const GAPS_LISTED: i64 = 200;
/// Parked events and audit rows shown with one gap.
const DETAIL_ROWS: i64 = 500;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Gap {
    pub source: String,
    pub account_id: String,
    /// The last number applied or skipped.
    pub guard: i64,
    pub next_expected: i64,
    pub waiting: i64,
    pub lowest_waiting: i64,
    pub highest_waiting: i64,
    pub missing: Vec<MissingRange>,
    /// `4, 7-9`.
    pub missing_text: String,
    /// More missing ranges than listed.
    pub missing_more: bool,
    /// The highest missing number listed: what a skip confirmed from this
    /// view may pass over (the guard itself when nothing is missing).
    pub skip_through: i64,
    pub waiting_since: DateTime<Utc>,
    pub open_secs: i64,
    pub gap_timeout_secs: u64,
    /// Open longer than the timeout: in the held queue for an operator.
    pub held: bool,
}

#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct MissingRange {
    pub first: i64,
    pub last: i64,
}

impl From<&RangeInclusive<i64>> for MissingRange {
    fn from(range: &RangeInclusive<i64>) -> Self {
        Self {
            first: *range.start(),
            last: *range.end(),
        }
    }
}

/// One account's gap with what an operator needs to decide: its parked
/// events in the order they will apply, and its past skips.
pub struct GapDetail {
    /// None once nothing waits (the skips stay visible).
    pub gap: Option<Gap>,
    pub waiting: Vec<EventRow>,
    pub audit: Vec<AuditRow>,
}

/// The account's gap detail; none if it never had a gap or a skip.
pub async fn detail(
    context: &Context,
    source: &str,
    account_id: &str,
) -> Result<Option<GapDetail>, StoreError> {
    let gap = one(context, source, account_id).await?;
    let audit = context
        .store
        .account_audit(source, account_id, DETAIL_ROWS)
        .await?;
    if gap.is_none() && audit.is_empty() {
        return Ok(None);
    }
    let waiting = context
        .store
        .waiting_events(source, account_id, DETAIL_ROWS)
        .await?;
    Ok(Some(GapDetail {
        gap,
        waiting,
        audit,
    }))
}

/// Every account with parked events, oldest gap first.
pub async fn all(context: &Context) -> Result<Vec<Gap>, StoreError> {
    let mut gaps = Vec::new();
    for row in context.store.gaps(GAPS_LISTED).await? {
        gaps.push(describe(context, row).await?);
    }
    Ok(gaps)
}

pub async fn one(
    context: &Context,
    source: &str,
    account_id: &str,
) -> Result<Option<Gap>, StoreError> {
    match context.store.gap(source, account_id).await? {
        Some(row) => Ok(Some(describe(context, row).await?)),
        None => Ok(None),
    }
}

async fn describe(context: &Context, row: GapRow) -> Result<Gap, StoreError> {
    let sequences = context
        .store
        .waiting_sequences(&row.source, &row.account_id, SEQUENCES_READ)
        .await?;
    let mut missing = missing_ranges(row.guard, &sequences, RANGES_LISTED + 1);
    let missing_more = missing.len() > RANGES_LISTED || sequences.len() as i64 == SEQUENCES_READ;
    missing.truncate(RANGES_LISTED);
    let gap_timeout_secs = context
        .source(&row.source)
        .map_or(DEFAULT_GAP_TIMEOUT_SECS, |s| s.ordering.gap_timeout_secs);
    let open_secs = (context.clock.now() - row.waiting_since)
        .num_seconds()
        .max(0);
    Ok(Gap {
        skip_through: missing.last().map_or(row.guard, |r| *r.end()),
        next_expected: row.guard + 1,
        missing_text: Ranges(&missing).to_string(),
        missing: missing.iter().map(MissingRange::from).collect(),
        missing_more,
        held: open_secs.unsigned_abs() >= gap_timeout_secs,
        open_secs,
        gap_timeout_secs,
        source: row.source,
        account_id: row.account_id,
        guard: row.guard,
        waiting: row.waiting,
        lowest_waiting: row.lowest_waiting,
        highest_waiting: row.highest_waiting,
        waiting_since: row.waiting_since,
    })
}

/// A gap as the pages show it.
pub struct GapView {
    pub source: String,
    pub account_id: String,
    pub next_expected: i64,
    pub missing: String,
    pub waiting: i64,
    pub lowest_waiting: i64,
    pub highest_waiting: i64,
    pub since: String,
    pub open: String,
    pub held: bool,
    pub href: String,
    pub skip_href: String,
    pub skip_through: i64,
}

impl From<Gap> for GapView {
    fn from(gap: Gap) -> Self {
        let more = if gap.missing_more { ", ..." } else { "" };
        Self {
            href: gap_href(&gap.source, &gap.account_id),
            skip_href: gap_action_href(&gap.source, &gap.account_id, "skip"),
            missing: format!("{}{more}", gap.missing_text),
            since: time(gap.waiting_since),
            open: duration(gap.open_secs),
            next_expected: gap.next_expected,
            waiting: gap.waiting,
            lowest_waiting: gap.lowest_waiting,
            highest_waiting: gap.highest_waiting,
            held: gap.held,
            skip_through: gap.skip_through,
            source: gap.source,
            account_id: gap.account_id,
        }
    }
}
