//! Who is calling the admin routes. Scripts send `Authorization: Bearer
//! <token>`; browsers log in once and carry an HttpOnly, SameSite=Strict
//! session cookie. The JSON API takes only the bearer token, so no ambient
//! cookie can drive it cross-site; page forms carry a CSRF token and must
//! come from our own origin.
//!
//! Several admin tokens may be configured, each with a name (the audit log
//! records it) and some read-only: a read-only holder reads every page and
//! the API, and any other method is refused here, in the extractors every
//! admin handler takes, before a handler runs.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::http::header::{HOST, ORIGIN};
use actix_web::web::Data;
use actix_web::{FromRequest, HttpRequest};

use crate::context::Context;
use crate::http::ApiError;
use crate::http::token::{TokenKind, bearer_token, check_throttled};
use crate::net::throttle::Presented;
use crate::session::Session;

pub const SESSION_COOKIE: &str = "hookledger_session";

/// Which admin token a request presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub read_only: bool,
}

/// An admin authenticated by a bearer token.
pub struct BearerAdmin(pub Identity);

/// An admin on a page: by session cookie (browser) or bearer token (script).
pub struct PageAdmin {
    /// Present for browser sessions; forms must carry its CSRF token.
    pub session: Option<Session>,
    pub who: Identity,
}

impl PageAdmin {
    /// Who to name in the audit log: the token's name, and how it came.
    pub fn actor(&self) -> String {
        let how = if self.session.is_some() {
            "browser"
        } else {
            "token"
        };
        format!("{} ({how})", self.who.name)
    }
}

impl BearerAdmin {
    /// Who to name in the audit log.
    pub fn actor(&self) -> String {
        format!("{} (token)", self.0.name)
    }
}

/// A read-only holder may only read: any method but GET and HEAD is
/// refused.
fn allowed(request: &HttpRequest, who: Identity) -> Result<Identity, ApiError> {
    let reads = matches!(request.method().as_str(), "GET" | "HEAD");
    if who.read_only && !reads {
        return Err(ApiError::Forbidden(
            "this admin token is read-only: it cannot change anything",
        ));
    }
    Ok(who)
}

fn context(request: &HttpRequest) -> Result<&Data<Context>, ApiError> {
    request
        .app_data::<Data<Context>>()
        .ok_or(ApiError::Internal)
}

/// Compares a presented admin token (bearer or sign-in form) with every
/// configured one in constant time (each compared, whichever matches),
/// unless its address must wait after too many failures: then 429 without
/// comparing. Failures are counted and logged, never the token.
pub fn check_token(
    request: &HttpRequest,
    context: &Context,
    token: &str,
) -> Result<Identity, ApiError> {
    let mut matched = None;
    check_throttled(request, context, TokenKind::Admin, || {
        // Every token compared, by digest (one length for all), so the
        // time says nothing of which matched or how long they are.
        let mut found = None;
        for (i, admin) in context.admins.iter().enumerate() {
            if admin.token.matches_digest_of(token) && found.is_none() {
                found = Some(i);
            }
        }
        matched = found;
        match found.map(|i| context.admins[i].read_only) {
            None => Presented::Wrong,
            Some(false) => Presented::Right,
            // A read-only holder's sign-in never clears failures: it
            // must not reset the wait of someone guessing the others.
            Some(true) => Presented::RightKeepingFailures,
        }
    })?;
    matched
        .and_then(|i| context.admins.get(i))
        .map(identity)
        .ok_or(ApiError::Internal)
}

/// Who holds a configured admin token, as a request's extractor says.
fn identity(admin: &crate::config::AdminToken) -> Identity {
    Identity {
        name: admin.name.clone(),
        read_only: admin.read_only,
    }
}

pub fn session_of(request: &HttpRequest, context: &Context) -> Option<Session> {
    let cookie = request.cookie(SESSION_COOKIE)?;
    context
        .sessions
        .verify(cookie.value(), context.clock.now(), |who| {
            context
                .admins
                .iter()
                .find(|admin| admin.name == who)
                .map(|admin| &admin.token)
        })
}

/// The holder a session names (it was verified against that holder's
/// token, so the name is configured).
fn holder(context: &Context, session: &Session) -> Option<Identity> {
    context
        .admins
        .iter()
        .find(|admin| admin.name == session.who)
        .map(identity)
}

impl FromRequest for BearerAdmin {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(context(request).and_then(|c| {
            match bearer_token(request) {
                Some(token) => check_token(request, c, token)
                    .and_then(|who| allowed(request, who))
                    .map(BearerAdmin),
                None => Err(ApiError::Unauthorized),
            }
        }))
    }
}

impl FromRequest for PageAdmin {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(context(request).and_then(|c| {
            let admin = match bearer_token(request) {
                Some(token) => {
                    check_token(request, c, token).map(|who| PageAdmin { session: None, who })
                }
                None => session_of(request, c)
                    .and_then(|s| {
                        holder(c, &s).map(|who| PageAdmin {
                            session: Some(s),
                            who,
                        })
                    })
                    .ok_or(ApiError::Unauthorized),
            }?;
            let who = allowed(request, admin.who)?;
            Ok(PageAdmin { who, ..admin })
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
