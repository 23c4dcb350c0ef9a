//! One line of the audit log as the page shows it: when, who, what, on
//! which event or account (with its page), and why.

use crate::admin::target::{account_href, event_href};
use crate::admin::view::time;
use crate::store::AuditRow;

pub struct AuditLine {
    pub at: String,
    pub actor: String,
    pub action: String,
    pub source: String,
    /// The event acted on, with its page.
    pub event: Option<(String, String)>,
    /// The account, with its page.
    pub account: Option<(String, String)>,
    pub previous_status: String,
    pub note: String,
    pub detail: String,
}

impl From<AuditRow> for AuditLine {
    fn from(row: AuditRow) -> Self {
        Self {
            at: time(row.created_at),
            event: row.event_id.map(|id| (event_href(&row.source, &id), id)),
            account: row.account_id.map(|id| (account_href(&id), id)),
            actor: row.actor,
            action: row.action,
            source: row.source,
            previous_status: row.previous_status,
            note: row.note.unwrap_or_default(),
            detail: row.detail.unwrap_or_default(),
        }
    }
}
