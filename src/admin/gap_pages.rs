//! The page for one account of a contiguous source waiting behind a gap:
//! the missing numbers, the parked events in the order they will be applied,
//! the "skip gap" form, and the account's past skips.

use actix_web::HttpRequest;
use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Query};
use askama::Template;
use serde::Deserialize;

use super::action;
use super::auth::{PageAdmin, check_csrf};
use super::gaps;
use super::input::clean_note;
use super::render::{Flash, csrf_for, html, see_other};
use super::target::{AccountRef, gap_href};
use super::view::{AuditView, EventView, GapView};
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
    let detail = gaps::detail(&context, &source, &account_id)
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

#[derive(Debug, Deserialize)]
pub struct SkipForm {
    #[serde(default)]
    csrf: String,
    note: Option<String>,
    /// The highest missing number the page showed.
    through: Option<i64>,
}

pub async fn skip_gap(
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
    let note = clean_note(form.note)?.ok_or_else(|| {
        ApiError::BadRequest(
            "a note is required: say why the missing numbers will never arrive".into(),
        )
    })?;
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
