//! How an admin page answers: the rendered HTML, the redirect after a form
//! (and the `done` notice it carries back), the CSRF token a page's forms
//! carry, and the stylesheet every page links.

use actix_web::HttpResponse;
use actix_web::http::header::{CONTENT_TYPE, LOCATION};
use askama::Template;
use serde::Deserialize;

use super::auth::PageAdmin;
use crate::context::Context;
use crate::http::ApiError;

const CSS: &str = include_str!("../../templates/admin.css");

pub(super) fn html(
    status: actix_web::http::StatusCode,
    page: &impl Template,
) -> Result<HttpResponse, ApiError> {
    let body = page.render().map_err(|e| {
        tracing::error!("template failed: {e}");
        ApiError::Internal
    })?;
    Ok(HttpResponse::build(status)
        .insert_header((CONTENT_TYPE, "text/html; charset=utf-8"))
        .body(body))
}

pub(super) fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((LOCATION, location))
        .finish()
}

pub(super) fn csrf_for(admin: &PageAdmin, context: &Context) -> String {
    admin
        .session
        .as_ref()
        .map(|s| context.sessions.csrf_token(s))
        .unwrap_or_default()
}

pub async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/css; charset=utf-8"))
        .body(CSS)
}

/// `?done=<action>` after a redirect: which notice to show.
#[derive(Debug, Deserialize)]
pub struct Flash {
    pub done: Option<String>,
}
