//! The minimal admin HTML: a dashboard (held queue, gaps, recent events,
//! balances, counters, the outbox) and an event page with apply / dismiss.
//! Signing in and out is in `login`, the gap page in `gap_pages`.

use actix_web::web::{Data, Form, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::action::{self, Asking};
use super::auth::{PageAdmin, check_csrf};
use super::event_view::{Context as EventContext, EventDetailView, done_notice, ignored_because};
use super::gaps;
use super::guards;
use super::input::{clean_note, seen_status};
use super::login::LoginPage;
use super::render::{Flash, csrf_for, html, see_other};
use super::target::{EventRef, event_href};
use super::view::{AuditView, BalanceView, EventView, GapView, HeldAccountView};
use crate::context::Context;
use crate::domain::OrderingMode;
use crate::http::ApiError;
use crate::operator::Action;
use crate::store::EventFilter;
use crate::telemetry::Counters;

#[derive(Template)]
#[template(path = "dashboard.html")]
struct DashboardPage {
    csrf: String,
    /// False for a read-only holder: no "Send again".
    can_act: bool,
    held: Vec<EventView>,
    held_accounts: Vec<HeldAccountView>,
    many_held: i64,
    gaps: Vec<GapView>,
    held_gaps: usize,
    recent: Vec<EventView>,
    balances: Vec<BalanceView>,
    counters: Counters,
    outbox: Vec<super::outbox::DestinationView>,
    /// Destinations the config does not name that still hold messages.
    unconfigured: Vec<crate::store::Holding>,
    chart: super::chart::Chart,
    sources: Vec<super::source_view::SourceView>,
    /// Whether the ledger held at the latest check, and what it said.
    invariants: (bool, String),
    /// How long the oldest stale or rejected event has waited.
    oldest_held: Option<String>,
    message: Option<&'static str>,
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
    messages: Vec<super::outbox::MessageView>,
}

/// The dashboard, or the login form for a visitor without a session.
pub async fn dashboard(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    flash: Query<Flash>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return html(
            actix_web::http::StatusCode::OK,
            &LoginPage {
                failed: false,
                wait_secs: None,
            },
        );
    };
    let recent = context
        .store
        .list_events(&EventFilter {
            limit: 50,
            ..EventFilter::default()
        })
        .await?;
    let gaps: Vec<GapView> = gaps::all(&context)
        .await?
        .into_iter()
        .map(GapView::from)
        .collect();
    let held_accounts = guards::held_accounts(&context)
        .await?
        .into_iter()
        .map(|row| {
            let high_water = context
                .source(&row.source)
                .is_some_and(|s| s.ordering.mode == OrderingMode::HighWater);
            HeldAccountView::new(row, high_water)
        })
        .collect();
    let page = DashboardPage {
        can_act: !admin.who.read_only,
        csrf: csrf_for(&admin, &context),
        held_accounts,
        many_held: guards::MANY_HELD,
        held_gaps: gaps.iter().filter(|g| g.held).count(),
        gaps,
        held: context
            .store
            .held_events(100)
            .await?
            .into_iter()
            .map(EventView::from)
            .collect(),
        recent: recent.into_iter().map(EventView::from).collect(),
        balances: context
            .store
            .list_balances(100)
            .await?
            .into_iter()
            .map(BalanceView::from)
            .collect(),
        counters: context.metrics.snapshot(),
        chart: super::chart::chart(&context.metrics, context.clock.now()),
        sources: super::source_view::sources(&context, context.clock.now()),
        invariants: super::source_view::invariants(&context, context.clock.now()),
        oldest_held: context
            .store
            .held_counts()
            .await?
            .iter()
            .filter(|h| h.status == "stale" || h.status == "rejected")
            .map(|h| h.oldest_received_at)
            .min()
            .map(|at| super::view::duration((context.clock.now() - at).num_seconds().max(0))),
        outbox: super::outbox::destinations(&context.store, chrono::Utc::now()).await?,
        unconfigured: crate::outbox::unconfigured(&context.store).await?,
        message: (flash.done.as_deref() == Some("replay"))
            .then_some("Re-queued: the message will be sent again, with the same id."),
    };
    html(actix_web::http::StatusCode::OK, &page)
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
    let event = context
        .store
        .event(&source, &event_id)
        .await?
        .ok_or(ApiError::NotFound("event"))?;
    let audit = context.store.event_audit(&source, &event_id).await?;
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
    let replay = super::replay::preview(&context, &event);
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
        messages: super::outbox::event_messages(&context.store, &source, &event_id).await?,
    };
    html(actix_web::http::StatusCode::OK, &page)
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
            if replayed.changed {
                "replay"
            } else {
                "replay_unchanged"
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
