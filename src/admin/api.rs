//! The admin JSON API (bearer token only).

use actix_web::web::{Data, Json, Path, Query};
use actix_web::{FromRequest, HttpRequest};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::BearerAdmin;
use super::input::page_size;
use super::target::plain_id;
use crate::context::Context;
use crate::http::ApiError;

#[derive(Debug, Deserialize)]
pub struct AccountQuery {
    /// The account, for `/admin/api/account?id=` (any id, `..` included).
    pub id: Option<String>,
    pub limit: Option<i64>,
    pub before: Option<i64>,
}

/// `GET /admin/api/accounts/{account_id}` or `/admin/api/account?id=`.
pub async fn show_account(
    _: BearerAdmin,
    context: Data<Context>,
    request: HttpRequest,
    query: Query<AccountQuery>,
) -> Result<Json<Value>, ApiError> {
    let account_id = match (request.match_info().get("account_id"), &query.id) {
        (Some(_), _) => Path::<String>::extract(&request)
            .await
            .map_err(|e| ApiError::BadRequest(e.to_string()))?
            .into_inner(),
        (None, Some(id)) => id.clone(),
        (None, None) => return Err(ApiError::BadRequest("id is required".into())),
    };
    let account_id = plain_id("account id", account_id)?;
    let limit = page_size(query.limit, 100)?;
    let balances = context.store.account_balances(&account_id).await?;
    let entries = context
        .store
        .account_entries(&account_id, query.before, limit)
        .await?;
    if balances.is_empty() && entries.is_empty() && query.before.is_none() {
        return Err(ApiError::NotFound("account"));
    }
    let balances: Vec<Value> = balances
        .iter()
        .map(|b| json!({"currency": b.currency, "balance_minor": b.balance_minor, "updated_at": b.updated_at}))
        .collect();
    let next_before = (entries.len() as i64 == limit)
        .then(|| entries.last().map(|e| e.entry_id))
        .flatten();
    Ok(Json(json!({
        "account_id": account_id,
        "balances": balances,
        "entries": entries,
        "next_before": next_before,
    })))
}

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
