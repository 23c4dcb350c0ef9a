//! The held queue, and acting on many of its events at once:
//! `GET /admin/held` lists stale, rejected and waiting events oldest first
//! with checkboxes; `POST /admin/held/preview` shows what the chosen action
//! would do, the total per account and currency, and asks for a note;
//! `POST /admin/held/act` runs it, one event at a time, each in its own
//! transaction and audited like a single apply or dismiss. An event whose
//! status changed meanwhile is refused (409 for that event alone), so a
//! resent form never moves money twice.

mod form;

use std::collections::BTreeMap;

use actix_web::web::{Data, Form};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use self::form::{BulkForm, FORM_BYTES, LIMIT, pick};
use super::action::{self, Picked};
use super::auth::{PageAdmin, check_csrf};
use super::input::clean_note;
use super::render::{csrf_for, html, see_other};
use super::target::event_href;
use super::view::{EventView, money};
use crate::context::Context;
use crate::domain::Status;
use crate::http::ApiError;
use crate::operator::Action;

/// The bulk forms' own bound: the documented most picks at their longest.
pub fn form_config() -> actix_web::web::FormConfig {
    crate::http::form::config(FORM_BYTES)
}

#[derive(Template)]
#[template(path = "held.html")]
struct HeldPage {
    csrf: String,
    /// False for a read-only holder: a list, no actions.
    can_act: bool,
    events: Vec<(String, EventView)>,
}

pub async fn held_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let events = context
        .store
        .held_queue(LIMIT)
        .await?
        .into_iter()
        .map(|row| {
            (
                pick(&row.status, &row.source, &row.event_id),
                EventView::from(row),
            )
        })
        .collect();
    html(
        actix_web::http::StatusCode::OK,
        &HeldPage {
            can_act: !admin.who.read_only,
            csrf: csrf_for(&admin, &context),
            events,
        },
    )
}

/// One picked event in the preview: what the action does to it.
pub struct PreviewLine {
    pub event: EventView,
    pub pick: String,
    /// Why the action leaves it as it is, if it does.
    pub skipped: Option<&'static str>,
}

#[derive(Template)]
#[template(path = "held_preview.html")]
struct PreviewPage {
    csrf: String,
    action: &'static str,
    lines: Vec<PreviewLine>,
    /// Account, currency, total change, number of events.
    totals: Vec<(String, String, String, usize)>,
}

pub async fn preview(
    admin: PageAdmin,
    context: Data<Context>,
    request: HttpRequest,
    form: Form<Vec<(String, String)>>,
) -> Result<HttpResponse, ApiError> {
    let form = BulkForm::parse(form.into_inner())?;
    check_csrf(&request, &admin, &context, &form.csrf)?;
    let mut lines = Vec::new();
    let mut totals: BTreeMap<(String, String), (i64, usize)> = BTreeMap::new();
    for (source, event_id, _) in &form.picks {
        let Some(row) = context.store.event(source, event_id).await? else {
            continue;
        };
        let event = row.event;
        // What `operator::act` will take, by its own rule.
        let takes = event
            .status
            .parse::<Status>()
            .is_ok_and(|status| form.action.takes(status));
        let skipped = match (takes, form.action) {
            (true, _) => None,
            (false, Action::Apply) => Some("only a stale event can be applied as it stands"),
            (false, Action::Dismiss) => Some("no longer held"),
        };
        if skipped.is_none()
            && form.action == Action::Apply
            && let (Some(account), Some(currency), Some(amount)) =
                (&event.account_id, &event.currency, event.amount_minor)
        {
            let total = totals
                .entry((account.clone(), currency.clone()))
                .or_default();
            total.0 = total.0.saturating_add(amount);
            total.1 += 1;
        }
        lines.push(PreviewLine {
            pick: pick(&event.status, &event.source, &event.event_id),
            event: EventView::from(event),
            skipped,
        });
    }
    let totals = totals
        .into_iter()
        .map(|((account, currency), (sum, n))| {
            let shown = money(Some(sum), Some(&currency));
            (account, currency, shown, n)
        })
        .collect();
    html(
        actix_web::http::StatusCode::OK,
        &PreviewPage {
            csrf: csrf_for(&admin, &context),
            action: form.action.as_str(),
            lines,
            totals,
        },
    )
}

#[derive(Template)]
#[template(path = "held_done.html")]
struct DonePage {
    csrf: String,
    action: &'static str,
    /// Event, its page, what happened.
    results: Vec<(String, String, String)>,
    done: usize,
}

pub async fn act(
    admin: PageAdmin,
    context: Data<Context>,
    request: HttpRequest,
    form: Form<Vec<(String, String)>>,
) -> Result<HttpResponse, ApiError> {
    let form = BulkForm::parse(form.into_inner())?;
    check_csrf(&request, &admin, &context, &form.csrf)?;
    let note = clean_note(form.note)?
        .ok_or_else(|| ApiError::BadRequest("a note is required: say why".into()))?;
    let actor = admin.actor();
    let picks: Vec<Picked> = form
        .picks
        .iter()
        .map(|(source, event_id, seen)| Picked {
            source,
            event_id,
            // Parsed when the form was read.
            seen: seen.as_deref().and_then(|s| s.parse::<Status>().ok()),
        })
        .collect();
    let many = action::act_on_many(&context, form.action, &picks, &actor, &note).await;
    let results = form
        .picks
        .iter()
        .zip(many.results)
        .map(|((source, event_id, _), result)| {
            let said = match result {
                Ok(outcome) => format!(
                    "{} (was {})",
                    outcome.status.as_str(),
                    outcome.previous_status.as_str()
                ),
                Err(error) => format!("left as it was: {error}"),
            };
            (event_id.clone(), event_href(source, event_id), said)
        })
        .collect();
    html(
        actix_web::http::StatusCode::OK,
        &DonePage {
            csrf: csrf_for(&admin, &context),
            action: form.action.as_str(),
            results,
            done: many.done,
        },
    )
}
