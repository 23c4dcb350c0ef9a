//! Who is calling the admin routes. Scripts send `Authorization: Bearer
//! <token>`; browsers log in once and carry an HttpOnly, SameSite=Strict
//! session cookie. The JSON API takes only the bearer token, so no ambient
//! cookie can drive it cross-site; page forms carry a CSRF token and must
//! come from our own origin.

use std::future::{Ready, ready};
use std::net::{IpAddr, Ipv4Addr};

use actix_web::dev::Payload;
use actix_web::http::header::{AUTHORIZATION, HOST, ORIGIN};
use actix_web::web::Data;
use actix_web::{FromRequest, HttpRequest};

use crate::context::Context;
use crate::http::ApiError;
use crate::secret::Secret;
use crate::session::Session;

use super::throttle::Verdict;

pub const SESSION_COOKIE: &str = "hookledger_session";

/// An admin authenticated by the bearer token.
pub struct BearerAdmin;

/// An admin on a page: by session cookie (browser) or bearer token (script).
pub struct PageAdmin {
    /// Present for browser sessions; forms must carry its CSRF token.
    pub session: Option<Session>,
}

impl PageAdmin {
    /// Who to name in the audit log.
    pub fn actor(&self) -> &'static str {
        if self.session.is_some() {
            "admin (browser)"
        } else {
            "admin (token)"
        }
    }
}

fn context(request: &HttpRequest) -> Result<&Data<Context>, ApiError> {
    request
        .app_data::<Data<Context>>()
        .ok_or(ApiError::Internal)
}

pub fn bearer_token(request: &HttpRequest) -> Option<&str> {
    request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// The address sign-in failures are counted under: the peer, or behind a
/// trusted proxy the client it names.
fn client_address(request: &HttpRequest, context: &Context) -> IpAddr {
    let peer = request
        .peer_addr()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
    let forwarded = request
        .headers()
        .get_all("x-forwarded-for")
        .map(|v| v.as_bytes());
    context.trusted_proxies.client(peer, forwarded)
}

/// Compares a presented admin token (bearer or sign-in form) in constant
/// time, unless its address must wait after too many failures: then 429
/// without comparing. Failures are counted and logged, never the token.
pub fn check_token(request: &HttpRequest, context: &Context, token: &str) -> Result<(), ApiError> {
    check_at(request, context, Gate::Admin, token)
}

/// [`check_token`] for `GET /metrics`'s own token: the same constant-time
/// compare, with a throttle, counter and log line of its own, so that
/// holding the (weaker, widely copied) metrics token never resets the
/// admin sign-in throttle, and a misconfigured scraper never locks an
/// operator out.
pub fn check_metrics_token(
    request: &HttpRequest,
    context: &Context,
    expected: &Secret,
    token: &str,
) -> Result<(), ApiError> {
    check_at(request, context, Gate::Metrics(expected), token)
}

/// Which token a request presents.
enum Gate<'a> {
    Admin,
    Metrics(&'a Secret),
}

fn check_at(
    request: &HttpRequest,
    context: &Context,
    gate: Gate<'_>,
    token: &str,
) -> Result<(), ApiError> {
    let address = client_address(request, context);
    let now = context.clock.now();
    let (throttle, expected, what, kind) = match gate {
        Gate::Admin => (
            &context.sign_in,
            &context.admin_token,
            "admin sign-in",
            "failed admin sign-ins",
        ),
        Gate::Metrics(secret) => (
            &context.metrics_sign_in,
            secret,
            "metrics token",
            "failed metrics tokens",
        ),
    };
    let count = |outcome: &str| match gate {
        Gate::Admin => context.metrics.sign_in(outcome),
        Gate::Metrics(_) => context.metrics.metrics_auth(outcome),
    };
    match throttle.attempt(address, now, || expected.matches(token)) {
        Verdict::Accepted => Ok(()),
        Verdict::Wait(secs) => {
            count("throttled");
            Err(ApiError::TooManyAttempts(secs))
        }
        Verdict::Failed(failures) => {
            count("failed");
            if context.log_budget.admit(kind, "") {
                tracing::warn!(%address, failures, "{what} refused");
            }
            Err(ApiError::Unauthorized)
        }
    }
}

pub fn session_of(request: &HttpRequest, context: &Context) -> Option<Session> {
    let cookie = request.cookie(SESSION_COOKIE)?;
    context.sessions.verify(cookie.value(), context.clock.now())
}

impl FromRequest for BearerAdmin {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(context(request).and_then(|c| match bearer_token(request) {
            Some(token) => check_token(request, c, token).map(|()| BearerAdmin),
            None => Err(ApiError::Unauthorized),
        }))
    }
}

impl FromRequest for PageAdmin {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(context(request).and_then(|c| {
            match bearer_token(request) {
                Some(token) => check_token(request, c, token).map(|()| PageAdmin { session: None }),
                None => session_of(request, c)
                    .map(|s| PageAdmin { session: Some(s) })
                    .ok_or(ApiError::Unauthorized),
            }
        }))
    }
}

/// Refuses a browser POST whose `Origin` is not this host. Browsers send
/// `Origin` on every POST; a request without one is not a browser form and
/// still needs a valid CSRF token or bearer token to do anything.
pub fn check_same_origin(request: &HttpRequest) -> Result<(), ApiError> {
    let Some(origin) = request.headers().get(ORIGIN) else {
        return Ok(());
    };
    let host = request.headers().get(HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest.trim_end_matches('/'));
    match (origin_host, host) {
        (Some(origin_host), Some(host)) if origin_host.eq_ignore_ascii_case(host) => Ok(()),
        _ => Err(ApiError::Forbidden("cross-origin request refused")),
    }
}

/// A page POST by a browser must carry the session's CSRF token; a script
/// using the bearer token needs none (browsers never add that header).
pub fn check_csrf(
    request: &HttpRequest,
    admin: &PageAdmin,
    context: &Context,
    token: &str,
) -> Result<(), ApiError> {
    check_same_origin(request)?;
    match &admin.session {
        Some(session) if !context.sessions.check_csrf(session, token) => Err(ApiError::Forbidden(
            "missing or invalid CSRF token; reload the page",
        )),
        _ => Ok(()),
    }
}
