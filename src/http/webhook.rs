//! `POST /webhooks/{source}`: the provider-facing endpoint.

use actix_web::web::{Data, Path, Payload};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};

use super::ApiError;
use super::body::{ActixHeaders, read_limited};
use crate::context::Context;
use crate::ingest::Outcome;
use crate::receive::receive;

/// Source names are at most 64 characters; an unknown one is echoed up to
/// this many.
const ECHOED_NAME_CHARS: usize = 64;

/// 200 only after the transaction committed, with the event's stored status;
/// `duplicate: true` for a redelivery; `released: n` when the event closed a
/// gap (or credited a payment) and n waiting events were applied after it.
/// A batch answers `{"events": [...]}`, one per event in body order; a kind
/// with an acknowledgement of its own (Adyen's `[accepted]`) gets that
/// instead, unless the request says `Accept: application/json`. See README
/// for every other status.
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
    let started = std::time::Instant::now();
    let received = async {
        let body = read_limited(&request, payload, context.max_body_bytes).await?;
        Ok::<_, ApiError>(
            receive(
                &context.pipeline(),
                &source,
                &ActixHeaders(request.headers()),
                &body,
            )
            .await?,
        )
    }
    .await;
    context
        .metrics
        .request_seconds(source.name.as_str(), started.elapsed().as_secs_f64());
    let received = received?;
    // A kind's own acknowledgement, unless the client asks for JSON by
    // name (`hookledger send` and tests do, to see each event's status).
    if let Some((content_type, ack)) = source.provider.acknowledgement()
        && !wants_json(&request)
    {
        return Ok(HttpResponse::Ok().content_type(content_type).body(ack));
    }
    let answers: Vec<Value> = received.outcomes.iter().map(answer).collect();
    Ok(
        HttpResponse::Ok().json(match <[Value; 1]>::try_from(answers) {
            Ok([one]) => one,
            Err(many) => json!({ "events": many }),
        }),
    )
}

fn wants_json(request: &HttpRequest) -> bool {
    request
        .headers()
        .get_all(actix_web::http::header::ACCEPT)
        .any(|accept| accept.as_bytes() == b"application/json")
}

/// One event's part of the answer.
fn answer(outcome: &Outcome) -> Value {
    let mut answer = json!({
        "status": outcome.status,
        "duplicate": outcome.duplicate,
        "event_id": outcome.event_id.as_str(),
    });
    if outcome.released > 0 {
        answer["released"] = json!(outcome.released);
    }
    answer
}
