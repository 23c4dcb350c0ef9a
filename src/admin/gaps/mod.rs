//! Contiguous streams waiting behind a gap: the page for one account (the
//! missing numbers, the parked events in the order they will be applied,
//! the "skip gap" form, and the account's past skips) and the JSON API
//! (bearer token only): list them, inspect one, and skip it.

mod view;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Json, Payload, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use serde_json::{Value, json};

use self::view::MissingRange;
pub use self::view::{GapView, all};
use super::action;
use super::auth::{BearerAdmin, PageAdmin, check_csrf};
use super::input::{clean_note, json_body};
use super::render::{Flash, csrf_for, html, see_other};
use super::target::{AccountRef, gap_href};
use super::view::{AuditView, EventView};
use crate::context::Context;
use crate::http::ApiError;

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

/// `GET /admin/api/gaps`: every account with parked events, oldest first.
pub async fn list_gaps(_: BearerAdmin, context: Data<Context>) -> Result<Json<Value>, ApiError> {
    let gaps = view::all(&context).await?;
    Ok(Json(json!({"gaps": gaps})))
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

/// `GET /admin/api/gaps/{source}/{account_id}`: the gap (null once nothing
/// waits), its parked events in the order they will be applied, and the
/// account's skip actions; 404 if the account has neither.
pub async fn show_gap(
    _: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let detail = view::detail(&context, &source, &account_id)
        .await?
        .ok_or(ApiError::NotFound("waiting event"))?;
    Ok(Json(json!({
        "source": source,
        "account_id": account_id,
        "gap": detail.gap,
        "waiting_events": detail.waiting,
        "audit": detail.audit,
    })))
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkipBody {
    note: Option<String>,
    through: Option<i64>,
}

/// `POST /admin/api/gaps/{source}/{account_id}/skip` with
/// `{"note": "...", "through": N}` (both required): skips the missing
/// numbers up to N and applies the parked events between them in order.
pub async fn skip_gap(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<Value>, ApiError> {
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
    Ok(Json(json!({
        "source": source,
        "account_id": account_id,
        "skipped": skipped,
        "released": outcome.released,
        "guard": outcome.guard,
        "held": outcome.held,
        "more": outcome.more,
        "audit_id": outcome.audit_id,
    })))
}
