//! The admin JSON API for high-water sequence guards (bearer token only):
//! preview a reset, and reset.

use actix_web::HttpRequest;
use actix_web::web::{Data, Json, Payload, Query};
use serde::Deserialize;
use serde_json::{Value, json};

use super::action::{self, Reset};
use super::auth::BearerAdmin;
use super::guards;
use super::input::{clean_note, json_body};
use super::target::AccountRef;
use crate::context::Context;
use crate::http::ApiError;

/// `GET /admin/api/held_accounts`: accounts holding at least
/// [`guards::MANY_HELD`] events for an operator, most first.
pub async fn held_accounts(
    _: BearerAdmin,
    context: Data<Context>,
) -> Result<Json<Value>, ApiError> {
    let accounts = guards::held_accounts(&context).await?;
    Ok(Json(
        json!({"at_least": guards::MANY_HELD, "accounts": accounts}),
    ))
}

#[derive(Debug, Deserialize)]
pub struct PreviewQuery {
    /// The value to preview; the suggestion when absent.
    to: Option<i64>,
}

/// `GET /admin/api/guard?source=&account=[&to=N]`: the guard, the suggested
/// value, and the stale events a reset to `to` would apply, in order.
pub async fn show_guard(
    _: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    query: Query<PreviewQuery>,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let preview = guards::preview(&context, &source, &account_id, query.to).await?;
    Ok(Json(json!(preview)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetBody {
    to: Option<i64>,
    guard_seen: Option<i64>,
    note: Option<String>,
}

/// `POST /admin/api/guard/reset?source=&account=` with
/// `{"to": N, "guard_seen": G, "note": "..."}` (all required): lowers the
/// guard from G (409 if it is not G any more) to N and applies the stale
/// events above N in order.
pub async fn reset_guard(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let body: ResetBody = json_body(
        &request,
        payload,
        r#"{"to": <sequence>, "guard_seen": <sequence>, "note": "..."}"#,
    )
    .await?;
    let (Some(to), Some(guard_seen)) = (body.to, body.guard_seen) else {
        return Err(ApiError::BadRequest(
            "to and guard_seen are required: the new guard, and the guard the preview showed"
                .into(),
        ));
    };
    let note = clean_note(body.note)?.ok_or_else(|| {
        ApiError::BadRequest("a note is required: say why the guard is wrong".into())
    })?;
    let actor = admin.actor();
    let reset = Reset {
        to,
        guard_seen,
        actor: &actor,
        note: &note,
    };
    let outcome = action::reset_guard(&context, &source, &account_id, &reset).await?;
    Ok(Json(json!({
        "source": source,
        "account_id": account_id,
        "guard_before": outcome.guard_before,
        "guard": outcome.guard,
        "applied": outcome.applied,
        "still_held": outcome.still_held,
        "audit_id": outcome.audit_id,
    })))
}
