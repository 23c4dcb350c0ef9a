//! Signing in to the admin pages and out: the login form's page, the
//! session cookie it sets, and its removal.

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::web::{Data, Form};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::auth::{SESSION_COOKIE, check_same_origin, check_token, session_of};
use super::render::{html, see_other};
use crate::context::Context;
use crate::http::ApiError;

/// The sign-in page (also what the dashboard shows without a session).
#[derive(Template)]
#[template(path = "login.html")]
pub(super) struct LoginPage {
    pub failed: bool,
    /// Seconds this address must wait after too many failed sign-ins.
    pub wait_secs: Option<u64>,
}

/// `GET /admin/login`: the form lives on the dashboard's address.
pub async fn to_dashboard() -> HttpResponse {
    see_other("/admin")
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
}

pub async fn login(
    context: Data<Context>,
    request: HttpRequest,
    form: Form<LoginForm>,
) -> Result<HttpResponse, ApiError> {
    check_same_origin(&request)?;
    let who = match check_token(&request, &context, form.token.trim()) {
        Ok(who) => who,
        Err(ApiError::TooManyAttempts(wait)) => {
            let page = LoginPage {
                failed: true,
                wait_secs: Some(wait),
            };
            let mut response = html(actix_web::http::StatusCode::TOO_MANY_REQUESTS, &page)?;
            response.headers_mut().insert(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from(wait),
            );
            return Ok(response);
        }
        Err(_) => {
            let page = LoginPage {
                failed: true,
                wait_secs: None,
            };
            return html(actix_web::http::StatusCode::UNAUTHORIZED, &page);
        }
    };
    let holder = context
        .admins
        .iter()
        .find(|admin| admin.name == who.name)
        .ok_or(ApiError::Internal)?;
    let value = context
        .sessions
        .issue(context.clock.now(), &holder.name, &holder.token)
        .map_err(|_| ApiError::Internal)?;
    let cookie = Cookie::build(SESSION_COOKIE, value)
        .path("/admin")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(request.connection_info().scheme() == "https")
        .max_age(CookieDuration::seconds(context.sessions.ttl_secs() as i64))
        .finish();
    let mut response = see_other("/admin");
    response
        .add_cookie(&cookie)
        .map_err(|_| ApiError::Internal)?;
    Ok(response)
}

#[derive(Debug, Deserialize)]
pub struct LogoutForm {
    #[serde(default)]
    csrf: String,
}

pub async fn logout(
    context: Data<Context>,
    request: HttpRequest,
    form: Form<LogoutForm>,
) -> Result<HttpResponse, ApiError> {
    check_same_origin(&request)?;
    if let Some(session) = session_of(&request, &context)
        && !context.sessions.check_csrf(&session, &form.csrf)
    {
        return Err(ApiError::Forbidden(
            "missing or invalid CSRF token; reload the page",
        ));
    }
    let mut response = see_other("/admin");
    let mut cookie = Cookie::build(SESSION_COOKIE, "").path("/admin").finish();
    cookie.make_removal();
    response
        .add_cookie(&cookie)
        .map_err(|_| ApiError::Internal)?;
    Ok(response)
}
