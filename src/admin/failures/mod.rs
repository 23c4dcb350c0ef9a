//! Why deliveries fail verification: `GET /admin/failures` (every source's
//! latest, or up to 1,000 of one with `?source=`) and
//! `GET /admin/api/failures?source=&limit=`. What is shown is what
//! [`crate::failures`] keeps: never a body, a header value or a secret.

mod view;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Json, Query};
use askama::Template;
use serde::Deserialize;
use serde_json::{Value, json};

use self::view::{FailureView, SourceFailures};
use super::auth::{BearerAdmin, PageAdmin};
use super::render::{csrf_for, html, see_other};
use crate::context::Context;
use crate::failures::{Failure, PER_SOURCE};
use crate::http::ApiError;

/// Per source on the page without `?source=`.
const LATEST: usize = 20;

#[derive(Debug, Deserialize)]
pub struct FailureQuery {
    source: Option<String>,
    limit: Option<usize>,
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

/// `{"sources": [{"source", "kept", "failures": [...]}]}`, newest first;
/// `limit` 1-1000 per source (default 100).
pub async fn api(
    _: BearerAdmin,
    context: Data<Context>,
    query: Query<FailureQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = query.limit.unwrap_or(100).clamp(1, PER_SOURCE);
    let sources: Vec<Value> = gather(&context, query.source.as_deref(), limit)?
        .into_iter()
        .map(|(source, kept, failures)| json!({"source": source, "kept": kept, "failures": failures}))
        .collect();
    Ok(Json(json!({ "sources": sources })))
}
