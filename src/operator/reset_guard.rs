//! "Reset sequence guard": one authentic event with an absurd sequence (a
//! sender's bug, `2^62`) lifts a high-water account's guard so far that
//! every later event is late, and its late debits are held. An operator
//! lowers the guard to a value they confirm, and the stale events above it
//! are applied in sequence order, as if they had arrived in order.
//!
//! The preview names the guard the operator saw (`guard_seen`), the value it
//! suggests (the highest sequence applied below the guard) and the stale
//! events a reset to a value would apply. The reset refuses if the guard has
//! moved since (409), so it never acts on what the operator did not see.
//!
//! Atomicity: the guard is lowered and audited in one transaction under the
//! guard's row lock. Each stale event is then applied in its own
//! transaction, exactly as the operator's "apply" does (claimed from
//! `stale` by one conditional statement, so a concurrent dismiss or apply of
//! the same event wins or loses whole; a refusal leaves it held and is
//! audited). An interruption between the two leaves the guard lowered and the
//! remaining events held: the page shows them and a second reset, or
//! applying each, finishes the work.

use chrono::{DateTime, Utc};

use super::error::OperatorError;
use super::held::{Action, Request, act};
use crate::domain::{NegativeBalance, OrderingMode, SEQUENCE_FLOOR, Status};
use crate::source::Source;
use crate::store::{EventRow, NewAudit, Store};

/// Stale events a preview lists and a reset applies at most.
pub const RESET_BATCH: i64 = 500;

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct GuardPreview {
    pub source: String,
    pub account_id: String,
    /// The guard now: the highest sequence applied in order.
    pub guard: i64,
    /// The highest sequence applied below the guard, if any: the guard as it
    /// would be without the event that set it.
    pub suggested_to: Option<i64>,
    /// The value previewed (the one asked for, else the suggestion, else
    /// the floor: as if nothing had been applied).
    pub to: i64,
    /// Stale events above `to`, in the order a reset would apply them.
    pub would_apply: Vec<EventRow>,
}

pub struct ResetRequest<'a> {
    pub source: &'a str,
    pub account_id: &'a str,
    pub to: i64,
    /// The guard the operator's preview showed.
    pub guard_seen: i64,
    pub actor: &'a str,
    pub note: &'a str,
    pub configured: Option<&'a Source>,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ResetOutcome {
    pub guard_before: i64,
    /// The guard after the held events were applied.
    pub guard: i64,
    pub applied: Vec<String>,
    /// Events a check refused (a refund beyond its payment, a balance out
    /// of range): still held, with the reason.
    pub still_held: Vec<HeldReason>,
    pub audit_id: i64,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct HeldReason {
    pub event_id: String,
    pub reason: String,
}

/// Only high-water sources have a guard that one event can lift; a
/// contiguous stream waits at a gap instead (skip it).
fn check_mode(configured: Option<&Source>) -> Result<(), OperatorError> {
    match configured.map(|s| s.ordering.mode) {
        Some(OrderingMode::HighWater) => Ok(()),
        Some(OrderingMode::Contiguous) => Err(OperatorError::GuardReset(
            "a contiguous source has no guard to reset: skip its gap instead".to_owned(),
        )),
        None => Err(OperatorError::GuardReset(
            "the source is not configured".to_owned(),
        )),
    }
}

pub async fn preview(
    store: &Store,
    configured: Option<&Source>,
    source: &str,
    account_id: &str,
    to: Option<i64>,
) -> Result<GuardPreview, OperatorError> {
    check_mode(configured)?;
    let guard = store
        .guard(source, account_id)
        .await?
        .ok_or(OperatorError::NoGuard)?;
    let suggested_to = store
        .highest_applied_below(source, account_id, guard)
        .await?;
    let to = to.or(suggested_to).unwrap_or(SEQUENCE_FLOOR);
    let would_apply = store
        .stale_above(source, account_id, to, RESET_BATCH)
        .await?;
    Ok(GuardPreview {
        source: source.to_owned(),
        account_id: account_id.to_owned(),
        guard,
        suggested_to,
        to,
        would_apply,
    })
}

pub async fn reset(
    store: &Store,
    request: &ResetRequest<'_>,
) -> Result<ResetOutcome, OperatorError> {
    check_mode(request.configured)?;
    let (guard, held, audit_id) = lower(store, request).await?;
    let (applied, still_held) = apply_held(store, request, held, audit_id).await?;
    let guard_after = store
        .guard(request.source, request.account_id)
        .await?
        .unwrap_or(request.to);
    Ok(ResetOutcome {
        guard_before: guard,
        guard: guard_after,
        applied,
        still_held,
        audit_id,
    })
}

/// Lowers the guard as confirmed, in one transaction with the audit row
/// naming the held events above it: the guard before, those events and
/// the audit row's id.
async fn lower(
    store: &Store,
    request: &ResetRequest<'_>,
) -> Result<(i64, Vec<String>, i64), OperatorError> {
    let (source, account_id, to) = (request.source, request.account_id, request.to);
    if to < SEQUENCE_FLOOR {
        return Err(OperatorError::GuardReset(format!(
            "to must be at least {SEQUENCE_FLOOR}"
        )));
    }
    let mut tx = store.begin().await?;
    tx.lock_account_key(account_id).await?;
    let guard = tx
        .lock_existing_guard(source, account_id)
        .await?
        .ok_or(OperatorError::NoGuard)?;
    if guard != request.guard_seen {
        return Err(OperatorError::GuardReset(format!(
            "the guard is {guard} now, not {}: reload and confirm again",
            request.guard_seen
        )));
    }
    if to >= guard {
        return Err(OperatorError::GuardReset(format!(
            "the guard is {guard}; a reset lowers it"
        )));
    }
    // Read under the guard's lock: no stale event of this account is
    // created without it, so this is the list the audit row names.
    let held = tx
        .stale_event_ids_above(source, account_id, to, RESET_BATCH)
        .await?;
    tx.set_guard(source, account_id, to, request.now).await?;
    let detail = format!(
        "guard {guard} lowered to {to}; {} held event(s) above it to apply in order{}",
        held.len(),
        if held.is_empty() {
            String::new()
        } else {
            format!(": {}", held.join(", "))
        }
    );
    let audit_id = tx
        .insert_audit(&NewAudit {
            action: "reset_guard",
            source,
            event_id: None,
            account_id: Some(account_id),
            previous_status: Status::Stale,
            actor: request.actor,
            note: Some(request.note),
            detail: Some(&detail),
            created_at: request.now,
        })
        .await?;
    tx.insert_guard_reset(source, account_id, (guard, to), audit_id, request.now)
        .await?;
    tx.commit().await?;
    Ok((guard, held, audit_id))
}

/// Applies the held events the reset named, each as its own operator
/// action: those applied, and those still held with why.
async fn apply_held(
    store: &Store,
    request: &ResetRequest<'_>,
    held: Vec<String>,
    audit_id: i64,
) -> Result<(Vec<String>, Vec<HeldReason>), OperatorError> {
    let note = format!("applied by guard reset #{audit_id}: {}", request.note);
    let mut applied = Vec::new();
    let mut still_held = Vec::new();
    for event_id in held {
        let apply = Request {
            action: Action::Apply,
            source: request.source,
            configured: request.configured,
            event_id: &event_id,
            actor: request.actor,
            note: Some(&note),
            seen: Some(crate::domain::Status::Stale),
            // The person confirmed the list, not each debit's effect: the
            // source's policy decides (a debit it would hold stays held).
            negative_balance: request
                .configured
                .map_or(NegativeBalance::Hold, |s| s.negative_balance),
            now: request.now,
        };
        match act(store, &apply).await {
            Ok(_) => applied.push(event_id),
            Err(OperatorError::Refused(reason)) => still_held.push(HeldReason { event_id, reason }),
            // Someone else applied or dismissed it meanwhile.
            Err(OperatorError::WrongStatus(..) | OperatorError::NotFound) => {}
            Err(other) => return Err(other),
        }
    }
    Ok((applied, still_held))
}
