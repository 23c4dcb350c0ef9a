//! `POST /webhooks/{source}`: the provider-facing endpoint.

use actix_web::web::{Data, Path, Payload};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;

use super::ApiError;
use super::body::{ActixHeaders, read_limited};
use crate::context::Context;
use crate::receive::receive;

/// Source names are at most 64 characters; an unknown one is echoed up to
/// this many.
const ECHOED_NAME_CHARS: usize = 64;

/// 200 only after the transaction committed, with the event's stored status;
/// `duplicate: true` for a redelivery; `released: n` when the event closed a
/// gap and n parked events were applied after it. See README for every other
/// status.
pub async fn receive_webhook(
    context: Data<Context>,
    source: Path<String>,
    request: HttpRequest,
    payload: Payload,
) -> Result<HttpResponse, ApiError> {
    let name = source.into_inner();
    // Resolved before the body is read: an unknown source costs no upload.
    let Some(source) = context.source(&name).cloned() else {
        // Echo a bounded prefix: a 60 KB name must not come back whole.
        let shown: String = name.chars().take(ECHOED_NAME_CHARS).collect();
        return Err(ApiError::UnknownSource(shown));
    };
    let body = read_limited(&request, payload, context.max_body_bytes).await?;
    let outcome = receive(&context, &source, &ActixHeaders(request.headers()), &body).await?;
    let mut answer = json!({
        "status": outcome.status,
        "duplicate": outcome.duplicate,
        "event_id": outcome.event_id.as_str(),
    });
    if outcome.released > 0 {
        answer["released"] = json!(outcome.released);
    }
    Ok(HttpResponse::Ok().json(answer))
}
