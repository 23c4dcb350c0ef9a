//! Liveness and readiness probes.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Data;
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiError;
use super::error::ErrorBody;
use crate::context::Context;

/// The liveness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Alive {
    /// Always `ok`.
    pub status: &'static str,
}

/// The readiness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// Always `ready`.
    pub status: &'static str,
    /// `sqlite` or `postgres`.
    pub database: &'static str,
}

/// Where everything is: one line naming the endpoints.
///
/// The address the start-up banner shows.
#[utoipa::path(
    get,
    path = "/",
    tag = "probes",
    responses((status = 200, description = "Where everything is", body = String, content_type = "text/plain")),
)]
pub async fn index() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body(
            "hookledger: webhooks POST /webhooks/{source}; admin page /admin; \
             probes /healthz and /readyz\n",
        )
}

/// Liveness: the process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "probes",
    responses((status = 200, description = "The process is up", body = Alive)),
)]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Alive { status: "ok" })
}

/// Readiness: the database answers and the instance is not draining.
///
/// 503 otherwise, so a load balancer stops routing here: at once after
/// SIGTERM (`draining`, while the instance still serves for `drain_secs`),
/// or when the database does not answer within 2 s (bounded, so a probe
/// gets an answer even while the pool waits for a dead database). Probed
/// often, so a database failure is logged within the log budget, at WARN.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "probes",
    responses(
        (status = 200, description = "The database answers", body = Ready),
        (status = 503, description = "Draining before a stop (`draining`), or the database did not answer within 2 s (`unavailable`)", body = ErrorBody),
    ),
)]
pub async fn readyz(context: Data<Context>) -> Result<HttpResponse, ApiError> {
    if context.lifecycle.is_draining() {
        return Err(ApiError::Draining);
    }
    let problem = match tokio::time::timeout(Duration::from_secs(2), context.store.ping()).await {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(_) => Some("the database did not answer within 2 s".to_owned()),
    };
    if let Some(problem) = problem {
        context.store.recycle_after_refusal();
        if context.log_budget.admit("failed readiness probes", "") {
            tracing::warn!("not ready: {problem}");
        }
        return Err(ApiError::Unavailable);
    }
    Ok(HttpResponse::Ok().json(Ready {
        status: "ready",
        database: context.store.backend(),
    }))
}
