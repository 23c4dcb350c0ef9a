//! Replay from the admin: the event page's "Replay with the current config"
//! (what the event maps to now is shown first; a note is required) and
//! `POST /admin/api/events/{source}/{id}/replay`. Both run
//! `crate::replay::replay`, audited under the holder's name.

use actix_web::HttpResponse;
use actix_web::web::Data;
use serde_json::{Value, json};

use super::target::event_href;
use crate::context::Context;
use crate::domain::{Status, money};
use crate::http::ApiError;
use crate::replay::{Asked, ReplayError, Stored, describe, map, replay, unchanged};
use crate::store::{EventDetailRow, LedgerEntryRow};

/// What the event page offers for a stored event: the sentence saying what
/// a replay would do now, if it may be replayed and its source is
/// configured; else `None` (no form).
pub fn preview(context: &Context, row: &EventDetailRow) -> Option<Preview> {
    let source = context.source(&row.event.source)?;
    let stored = Stored::new(row.clone()).ok()?;
    Some(match map(source, &stored) {
        Ok(event) if unchanged(&stored, &event) => Preview {
            text: format!("{}; a replay would change nothing", describe(&event)),
            would_change: false,
        },
        Ok(event) => Preview {
            text: format!(
                "With the current config this event is {}.",
                describe(&event)
            ),
            would_change: true,
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

/// Who replays, why, and (from the page) the status they saw.
pub struct Asking<'a> {
    pub actor: &'a str,
    pub note: Option<&'a str>,
    /// The status the page showed: the replay starts only from it.
    pub seen: Option<Status>,
}

/// Replays one event; the outcome as JSON.
pub async fn run(
    context: &Data<Context>,
    source_name: &str,
    event_id: &str,
    asking: &Asking<'_>,
) -> Result<Value, ApiError> {
    let source = context
        .source(source_name)
        .ok_or_else(|| ReplayError::Unconfigured(source_name.to_owned()))?;
    let stored = Stored::load(&context.store, source_name, event_id).await?;
    if let Some(seen) = asking.seen
        && seen != stored.status()
    {
        return Err(ApiError::Conflict(format!(
            "the event is {} now, not {seen} as the page showed; reload it",
            stored.status()
        )));
    }
    let asked = Asked {
        actor: asking.actor,
        note: asking.note,
        now: context.clock.now(),
    };
    let outcome = replay(&context.store, source, &stored, &asked).await?;
    if outcome.as_ref().is_some_and(|o| o.backlog) {
        context.drain.wake();
    }
    tracing::info!(
        source = source_name,
        event_id,
        from = stored.status().as_str(),
        to = outcome.as_ref().map(|o| o.status.as_str()),
        "operator replay"
    );
    Ok(json!({
        "source": source_name,
        "event_id": event_id,
        "previous_status": stored.status().as_str(),
        "status": outcome.as_ref().map_or(stored.status(), |o| o.status).as_str(),
        "changed": outcome.is_some(),
    }))
}

/// The page form's replay: a note is required; back to the event.
pub async fn from_page(
    context: &Data<Context>,
    source: &str,
    event_id: &str,
    asking: &Asking<'_>,
) -> Result<HttpResponse, ApiError> {
    if asking.note.is_none() {
        return Err(ApiError::BadRequest("a note is required to replay".into()));
    }
    let outcome = run(context, source, event_id, asking).await?;
    let done = if outcome["changed"] == true {
        "replay"
    } else {
        "replay_unchanged"
    };
    Ok(HttpResponse::SeeOther()
        .insert_header((
            actix_web::http::header::LOCATION,
            format!("{}&done={done}", event_href(source, event_id)),
        ))
        .finish())
}
