//! The admin JSON API for contiguous streams waiting behind a gap (bearer
//! token only): list them, inspect one, and skip it.

use actix_web::HttpRequest;
use actix_web::web::{Data, Json, Payload};
use serde_json::{Value, json};

use serde::Deserialize;

use super::action;
use super::auth::BearerAdmin;
use super::gaps::{self, MissingRange};
use super::input::{clean_note, json_body};
use super::target::AccountRef;
use crate::context::Context;
use crate::http::ApiError;

/// `GET /admin/api/gaps`: every account with parked events, oldest first.
pub async fn list_gaps(_: BearerAdmin, context: Data<Context>) -> Result<Json<Value>, ApiError> {
    let gaps = gaps::all(&context).await?;
    Ok(Json(json!({"gaps": gaps})))
}

/// `GET /admin/api/gaps/{source}/{account_id}`: the gap (null once nothing
/// waits), its parked events in the order they will be applied, and the
/// account's skip actions; 404 if the account has neither.
pub async fn show_gap(
    _: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let detail = gaps::detail(&context, &source, &account_id)
        .await?
        .ok_or(ApiError::NotFound("waiting event"))?;
    Ok(Json(json!({
        "source": source,
        "account_id": account_id,
        "gap": detail.gap,
        "waiting_events": detail.waiting,
        "audit": detail.audit,
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkipBody {
    note: Option<String>,
    through: Option<i64>,
}

/// `POST /admin/api/gaps/{source}/{account_id}/skip` with
/// `{"note": "...", "through": N}` (both required): skips the missing
/// numbers up to N and applies the parked events between them in order.
pub async fn skip_gap(
    admin: BearerAdmin,
    context: Data<Context>,
    target: AccountRef,
    request: HttpRequest,
    payload: Payload,
) -> Result<Json<Value>, ApiError> {
    let AccountRef { source, account_id } = target;
    let body: SkipBody = json_body(
        &request,
        payload,
        r#"{"note": "...", "through": <sequence>}"#,
    )
    .await?;
    let note = clean_note(body.note)?.ok_or_else(|| {
        ApiError::BadRequest(
            "a note is required: say why the missing numbers will never arrive".into(),
        )
    })?;
    let through = body.through.ok_or_else(|| {
        ApiError::BadRequest(
            "through is required: the highest missing number you confirm skipping".into(),
        )
    })?;
    let outcome = action::skip_gap(
        &context,
        &source,
        &account_id,
        through,
        &admin.actor(),
        &note,
    )
    .await?;
    let skipped: Vec<MissingRange> = outcome.skipped.iter().map(MissingRange::from).collect();
    Ok(Json(json!({
        "source": source,
        "account_id": account_id,
        "skipped": skipped,
        "released": outcome.released,
        "guard": outcome.guard,
        "held": outcome.held,
        "more": outcome.more,
        "audit_id": outcome.audit_id,
    })))
}
