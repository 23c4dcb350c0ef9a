//! High-water sequence guards: the page for one account's guard (the
//! guard, the suggested value, the stale events a reset would apply in
//! order, the reset form, and the account's past actions) and the JSON API
//! (bearer token only): the accounts holding many events, preview a reset,
//! and reset.

mod view;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Json, Payload, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use serde_json::{Value, json};

use self::view::held_accounts;
pub use self::view::{HeldAccountView, MANY_HELD, held_account_views};
use super::action::{self, Reset};
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::input::{clean_note, json_body};
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

/// `GET /admin/api/held_accounts`: accounts holding at least
/// [`MANY_HELD`] events for an operator, most first.
pub async fn list_held_accounts(
    _: BearerAdmin,
    context: Data<Context>,
) -> Result<Json<Value>, ApiError> {
    let accounts = held_accounts(&context).await?;
    Ok(Json(json!({"at_least": MANY_HELD, "accounts": accounts})))
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
    let preview = view::preview(&context, &source, &account_id, query.to).await?;
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
pub struct PreviewQuery {
    /// The value to preview; the suggestion when absent.
    to: Option<i64>,
}

/// `GET /admin/api/guard?source=&account=[&to=N]`: the guard, the suggested
/// value, and the stale events a reset to `to` would apply, in order.
pub async fn show_guard(
    _: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    query: Query<PreviewQuery>,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let preview = view::preview(&context, &source, &account_id, query.to).await?;
    Ok(Json(json!(preview)))
}

/// A reset's note, from the page's form or the API's body: required.
fn reset_note(note: Option<String>) -> Result<String, ApiError> {
    clean_note(note)?.ok_or_else(|| {
        ApiError::BadRequest("a note is required: say why the guard is wrong".into())
    })
}

#[derive(Debug, Deserialize)]
pub struct ResetForm {
    #[serde(default)]
    csrf: String,
    note: Option<String>,
    to: Option<i64>,
    guard_seen: Option<i64>,
}

pub async fn reset_from_page(
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
    let note = reset_note(form.note)?;
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetBody {
    to: Option<i64>,
    guard_seen: Option<i64>,
    note: Option<String>,
}

/// `POST /admin/api/guard/reset?source=&account=` with
/// `{"to": N, "guard_seen": G, "note": "..."}` (all required): lowers the
/// guard from G (409 if it is not G any more) to N and applies the stale
/// events above N in order.
pub async fn reset_guard(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let body: ResetBody = json_body(
        &request,
        payload,
        r#"{"to": <sequence>, "guard_seen": <sequence>, "note": "..."}"#,
    )
    .await?;
    let (Some(to), Some(guard_seen)) = (body.to, body.guard_seen) else {
        return Err(ApiError::BadRequest(
            "to and guard_seen are required: the new guard, and the guard the preview showed"
                .into(),
        ));
    };
    let note = reset_note(body.note)?;
    let actor = admin.actor();
    let reset = Reset {
        to,
        guard_seen,
        actor: &actor,
        note: &note,
    };
    let outcome = action::reset_guard(&context, &source, &account_id, &reset).await?;
    Ok(Json(json!({
        "source": source,
        "account_id": account_id,
        "guard_before": outcome.guard_before,
        "guard": outcome.guard,
        "applied": outcome.applied,
        "still_held": outcome.still_held,
        "audit_id": outcome.audit_id,
    })))
}
