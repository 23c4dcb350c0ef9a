//! Events: the list (`GET /admin/events`, `GET /admin/api/events`), one
//! event (`GET /admin/event`, `GET /admin/api/event`), and the actions on
//! one (`POST /admin/event/{action}`, `POST /admin/api/event/{action}`:
//! apply, dismiss, replay), each page beside its JSON twin; the path forms
//! (`/events/{source}/{event_id}`) take the same handlers.

mod filter;
mod replay;
mod view;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Json, Path, Payload, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use serde_json::{Value, json};

use self::filter::{EventsQuery, Shown};
use self::view::{Context as EventContext, EventDetailView, done_notice, ignored_because};
use super::action::{self, Asking};
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::input::{ADMIN_BODY_LIMIT, clean_note, parse_note, seen_status};
use super::outbox::{MessageView, event_messages};
use super::render::{Flash, csrf_for, html, see_other};
use super::target::{EventRef, event_href};
use super::view::{AuditView, EventView};
use crate::context::Context;
use crate::domain::{Origin, Status};
use crate::http::{ApiError, read_limited};
use crate::operator::Action;
use crate::store::{AuditRow, EventDetailRow};

/// Events per page of the list.
const PAGE: i64 = 50;

#[derive(Template)]
#[template(path = "events.html")]
struct EventsPage {
    csrf: String,
    sources: Vec<String>,
    statuses: Vec<&'static str>,
    origins: Vec<&'static str>,
    /// The filters as given, to fill the form again.
    query: Shown,
    events: Vec<EventView>,
    older_href: Option<String>,
}

#[derive(Template)]
#[template(path = "event.html")]
struct EventPage {
    csrf: String,
    /// False for a read-only holder: no forms.
    can_act: bool,
    event: EventDetailView,
    audit: Vec<AuditView>,
    message: Option<String>,
    /// What the event told other systems.
    messages: Vec<MessageView>,
}

pub async fn events_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    query: Query<EventsQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let mut filter = query.filter(PAGE)?;
    filter.limit = PAGE + 1;
    let mut rows = context.store.list_events(&filter).await?;
    let shown = Shown::of(&query);
    let older_href =
        (rows.len() as i64 > PAGE).then(|| shown.href(rows[PAGE as usize - 1].intent_id));
    rows.truncate(PAGE as usize);
    let mut sources: Vec<String> = context.sources.keys().cloned().collect();
    sources.sort_unstable();
    let page = EventsPage {
        csrf: csrf_for(&admin, &context),
        sources,
        statuses: Status::ALL.iter().map(|s| s.as_str()).collect(),
        origins: Origin::ALL.iter().map(|o| o.as_str()).collect(),
        query: shown,
        events: rows.into_iter().map(EventView::from).collect(),
        older_href,
    };
    html(StatusCode::OK, &page)
}

pub async fn list_events(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<EventsQuery>,
) -> Result<Json<Value>, ApiError> {
    let filter = query.filter(50)?;
    let events = context.store.list_events(&filter).await?;
    let next_before = (events.len() as i64 == filter.limit)
        .then(|| events.last().map(|e| e.intent_id))
        .flatten();
    Ok(Json(json!({"events": events, "next_before": next_before})))
}

/// The stored event and its audit rows, as its page and the API show them;
/// 404 if it is not stored.
async fn stored_event(
    context: &Context,
    source: &str,
    event_id: &str,
) -> Result<(EventDetailRow, Vec<AuditRow>), ApiError> {
    let event = context
        .store
        .event(source, event_id)
        .await?
        .ok_or(ApiError::NotFound("event"))?;
    let audit = context.store.event_audit(source, event_id).await?;
    Ok((event, audit))
}

pub async fn event_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    target: EventRef,
    flash: Query<Flash>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let EventRef { source, event_id } = target;
    let (event, audit) = stored_event(&context, &source, &event_id).await?;
    let entry = context.store.event_entry(&source, &event_id).await?;
    let message = done_notice(flash.done.as_deref(), &event.event.status, entry.as_ref());
    let balance_minor = match (&event.event.account_id, &event.event.currency) {
        (Some(account), Some(currency)) if event.event.status == "stale" => context
            .store
            .account_balances(account)
            .await?
            .into_iter()
            .find(|b| &b.currency == currency)
            .map(|b| b.balance_minor),
        _ => None,
    };
    let ignored_because = (event.event.status == "ignored")
        .then(|| {
            context
                .source(&source)
                .map(|s| ignored_because(s, &event.event.event_type))
        })
        .flatten();
    let replay = replay::preview(&context, &event);
    let page = EventPage {
        can_act: !admin.who.read_only,
        csrf: csrf_for(&admin, &context),
        event: EventDetailView::new(
            event,
            EventContext {
                entry,
                balance_minor,
                ignored_because,
                replay,
            },
        ),
        audit: audit.into_iter().map(AuditView::from).collect(),
        message,
        messages: event_messages(&context.store, &source, &event_id).await?,
    };
    html(StatusCode::OK, &page)
}

pub async fn show_event(
    _: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
) -> Result<Json<Value>, ApiError> {
    let EventRef { source, event_id } = target;
    let (event, audit) = stored_event(&context, &source, &event_id).await?;
    let mut body = serde_json::to_value(event).map_err(|_| ApiError::Internal)?;
    body["audit"] = json!(audit);
    Ok(Json(body))
}

/// The `{action}` segment of an action route (`apply`, `dismiss`,
/// `replay`).
#[derive(Debug, Deserialize)]
pub struct ActionPath {
    pub action: String,
}

/// What an event's action route asks for.
pub enum Asked {
    Replay,
    Act(Action),
}

impl ActionPath {
    /// A replay, or one of the operator's actions; none (404) for anything
    /// else.
    pub fn asked(&self) -> Option<Asked> {
        if self.action == "replay" {
            return Some(Asked::Replay);
        }
        Action::parse(&self.action).map(Asked::Act)
    }
}

#[derive(Debug, Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    csrf: String,
    note: Option<String>,
    /// The status the page showed: the action takes the event only from it.
    status: Option<String>,
}

pub async fn event_action(
    admin: PageAdmin,
    context: Data<Context>,
    request: HttpRequest,
    target: EventRef,
    path: Path<ActionPath>,
    form: Form<ActionForm>,
) -> Result<HttpResponse, ApiError> {
    check_csrf(&request, &admin, &context, &form.csrf)?;
    let EventRef { source, event_id } = target;
    let form = form.into_inner();
    let seen = seen_status(form.status.as_deref())?;
    let note = clean_note(form.note)?;
    let actor = admin.actor();
    let asking = Asking {
        actor: &actor,
        note: note.as_deref(),
        seen,
    };
    let done = match path.asked().ok_or(ApiError::NotFound("action"))? {
        Asked::Replay => {
            // The page's form asks why; the API leaves the note to the caller.
            if asking.note.is_none() {
                return Err(ApiError::BadRequest("a note is required to replay".into()));
            }
            let replayed = action::replay(&context, &source, &event_id, &asking).await?;
            match (replayed.changed, &replayed.replayed_as) {
                (true, _) => "replay",
                (false, Some(_)) => "replay_duplicate",
                (false, None) => "replay_unchanged",
            }
        }
        Asked::Act(what) => {
            action::act(&context, what, &source, &event_id, &asking).await?;
            what.as_str()
        }
    };
    Ok(see_other(&format!(
        "{}&done={done}",
        event_href(&source, &event_id)
    )))
}

/// `POST /admin/api/events/{source}/{event_id}/{apply|dismiss}`, or
/// `POST /admin/api/event/{apply|dismiss}?source=&id=`.
pub async fn act_on_event(
    admin: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
    path: Path<ActionPath>,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<Value>, ApiError> {
    let EventRef { source, event_id } = target;
    let body = read_limited(&request, payload, ADMIN_BODY_LIMIT).await?;
    let (note, seen) = parse_note(&body)?;
    let actor = admin.actor();
    let asking = Asking {
        actor: &actor,
        note: note.as_deref(),
        seen,
    };
    match path.asked().ok_or(ApiError::NotFound("action"))? {
        Asked::Replay => {
            let replayed = action::replay(&context, &source, &event_id, &asking).await?;
            Ok(Json(json!({
                "source": source,
                "event_id": event_id,
                "previous_status": replayed.previous_status.as_str(),
                "status": replayed.status.as_str(),
                "changed": replayed.changed,
                "replayed_as": replayed.replayed_as.map(|(event_id, status, duplicate)| json!({
                    "event_id": event_id,
                    "status": status.as_str(),
                    "duplicate": duplicate,
                })),
            })))
        }
        Asked::Act(what) => {
            let outcome = action::act(&context, what, &source, &event_id, &asking).await?;
            Ok(Json(json!({
                "source": source,
                "event_id": event_id,
                "status": outcome.status,
                "previous_status": outcome.previous_status,
                "balance_after_minor": outcome.balance_after_minor,
            })))
        }
    }
}
