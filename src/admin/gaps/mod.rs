//! Contiguous streams waiting behind a gap: the page for one account (the
//! missing numbers, the parked events in the order they will be applied,
//! the "skip gap" form, and the account's past skips) and the JSON API
//! (bearer token only): list them, inspect one, and skip it.

mod view;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Json, Payload, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use self::view::{Gap, MissingRange};
pub use self::view::{GapView, all};
use super::action;
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::input::{clean_note, integer, json_body};
use super::render::{Flash, csrf_for, html, see_other};
use super::target::{AccountRef, GapPath, GapQuery, gap_href};
use super::view::{AuditView, EventView};
use crate::context::Context;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::store::{AuditRow, EventRow};

#[derive(Template)]
#[template(path = "gap.html")]
struct GapPage {
    csrf: String,
    /// False for a read-only holder: no form.
    can_act: bool,
    source: String,
    account_id: String,
    gap: Option<GapView>,
    waiting: Vec<EventView>,
    audit: Vec<AuditView>,
    message: Option<&'static str>,
}

/// Every account with parked events, oldest gap first.
#[derive(Debug, Serialize, ToSchema)]
pub struct GapList {
    pub gaps: Vec<Gap>,
}

/// One account's gap, its parked events and its skips.
#[derive(Debug, Serialize, ToSchema)]
pub struct GapAnswer {
    pub source: String,
    pub account_id: String,
    /// None once nothing waits (the skips stay listed).
    pub gap: Option<Gap>,
    /// In the order they will be applied.
    pub waiting_events: Vec<EventRow>,
    pub audit: Vec<AuditRow>,
}

/// What a skip did.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkipAnswer {
    pub source: String,
    pub account_id: String,
    pub skipped: Vec<MissingRange>,
    /// Parked events applied.
    pub released: u64,
    /// The account's guard afterwards.
    pub guard: i64,
    /// A parked event that could not be applied: now `rejected`, held.
    pub held: Option<String>,
    /// More parked events remain beyond the bound.
    pub more: bool,
    pub audit_id: i64,
}

/// Every account of a contiguous source waiting at a gap, oldest first.
///
/// `missing` lists the missing ranges (`missing_text` as `4, 7-9`);
/// `skip_through` is the highest missing number listed, what a skip
/// confirmed from this view may pass over; `held` is true once the gap is
/// open longer than `gap_timeout_secs`.
#[utoipa::path(
    get,
    path = "/admin/api/gaps",
    tag = "gaps",
    responses((status = 200, description = "Accounts waiting at a gap", body = GapList)),
)]
pub async fn list_gaps(_: BearerAdmin, context: Data<Context>) -> Result<Json<GapList>, ApiError> {
    let gaps = view::all(&context).await?;
    Ok(Json(GapList { gaps }))
}

pub async fn gap_page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    target: AccountRef,
    flash: Query<Flash>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let AccountRef { source, account_id } = target;
    let detail = view::detail(&context, &source, &account_id)
        .await?
        .ok_or(ApiError::NotFound("waiting event"))?;
    let page = GapPage {
        can_act: !admin.who.read_only,
        csrf: csrf_for(&admin, &context),
        source,
        account_id,
        gap: detail.gap.map(GapView::from),
        waiting: detail.waiting.into_iter().map(EventView::from).collect(),
        audit: detail.audit.into_iter().map(AuditView::from).collect(),
        message: (flash.done.as_deref() == Some("skip")).then_some(
            "Skipped: the missing numbers were recorded and the parked events applied in order.",
        ),
    };
    html(StatusCode::OK, &page)
}

/// One account's gap, its parked events and its skips.
///
/// The gap is null once nothing waits; the parked events are listed in the
/// order they will apply.
#[utoipa::path(
    get,
    path = "/admin/api/gaps/{source}/{account_id}",
    tag = "gaps",
    params(GapPath),
    responses(
        (status = 200, description = "The gap, its parked events and its skips", body = GapAnswer),
        (status = 400, description = "An id that cannot be stored", body = ErrorBody),
        (status = 404, description = "The account never waited at a gap", body = ErrorBody),
    ),
)]
pub async fn show_gap(
    _: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
) -> Result<Json<GapAnswer>, ApiError> {
    let AccountRef { source, account_id } = target;
    let detail = view::detail(&context, &source, &account_id)
        .await?
        .ok_or(ApiError::NotFound("waiting event"))?;
    Ok(Json(GapAnswer {
        source,
        account_id,
        gap: detail.gap,
        waiting_events: detail.waiting,
        audit: detail.audit,
    }))
}

/// One account's gap, named in the query (any id).
///
/// As `GET /admin/api/gaps/{source}/{account_id}`.
#[utoipa::path(
    get,
    path = "/admin/api/gap",
    tag = "gaps",
    params(GapQuery),
    responses(
        (status = 200, description = "The gap, its parked events and its skips", body = GapAnswer),
        (status = 400, description = "No or an unstorable id", body = ErrorBody),
        (status = 404, description = "The account never waited at a gap", body = ErrorBody),
    ),
)]
pub async fn show_gap_by_query(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
) -> Result<Json<GapAnswer>, ApiError> {
    show_gap(admin, context, target).await
}

/// A skip's note, from the page's form or the API's body: required.
fn skip_note(note: Option<String>) -> Result<String, ApiError> {
    clean_note(note)?.ok_or_else(|| {
        ApiError::BadRequest(
            "a note is required: say why the missing numbers will never arrive".into(),
        )
    })
}

#[derive(Debug, Deserialize)]
pub struct SkipForm {
    #[serde(default)]
    csrf: String,
    note: Option<String>,
    /// The highest missing number the page showed.
    through: Option<i64>,
}

pub async fn skip_from_page(
    admin: PageAdmin,
    context: Data<Context>,
    request: HttpRequest,
    target: AccountRef,
    form: Form<SkipForm>,
) -> Result<HttpResponse, ApiError> {
    check_csrf(&request, &admin, &context, &form.csrf)?;
    let AccountRef { source, account_id } = target;
    let form = form.into_inner();
    let through = form
        .through
        .ok_or_else(|| ApiError::BadRequest("the form lacks the numbers to skip; reload".into()))?;
    let note = skip_note(form.note)?;
    action::skip_gap(
        &context,
        &source,
        &account_id,
        through,
        &admin.actor(),
        &note,
    )
    .await?;
    Ok(see_other(&format!(
        "{}&done=skip",
        gap_href(&source, &account_id)
    )))
}

/// A skip's body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkipBody {
    /// Why, for the audit log: required (not blank), at most 2,000
    /// characters, line breaks and tabs but no other control character.
    #[schema(required, value_type = String, max_length = 2000, pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*$")]
    note: Option<String>,
    /// The highest missing number the operator confirms skipping.
    #[schema(required, value_type = i64)]
    #[serde(default, deserialize_with = "integer")]
    through: Option<i64>,
}

/// Skip the missing numbers of a gap up to `through`.
///
/// `through` is the highest missing number you confirm (`skip_through` of
/// the gap you read); a number that went missing after you read the gap is
/// never skipped. Applies the parked events between them in order (up to
/// `release_batch`; the rest drains); 409 when nothing up to `through` can
/// be skipped any more (sent twice, or the gap changed). Audited with the
/// note.
#[utoipa::path(
    post,
    path = "/admin/api/gaps/{source}/{account_id}/skip",
    tag = "gaps",
    params(GapPath),
    request_body = SkipBody,
    responses(
        (status = 200, description = "What the skip did", body = SkipAnswer),
        (status = 400, description = "A body or id that does not parse, or no note", body = ErrorBody),
        (status = 404, description = "Nothing waits at this account", body = ErrorBody),
        (status = 409, description = "Nothing to skip up to `through`, or the source is not contiguous", body = ErrorBody),
    ),
)]
pub async fn skip_gap(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<SkipAnswer>, ApiError> {
    let AccountRef { source, account_id } = target;
    let body: SkipBody = json_body(
        &request,
        payload,
        r#"{"note": "...", "through": <sequence>}"#,
    )
    .await?;
    let note = skip_note(body.note)?;
    let through = body.through.ok_or_else(|| {
        ApiError::BadRequest(
            "through is required: the highest missing number you confirm skipping".into(),
        )
    })?;
    let outcome = action::skip_gap(
        &context,
        &source,
        &account_id,
        through,
        &admin.actor(),
        &note,
    )
    .await?;
    let skipped: Vec<MissingRange> = outcome.skipped.iter().map(MissingRange::from).collect();
    Ok(Json(SkipAnswer {
        source,
        account_id,
        skipped,
        released: outcome.released,
        guard: outcome.guard,
        held: outcome.held,
        more: outcome.more,
        audit_id: outcome.audit_id,
    }))
}

/// Skip a gap of an account named in the query (any id).
///
/// As `POST /admin/api/gaps/{source}/{account_id}/skip`.
#[utoipa::path(
    post,
    path = "/admin/api/gap/skip",
    tag = "gaps",
    params(GapQuery),
    request_body = SkipBody,
    responses(
        (status = 200, description = "What the skip did", body = SkipAnswer),
        (status = 400, description = "A body or id that does not parse, or no note", body = ErrorBody),
        (status = 404, description = "Nothing waits at this account", body = ErrorBody),
        (status = 409, description = "Nothing to skip up to `through`, or the source is not contiguous", body = ErrorBody),
    ),
)]
pub async fn skip_gap_by_query(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<SkipAnswer>, ApiError> {
    skip_gap(admin, context, target, request, payload).await
}
