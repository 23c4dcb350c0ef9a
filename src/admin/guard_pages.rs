//! The page for one account's high-water sequence guard: the guard, the
//! suggested value, the stale events a reset would apply in order, the
//! reset form, and the account's past actions.

use actix_web::HttpRequest;
use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Query};
use askama::Template;
use serde::Deserialize;

use super::action::{self, Reset};
use super::auth::{PageAdmin, check_csrf};
use super::guards;
use super::input::clean_note;
use super::render::{csrf_for, html, see_other};
use super::target::{AccountRef, guard_action_href, guard_href};
use super::view::{AuditView, EventView};
use crate::context::Context;
use crate::domain::SEQUENCE_FLOOR;
use crate::http::ApiError;

/// Audit rows shown.
const AUDIT_ROWS: i64 = 100;

#[derive(Template)]
#[template(path = "guard.html")]
struct GuardPage {
    csrf: String,
    /// False for a read-only holder: no reset form.
    can_act: bool,
    source: String,
    account_id: String,
    guard: i64,
    suggested: String,
    to: i64,
    /// `to` as a person reads it: the floor is "the floor", not -2^62-1.
    to_shown: String,
    /// What the preview box holds: empty for the floor (the default).
    to_input: String,
    reset_href: String,
    would_apply: Vec<EventView>,
    audit: Vec<AuditView>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct GuardQuery {
    to: Option<i64>,
    /// After a reset: how many events it applied and left held.
    applied: Option<usize>,
    held: Option<usize>,
}

pub async fn guard_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    target: AccountRef,
    query: Query<GuardQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let AccountRef { source, account_id } = target;
    let preview = guards::preview(&context, &source, &account_id, query.to).await?;
    let audit = context
        .store
        .account_audit(&source, &account_id, AUDIT_ROWS)
        .await?;
    let page = GuardPage {
        can_act: !admin.who.read_only,
        csrf: csrf_for(&admin, &context),
        reset_href: guard_action_href(&source, &account_id, "reset"),
        guard: preview.guard,
        suggested: preview.suggested_to.map_or_else(
            || "none: no event was applied below the guard".to_owned(),
            |s| s.to_string(),
        ),
        to: preview.to,
        to_shown: if preview.to == SEQUENCE_FLOOR {
            "the floor (below every sequence)".to_owned()
        } else {
            preview.to.to_string()
        },
        to_input: if preview.to == SEQUENCE_FLOOR {
            String::new()
        } else {
            preview.to.to_string()
        },
        would_apply: preview.would_apply.into_iter().map(EventView::from).collect(),
        audit: audit.into_iter().map(AuditView::from).collect(),
        message: query.applied.map(|applied| {
            format!(
                "Guard reset: {applied} held event(s) applied in order, {} still held (see each event's reason).",
                query.held.unwrap_or(0)
            )
        }),
        source,
        account_id,
    };
    html(StatusCode::OK, &page)
}

#[derive(Debug, Deserialize)]
pub struct ResetForm {
    #[serde(default)]
    csrf: String,
    note: Option<String>,
    to: Option<i64>,
    guard_seen: Option<i64>,
}

pub async fn reset_guard(
    admin: PageAdmin,
    context: Data<Context>,
    request: HttpRequest,
    target: AccountRef,
    form: Form<ResetForm>,
) -> Result<HttpResponse, ApiError> {
    check_csrf(&request, &admin, &context, &form.csrf)?;
    let AccountRef { source, account_id } = target;
    let form = form.into_inner();
    let (Some(to), Some(guard_seen)) = (form.to, form.guard_seen) else {
        return Err(ApiError::BadRequest(
            "the form lacks the new guard or the guard it showed; reload".into(),
        ));
    };
    let note = clean_note(form.note)?.ok_or_else(|| {
        ApiError::BadRequest("a note is required: say why the guard is wrong".into())
    })?;
    let actor = admin.actor();
    let reset = Reset {
        to,
        guard_seen,
        actor: &actor,
        note: &note,
    };
    let outcome = action::reset_guard(&context, &source, &account_id, &reset).await?;
    Ok(see_other(&format!(
        "{}&applied={}&held={}",
        guard_href(&source, &account_id),
        outcome.applied.len(),
        outcome.still_held.len()
    )))
}
