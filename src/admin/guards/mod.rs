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
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use self::view::held_accounts;
pub use self::view::{HeldAccountView, MANY_HELD, held_account_views};
use super::action::{self, Reset};
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::input::{clean_note, integer, json_body};
use super::render::{csrf_for, html, see_other};
use super::target::{AccountRef, GapQuery, guard_action_href, guard_href};
use super::view::{AuditView, EventView};
use crate::context::Context;
use crate::domain::SEQUENCE_FLOOR;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::operator::{GuardPreview, HeldReason};
use crate::store::HeldAccountRow;

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

/// Accounts holding many events for an operator.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldAccounts {
    /// Each holds at least this many.
    pub at_least: i64,
    pub accounts: Vec<HeldAccountRow>,
}

/// What a guard reset did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResetAnswer {
    pub source: String,
    pub account_id: String,
    pub guard_before: i64,
    /// The guard after the held events were applied.
    pub guard: i64,
    /// The events applied, in order.
    pub applied: Vec<String>,
    /// Events a check refused: still held, with the reason.
    pub still_held: Vec<HeldReason>,
    pub audit_id: i64,
}

/// Accounts holding many events for an operator, most first.
///
/// Accounts with at least `at_least` events `stale` or `rejected`.
#[utoipa::path(
    get,
    path = "/admin/api/held_accounts",
    tag = "guards",
    responses((status = 200, description = "Accounts holding many events, most first", body = HeldAccounts)),
)]
pub async fn list_held_accounts(
    _: BearerAdmin,
    context: Data<Context>,
) -> Result<Json<HeldAccounts>, ApiError> {
    let accounts = held_accounts(&context).await?;
    Ok(Json(HeldAccounts {
        at_least: MANY_HELD,
        accounts,
    }))
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

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    /// The value to preview; the suggestion when absent.
    to: Option<i64>,
}

/// A high-water account's sequence guard, and what a reset would apply.
///
/// `suggested_to` is the highest sequence applied in order below the guard;
/// `to` the value previewed (the one asked for, else the suggestion);
/// `would_apply` the stale events above `to` in the order a reset applies
/// them (at most 500). 409 for a contiguous source: skip its gap instead.
#[utoipa::path(
    get,
    path = "/admin/api/guard",
    tag = "guards",
    params(GapQuery, PreviewQuery),
    responses(
        (status = 200, description = "The guard and what a reset would apply", body = GuardPreview),
        (status = 400, description = "No or an unstorable id", body = ErrorBody),
        (status = 404, description = "The account has no sequence guard", body = ErrorBody),
        (status = 409, description = "The source is not high-water", body = ErrorBody),
    ),
)]
pub async fn show_guard(
    _: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    query: Query<PreviewQuery>,
) -> Result<Json<GuardPreview>, ApiError> {
    let AccountRef { source, account_id } = target;
    let preview = view::preview(&context, &source, &account_id, query.to).await?;
    Ok(Json(preview))
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

/// A reset's body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// The new guard: the stale events above it are applied in order.
    #[schema(required, value_type = i64)]
    #[serde(default, deserialize_with = "integer")]
    to: Option<i64>,
    /// The guard the preview showed (409 if it moved since).
    #[schema(required, value_type = i64)]
    #[serde(default, deserialize_with = "integer")]
    guard_seen: Option<i64>,
    /// Why, for the audit log: required (not blank), at most 2,000
    /// characters, line breaks and tabs but no other control character.
    #[schema(required, value_type = String, max_length = 2000, pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*$")]
    note: Option<String>,
}

/// Lower a sequence guard and apply the stale events above it.
///
/// `guard_seen` is the guard you previewed: 409 if it moved since, or if
/// `to` does not lower it. The stale events above `to` are applied in
/// sequence order; those a check refuses stay held, listed in `still_held`.
/// Audited with the note.
#[utoipa::path(
    post,
    path = "/admin/api/guard/reset",
    tag = "guards",
    params(GapQuery),
    request_body = ResetBody,
    responses(
        (status = 200, description = "What the reset did", body = ResetAnswer),
        (status = 400, description = "A body or id that does not parse, or no note", body = ErrorBody),
        (status = 404, description = "The account has no sequence guard", body = ErrorBody),
        (status = 409, description = "The guard moved since `guard_seen`, or the source is not high-water", body = ErrorBody),
    ),
)]
pub async fn reset_guard(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<ResetAnswer>, ApiError> {
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
    Ok(Json(ResetAnswer {
        source,
        account_id,
        guard_before: outcome.guard_before,
        guard: outcome.guard,
        applied: outcome.applied,
        still_held: outcome.still_held,
        audit_id: outcome.audit_id,
    }))
}
