//! Tokens presented over HTTP: the bearer token a request carries, the
//! client address failures are counted under, and the throttled
//! constant-time check every token goes through (`GET /metrics`'s here;
//! the admin's in `admin/auth.rs`, through the same check). Each kind of
//! token has a throttle, counter and log line of its own.

use std::net::{IpAddr, Ipv4Addr};

use actix_web::HttpRequest;
use actix_web::http::header::AUTHORIZATION;

use super::ApiError;
use crate::context::Context;
use crate::net::throttle::{Presented, Verdict};
use crate::secret::Secret;

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
pub fn client_address(request: &HttpRequest, context: &Context) -> IpAddr {
    let peer = request
        .peer_addr()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
    let forwarded = request
        .headers()
        .get_all("x-forwarded-for")
        .map(|v| v.as_bytes());
    context.trusted_proxies.client(peer, forwarded)
}

/// Which kind of token a request presents: each is throttled, counted and
/// logged on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An admin token (bearer or the sign-in form).
    Admin,
    /// `GET /metrics`'s token.
    Metrics,
}

/// The constant-time check of `GET /metrics`'s own token: throttled,
/// counted and logged apart from the admin's, so that holding the (weaker,
/// widely copied) metrics token never resets the admin sign-in throttle,
/// and a misconfigured scraper never locks an operator out.
pub fn check_metrics_token(
    request: &HttpRequest,
    context: &Context,
    expected: &Secret,
    token: &str,
) -> Result<(), ApiError> {
    check_throttled(request, context, TokenKind::Metrics, || {
        if expected.matches(token) {
            Presented::Right
        } else {
            Presented::Wrong
        }
    })
}

/// Runs `compare` (a constant-time comparison of the presented token)
/// unless the request's address must wait after too many failures: then
/// 429 without comparing. Failures are counted and logged, never the token.
pub fn check_throttled(
    request: &HttpRequest,
    context: &Context,
    kind: TokenKind,
    compare: impl FnOnce() -> Presented,
) -> Result<(), ApiError> {
    let address = client_address(request, context);
    let now = context.clock.now();
    let (throttle, what, log_kind) = match kind {
        TokenKind::Metrics => (
            &context.metrics_sign_in,
            "metrics token",
            "failed metrics tokens",
        ),
        TokenKind::Admin => (&context.sign_in, "admin sign-in", "failed admin sign-ins"),
    };
    let count = |outcome: &str| match kind {
        TokenKind::Metrics => context.metrics.metrics_auth(outcome),
        TokenKind::Admin => context.metrics.sign_in(outcome),
    };
    match throttle.attempt_with(address, now, compare) {
        Verdict::Accepted => Ok(()),
        Verdict::Wait(secs) => {
            count("throttled");
            Err(ApiError::TooManyAttempts(secs))
        }
        Verdict::Failed(failures) => {
            count("failed");
            if context.log_budget.admit(log_kind, "") {
                tracing::warn!(%address, failures, "{what} refused");
            }
            Err(match kind {
                TokenKind::Metrics => ApiError::UnauthorizedMetrics,
                TokenKind::Admin => ApiError::Unauthorized,
            })
        }
    }
}
