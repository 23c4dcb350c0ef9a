//! Liveness and readiness probes.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Data;
use serde_json::json;

use super::ApiError;
use crate::context::Context;

/// The process is up.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers; 503 otherwise, so a load balancer stops routing here.
/// Bounded so a probe gets an answer even while the pool waits for a dead
/// database.
pub async fn readyz(context: Data<Context>) -> Result<HttpResponse, ApiError> {
    tokio::time::timeout(Duration::from_secs(2), context.store.ping())
        .await
        .map_err(|_| ApiError::Unavailable)??;
    Ok(HttpResponse::Ok().json(json!({"status": "ready", "database": context.store.backend()})))
}
