//! Liveness and readiness probes.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Data;
use serde_json::json;

use super::ApiError;
use crate::context::Context;

/// `GET /`, the address the banner shows: where everything is.
pub async fn index() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body(
            "hookledger: webhooks POST /webhooks/{source}; admin page /admin; \
             probes /healthz and /readyz\n",
        )
}

/// The process is up.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers; 503 otherwise, so a load balancer stops routing here.
/// Bounded so a probe gets an answer even while the pool waits for a dead
/// database. The route is public and probed often, so a failure is logged
/// within the log budget, at WARN.
pub async fn readyz(context: Data<Context>) -> Result<HttpResponse, ApiError> {
    let problem = match tokio::time::timeout(Duration::from_secs(2), context.store.ping()).await {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(_) => Some("the database did not answer within 2 s".to_owned()),
    };
    if let Some(problem) = problem {
        if context.log_budget.admit("failed readiness probes", "") {
            tracing::warn!("not ready: {problem}");
        }
        return Err(ApiError::Unavailable);
    }
    Ok(HttpResponse::Ok().json(json!({"status": "ready", "database": context.store.backend()})))
}
