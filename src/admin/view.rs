//! What several admin pages show, already formatted: events, balances and
//! audit rows, amounts from minor units, times and durations, and links
//! with escaped path segments. Templates escape every value again when
//! they render it.

use chrono::{DateTime, Utc};

use super::target::{account_href, event_href};
pub use crate::domain::{minor_units, money};
use crate::store::{AuditRow, BalanceRow, EventRow};

/// `2026-06-01 12:00:00 UTC`: the space lets a narrow column wrap between
/// date and time instead of inside either.
pub fn time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Whether an event's stored reason says why it is in its status now; an
/// applied or dismissed event's reason is what it was held for before,
/// history rather than its state.
pub fn reason_is_current(status: &str) -> bool {
    [
        "stale",
        "rejected",
        "waiting",
        "unmatched",
        "ignored",
        "duplicate_effect",
    ]
    .contains(&status)
}

pub struct EventView {
    pub source: String,
    pub event_id: String,
    pub event_type: String,
    pub status: String,
    pub reason: String,
    pub account_id: String,
    pub amount: String,
    /// The stored minor units, shown on hover.
    pub amount_minor: String,
    pub deliveries: i64,
    pub conflicts: i64,
    pub received: String,
    pub href: String,
    /// The account page, when the event names an account.
    pub account_href: Option<String>,
    /// Arrived below its account's sequence guard.
    pub late: bool,
    pub sequence: String,
    /// `webhook`, or `reconcile`: fetched from the provider's records.
    pub origin: String,
}

impl From<EventRow> for EventView {
    fn from(row: EventRow) -> Self {
        Self {
            origin: row.origin.clone(),
            href: event_href(&row.source, &row.event_id),
            amount: money(row.amount_minor, row.currency.as_deref()),
            amount_minor: minor_units(row.amount_minor, row.currency.as_deref()),
            received: time(row.first_received_at),
            source: row.source,
            event_id: row.event_id,
            event_type: row.event_type,
            reason: row
                .reason
                .filter(|_| reason_is_current(&row.status))
                .unwrap_or_default(),
            status: row.status,
            account_href: row.account_id.as_deref().map(account_href),
            account_id: row.account_id.unwrap_or_default(),
            deliveries: row.deliveries,
            conflicts: row.conflicts,
            late: row.late,
            sequence: row.sequence.map(|s| s.to_string()).unwrap_or_default(),
        }
    }
}

pub struct BalanceView {
    pub account_id: String,
    pub account_href: String,
    pub currency: String,
    pub balance: String,
    pub balance_minor: String,
    /// Below zero: flagged on the page.
    pub negative: bool,
    pub updated: String,
}

impl From<BalanceRow> for BalanceView {
    fn from(row: BalanceRow) -> Self {
        Self {
            balance: money(Some(row.balance_minor), Some(&row.currency)),
            balance_minor: minor_units(Some(row.balance_minor), Some(&row.currency)),
            negative: row.balance_minor < 0,
            updated: time(row.updated_at),
            account_href: account_href(&row.account_id),
            account_id: row.account_id,
            currency: row.currency,
        }
    }
}

pub struct AuditView {
    pub action: String,
    pub previous_status: String,
    pub actor: String,
    pub note: String,
    pub detail: String,
    pub at: String,
}

impl From<AuditRow> for AuditView {
    fn from(row: AuditRow) -> Self {
        Self {
            action: row.action,
            previous_status: row.previous_status,
            actor: row.actor,
            note: row.note.unwrap_or_default(),
            detail: row.detail.unwrap_or_default(),
            at: time(row.created_at),
        }
    }
}

/// `2 h 5 min`, `40 s`: how long something has been open.
pub fn duration(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(40), "40 s");
        assert_eq!(duration(3599), "59 min");
        assert_eq!(duration(7500), "2 h 5 min");
        assert_eq!(duration(90_000), "1 d 1 h");
    }
}
