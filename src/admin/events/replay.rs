//! What the event page says of a replay with the current config: before
//! it, what the event maps to now (the offer, with its form when a replay
//! would change something); after it, where the event is. The replay
//! itself is an action (`action::replay`).

use crate::context::Context;
use crate::domain::money;
use crate::replay::{Stored, describe, map, rekeyed, unchanged};
use crate::store::{EventDetailRow, LedgerEntryRow};

/// What the event page offers for a stored event: the sentence saying what
/// a replay would do now, if it may be replayed and its source is
/// configured; else `None` (no form).
pub fn preview(context: &Context, row: &EventDetailRow) -> Option<Preview> {
    let source = context.source(&row.event.source)?;
    let stored = Stored::new(row.clone()).ok()?;
    if let Some(into) = &row.replayed_into {
        return Some(Preview {
            text: format!("It was replayed as {into}, where its effect lives."),
            would_change: false,
        });
    }
    Some(match map(source, &stored) {
        Ok(event) if unchanged(&stored, &event) => Preview {
            text: format!("{}; a replay would change nothing", describe(&event)),
            would_change: false,
        },
        Ok(event) => match rekeyed(&stored, &event) {
            Some(key) => Preview {
                text: format!(
                    "With the current config its payload maps to another key, {key}: {}. A replay applies it there, once (if {key} is stored already, it changes nothing), and leaves this event ignored, linked to it.",
                    describe(&event)
                ),
                would_change: true,
            },
            None => Preview {
                text: format!(
                    "With the current config this event is {}.",
                    describe(&event)
                ),
                would_change: true,
            },
        },
        Err(refused) => Preview {
            text: format!("It cannot be replayed: {refused}."),
            would_change: false,
        },
    })
}

/// The event page's replay offer.
pub struct Preview {
    pub text: String,
    /// Whether the form is offered: a replay would change something.
    pub would_change: bool,
}

/// The notice after a replay from the page: where the event is now, and
/// what it posted.
pub fn done(status: &str, entry: Option<&LedgerEntryRow>) -> String {
    match entry {
        Some(entry) => format!(
            "Replayed with the current config: {status}, {} to {}; its balance is now {}.",
            money(Some(entry.amount_minor), Some(&entry.currency)),
            entry.account_id,
            money(Some(entry.balance_after_minor), Some(&entry.currency)),
        ),
        None => format!("Replayed with the current config: the event is {status} now."),
    }
}
