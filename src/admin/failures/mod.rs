//! Why deliveries fail verification: `GET /admin/failures` (every source's
//! latest, or up to 1,000 of one with `?source=`) and
//! `GET /admin/api/failures?source=&limit=`. What is shown is what
//! [`crate::failures`] keeps: never a body, a header value or a secret.

mod view;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Json, Query};
use askama::Template;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use self::view::{FailureView, SourceFailures};
use super::auth::{BearerAdmin, PageAdmin};
use super::render::{csrf_for, html, see_other};
use crate::context::Context;
use crate::failures::{Failure, PER_SOURCE};
use crate::http::ApiError;
use crate::http::error::ErrorBody;

/// Per source on the page without `?source=`.
const LATEST: usize = 20;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FailureQuery {
    /// One source, by name; all when absent.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    source: Option<String>,
    /// Failures per source, 1-1000 (default 100); others are brought
    /// within.
    limit: Option<i64>,
}

/// The latest verification failures of each source asked for.
#[derive(Debug, Serialize, ToSchema)]
pub struct FailureList {
    pub sources: Vec<SourceFailureList>,
}

/// One source's latest verification failures, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceFailureList {
    pub source: String,
    /// How many are kept for it (at most 1,000).
    pub kept: usize,
    pub failures: Vec<Failure>,
}

#[derive(Template)]
#[template(path = "failures.html")]
struct FailuresPage {
    csrf: String,
    /// One source asked for by name.
    one: bool,
    sources: Vec<SourceFailures>,
    per_source: usize,
}

/// The configured sources asked for (all, or the one named), with what is
/// kept for each; an unknown name is a 404.
fn gather(
    context: &Context,
    source: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, usize, Vec<Failure>)>, ApiError> {
    let mut names: Vec<&str> = match source {
        Some(name) => vec![
            context
                .source(name)
                .ok_or(ApiError::NotFound("source"))?
                .name
                .as_str(),
        ],
        None => context.sources.keys().map(String::as_str).collect(),
    };
    names.sort_unstable();
    Ok(names
        .into_iter()
        .map(|name| {
            let all = context.failures.recent(name, PER_SOURCE);
            let kept = all.len();
            (name.to_owned(), kept, all.into_iter().take(limit).collect())
        })
        .collect())
}

pub async fn page(
    admin: Option<PageAdmin>,
    context: Data<Context>,
    query: Query<FailureQuery>,
) -> Result<HttpResponse, ApiError> {
    let Some(admin) = admin else {
        return Ok(see_other("/admin"));
    };
    let one = query.source.is_some();
    let limit = if one { PER_SOURCE } else { LATEST };
    let sources = gather(&context, query.source.as_deref(), limit)?
        .into_iter()
        .map(|(source, kept, failures)| SourceFailures {
            source,
            kept,
            failures: failures.into_iter().map(FailureView::from).collect(),
        })
        .collect();
    let page = FailuresPage {
        csrf: csrf_for(&admin, &context),
        one,
        sources,
        per_source: PER_SOURCE,
    };
    html(StatusCode::OK, &page)
}

/// Why deliveries failed verification: the latest per source.
///
/// Never a body, a header value or a secret: the header names, the body's
/// size and hash, and the signed time with its skew.
#[utoipa::path(
    get,
    path = "/admin/api/failures",
    tag = "failures",
    params(FailureQuery),
    responses(
        (status = 200, description = "The latest failures per source", body = FailureList),
        (status = 400, description = "A limit that does not parse", body = ErrorBody),
        (status = 404, description = "No source by that name is configured", body = ErrorBody),
    ),
)]
pub async fn api(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<FailureQuery>,
) -> Result<Json<FailureList>, ApiError> {
    // Within 1..=PER_SOURCE, so the cast keeps it whole.
    let limit = query.limit.unwrap_or(100).clamp(1, PER_SOURCE as i64) as usize;
    let sources = gather(&context, query.source.as_deref(), limit)?
        .into_iter()
        .map(|(source, kept, failures)| SourceFailureList {
            source,
            kept,
            failures,
        })
        .collect();
    Ok(Json(FailureList { sources }))
}
