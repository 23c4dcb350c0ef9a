//! Events: the list (`GET /admin/events`, `GET /admin/api/events`), one
//! event (`GET /admin/event`, `GET /admin/api/event`), and the actions on
//! one (`POST /admin/event/{action}`, `POST /admin/api/event/{action}`:
//! apply, dismiss, replay), each page beside its JSON twin; the path forms
//! (`/events/{source}/{event_id}`) take the same handlers.

mod answer;
mod filter;
mod replay;
mod view;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Json, Path, Payload, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa::openapi::ObjectBuilder;

use self::answer::{ActAnswer, ActionAnswer, EventDetail, EventList, ReplayAnswer};
use self::filter::{EventsQuery, Shown};
use self::view::{Context as EventContext, EventDetailView, done_notice, ignored_because};
use super::action::{self, Asking};
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::input::{ADMIN_BODY_LIMIT, NoteBody, clean_note, one_of, parse_note, seen_status};
use super::outbox::{MessageView, event_messages};
use super::render::{Flash, csrf_for, html, see_other};
use super::target::{EventPath, EventQuery, EventRef, event_href};
use super::view::{AuditView, EventView};
use crate::context::Context;
use crate::domain::{Origin, Status};
use crate::http::error::ErrorBody;
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

/// Events, newest first, filtered.
///
/// Pass `next_before` as `before` for the next page.
#[utoipa::path(
    get,
    path = "/admin/api/events",
    tag = "events",
    params(EventsQuery),
    responses(
        (status = 200, description = "Events, newest first", body = EventList),
        (status = 400, description = "A filter that does not parse", body = ErrorBody),
    ),
)]
pub async fn list_events(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<EventsQuery>,
) -> Result<Json<EventList>, ApiError> {
    let filter = query.filter(50)?;
    let events = context.store.list_events(&filter).await?;
    let next_before = (events.len() as i64 == filter.limit)
        .then(|| events.last().map(|e| e.intent_id))
        .flatten();
    Ok(Json(EventList {
        events,
        next_before,
    }))
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

/// One stored event, its raw payload and its audit.
///
/// The path form cannot carry `.` or `..` (clients resolve them away): use
/// `GET /admin/api/event?source=&id=` for any id. `amount_minor` is the
/// signed effect; `payload` the raw body (`payload_base64` when it is not
/// UTF-8); `signature_headers` the headers the source's scheme read on the
/// first delivery; `replayed_into` / `replayed_from` a re-keyed replay's two
/// events.
#[utoipa::path(
    get,
    path = "/admin/api/events/{source}/{event_id}",
    tag = "events",
    params(EventPath),
    responses(
        (status = 200, description = "The event, its payload and its audit", body = EventDetail),
        (status = 400, description = "An id that cannot be stored", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
)]
pub async fn show_event(
    _: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
) -> Result<Json<EventDetail>, ApiError> {
    let EventRef { source, event_id } = target;
    let (event, audit) = stored_event(&context, &source, &event_id).await?;
    Ok(Json(EventDetail { event, audit }))
}

/// One stored event, named in the query (any id).
///
/// As `GET /admin/api/events/{source}/{event_id}`, for ids such as `.` or
/// `..` that a path cannot carry.
#[utoipa::path(
    get,
    path = "/admin/api/event",
    tag = "events",
    params(EventQuery),
    responses(
        (status = 200, description = "The event, its payload and its audit", body = EventDetail),
        (status = 400, description = "No or an unstorable id", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
)]
pub async fn show_event_by_query(
    admin: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
) -> Result<Json<EventDetail>, ApiError> {
    show_event(admin, context, target).await
}

/// The `{action}` segment of an action route (`apply`, `dismiss`,
/// `replay`).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ActionPath {
    /// `apply` or `dismiss` a held event, or `replay` one with the
    /// current config.
    #[param(schema_with = action_names)]
    pub action: String,
}

/// The `{action}` values, from the actions themselves.
fn action_names() -> ObjectBuilder {
    let names = Action::ALL.iter().map(|a| a.as_str()).chain(["replay"]);
    one_of(
        names,
        "`apply` or `dismiss` a held event, or `replay` one with the current config.",
    )
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

/// Apply, dismiss or replay one event.
///
/// `apply` posts a `stale` event's effect once (its ledger entry marked
/// operator-applied) and leaves the sequence guard alone; of concurrent
/// calls exactly one gets 200. `dismiss` closes a `stale`, `rejected` or
/// `waiting` event without posting (a dismissed waiting event leaves its
/// number free: the stream waits there until it arrives or is skipped).
/// `replay` maps a `rejected` or `ignored` event's stored payload again with
/// the current config and decides it as a new delivery would; `changed`
/// false when nothing was written. With `status` in the body the action
/// takes the event only from that status (409 otherwise), as the pages do.
/// An apply a check refuses (a refund beyond what its payment has left, a
/// balance out of range) answers 409 with the reason, changes nothing, and
/// is audited as `apply_refused`. Every action is audited with the note, in
/// the transaction of its effect.
#[utoipa::path(
    post,
    path = "/admin/api/events/{source}/{event_id}/{action}",
    tag = "events",
    params(EventPath, ActionPath),
    request_body(content = Option<NoteBody>, description = "Optional: a note, and the status the caller saw (the action takes the event only from it); an empty body is none"),
    responses(
        (status = 200, description = "What the action did", body = ActionAnswer),
        (status = 400, description = "A body or id that does not parse", body = ErrorBody),
        (status = 404, description = "No such event or action, or its source is not configured", body = ErrorBody),
        (status = 409, description = "The event is not in a status the action takes, or not the one the caller saw", body = ErrorBody),
    ),
)]
pub async fn act_on_event(
    admin: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
    path: Path<ActionPath>,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<ActionAnswer>, ApiError> {
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
            Ok(Json(ActionAnswer::Replayed(ReplayAnswer::new(
                source, event_id, replayed,
            ))))
        }
        Asked::Act(what) => {
            let outcome = action::act(&context, what, &source, &event_id, &asking).await?;
            Ok(Json(ActionAnswer::Acted(ActAnswer::new(
                source, event_id, outcome,
            ))))
        }
    }
}

/// Apply, dismiss or replay one event named in the query (any id).
///
/// As `POST /admin/api/events/{source}/{event_id}/{action}`.
#[utoipa::path(
    post,
    path = "/admin/api/event/{action}",
    tag = "events",
    params(EventQuery, ActionPath),
    request_body(content = Option<NoteBody>, description = "Optional: a note, and the status the caller saw (the action takes the event only from it); an empty body is none"),
    responses(
        (status = 200, description = "What the action did", body = ActionAnswer),
        (status = 400, description = "A body or id that does not parse", body = ErrorBody),
        (status = 404, description = "No such event or action, or its source is not configured", body = ErrorBody),
        (status = 409, description = "The event is not in a status the action takes, or not the one the caller saw", body = ErrorBody),
    ),
)]
pub async fn act_on_event_by_query(
    admin: BearerAdmin,
    context: Data<Context>,
    target: EventRef,
    path: Path<ActionPath>,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<ActionAnswer>, ApiError> {
    act_on_event(admin, context, target, path, request, payload).await
}
