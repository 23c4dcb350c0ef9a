//! `POST /webhooks/{source}`: the provider-facing endpoint.

use actix_web::web::{Data, Path, Payload};
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::ApiError;
use super::body::{ActixHeaders, read_limited};
use super::error::ErrorBody;
use crate::context::Context;
use crate::domain::Status;
use crate::ingest::Outcome;
use crate::receive::receive;

/// Source names are at most 64 characters; an unknown one is echoed up to
/// this many.
const ECHOED_NAME_CHARS: usize = 64;

/// One event's part of the answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventAnswer {
    /// Its stored status.
    pub status: Status,
    /// A redelivery of a known event: no balance changed.
    pub duplicate: bool,
    pub event_id: String,
    /// Present when the event closed a gap (or credited a payment): the
    /// parked events applied after it.
    #[serde(skip_serializing_if = "is_zero")]
    #[schema(minimum = 1)]
    pub released: u64,
}

/// A batch's answer: one per event, in body order.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchAnswer {
    pub events: Vec<EventAnswer>,
}

/// What a delivery stored: one event's answer, or a batch's.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum WebhookAnswer {
    One(EventAnswer),
    Batch(BatchAnswer),
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A provider's delivery: verified, then stored and applied in one transaction.
///
/// The signature is verified over the exact bytes; 200 only after the
/// transaction committed, with the event's stored status; `duplicate: true`
/// for a redelivery; `released: n` when the event closed a gap (or
/// credited a payment) and n waiting events were applied after it. A
/// batch answers `{"events": [...]}`, one per event in body order; a kind
/// with an acknowledgement of its own (Adyen's `[accepted]`) gets that
/// instead, unless the request says `Accept: application/json`.
#[utoipa::path(
    post,
    path = "/webhooks/{source}",
    tag = "webhooks",
    params(("source" = String, Path, description = "The source's name, as configured")),
    request_body(content = Vec<u8>, content_type = "*/*", description = "The provider's body, byte for byte as signed"),
    responses(
        (status = 200, description = "Stored and committed (a kind with an acknowledgement of its own answers it as text unless asked for JSON)", content(
            (WebhookAnswer = "application/json"),
            (String = "text/plain"),
        )),
        (status = 401, description = "The signature did not verify: nothing is written", body = ErrorBody),
        (status = 404, description = "No such source", body = ErrorBody),
        (status = 503, description = "The database is unavailable: nothing was written, and the provider's retry is processed normally", body = ErrorBody),
    ),
)]
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
    let answers: Vec<EventAnswer> = received.outcomes.iter().map(answer).collect();
    Ok(
        HttpResponse::Ok().json(match <[EventAnswer; 1]>::try_from(answers) {
            Ok([one]) => WebhookAnswer::One(one),
            Err(events) => WebhookAnswer::Batch(BatchAnswer { events }),
        }),
    )
}

fn wants_json(request: &HttpRequest) -> bool {
    request
        .headers()
        .get_all(actix_web::http::header::ACCEPT)
        .any(|accept| accept.as_bytes() == b"application/json")
}

fn answer(outcome: &Outcome) -> EventAnswer {
    EventAnswer {
        status: outcome.status,
        duplicate: outcome.duplicate,
        event_id: outcome.event_id.as_str().to_owned(),
        released: outcome.released,
    }
}
