//! The account page's ledger lines: each entry's amount and the balance
//! after it, formatted, with the page of the event that posted it.

use crate::admin::target::event_href;
use crate::admin::view::{minor_units, money, time};
use crate::store::LedgerEntryRow;

/// One ledger line.
pub struct EntryLine {
    pub amount: String,
    pub amount_minor: String,
    pub balance_after: String,
    pub negative_after: bool,
    pub posting: i64,
    pub source: String,
    pub event_id: String,
    pub event_href: String,
    pub operator_applied: bool,
    pub at: String,
}

impl From<LedgerEntryRow> for EntryLine {
    fn from(row: LedgerEntryRow) -> Self {
        let currency = Some(row.currency.as_str());
        Self {
            amount: money(Some(row.amount_minor), currency),
            amount_minor: minor_units(Some(row.amount_minor), currency),
            balance_after: money(Some(row.balance_after_minor), currency),
            negative_after: row.balance_after_minor < 0,
            posting: row.account_seq,
            event_href: event_href(&row.source, &row.event_id),
            source: row.source,
            event_id: row.event_id,
            operator_applied: row.operator_applied,
            at: time(row.created_at),
        }
    }
}
