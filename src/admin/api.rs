//! The admin JSON API (bearer token only).

use actix_web::web::{Data, Json};
use serde_json::{Value, json};

use super::auth::BearerAdmin;
use crate::context::Context;
use crate::http::ApiError;

/// Delivery and verification-failure counters since start.
pub async fn metrics(_: BearerAdmin, context: Data<Context>) -> Json<Value> {
    Json(json!(context.metrics.snapshot()))
}

/// The ledger invariant check: `{"ok": bool, "violations": [...]}`.
pub async fn check(_: BearerAdmin, context: Data<Context>) -> Result<Json<Value>, ApiError> {
    let violations = context.store.check_invariants().await?;
    context.invariants.record(crate::invariants::LastCheck {
        at: context.clock.now(),
        outcome: Ok(violations.clone()),
    });
    Ok(Json(
        json!({"ok": violations.is_empty(), "violations": violations}),
    ))
}
