//! The audit log: every operator action, newest first, filterable by actor
//! (`GET /admin/audit?actor=&before=`, and `/admin/api/audit` with
//! `limit`), paged by audit id.

mod view;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Json, Query};
use askama::Template;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use self::view::AuditLine;
use super::auth::{BearerAdmin, PageAdmin};
use super::render::{csrf_for, html, see_other};
use super::target::{audit_href, plain_id};
use crate::context::Context;
use crate::http::ApiError;
use crate::http::error::ErrorBody;
use crate::store::AuditRow;

/// Rows per page.
const PAGE: i64 = 100;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this actor's actions (as the log names them: `ops (token)`).
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    actor: Option<String>,
    /// The previous page's `next_before`.
    before: Option<i64>,
    /// Rows per page, 1-500 (default 100); others are brought within.
    limit: Option<i64>,
}

/// A page of the audit log, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    pub audit: Vec<AuditRow>,
    /// Pass as `before` for the next page; none on the last.
    pub next_before: Option<i64>,
}

impl AuditQuery {
    /// The actor filter, checked; an empty one is none.
    fn actor(&self) -> Result<Option<String>, ApiError> {
        match self.actor.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(actor) => plain_id("actor", actor.to_owned()).map(Some),
        }
    }
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    csrf: String,
    actor: String,
    lines: Vec<AuditLine>,
    older_href: Option<String>,
}

pub async fn page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    query: Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let actor = query.actor()?;
    let mut rows = context
        .store
        .audit_log(actor.as_deref(), query.before, PAGE + 1)
        .await?;
    let older_href = (rows.len() as i64 > PAGE)
        .then(|| audit_href(actor.as_deref(), rows[PAGE as usize - 1].audit_id));
    rows.truncate(PAGE as usize);
    let page = AuditPage {
        csrf: csrf_for(&admin, &context),
        actor: actor.unwrap_or_default(),
        lines: rows.into_iter().map(AuditLine::from).collect(),
        older_href,
    };
    html(StatusCode::OK, &page)
}

/// The audit log: every operator action, newest first.
///
/// Pass `next_before` as `before` for the next page.
#[utoipa::path(
    get,
    path = "/admin/api/audit",
    tag = "audit",
    params(AuditQuery),
    responses(
        (status = 200, description = "Operator actions, newest first", body = AuditList),
        (status = 400, description = "A filter that does not parse", body = ErrorBody),
    ),
)]
pub async fn api(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<AuditQuery>,
) -> Result<Json<AuditList>, ApiError> {
    let actor = query.actor()?;
    let limit = query.limit.unwrap_or(PAGE).clamp(1, 500);
    let rows = context
        .store
        .audit_log(actor.as_deref(), query.before, limit)
        .await?;
    let next_before = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.audit_id))
        .flatten();
    Ok(Json(AuditList {
        audit: rows,
        next_before,
    }))
}
