//! The webhook pipeline for one request: find the source, verify the
//! signature over the raw bytes, parse and normalise, then ingest. Nothing is
//! written for a request that fails before ingest.

use sha2::{Digest, Sha256};

use crate::context::Context;
use crate::domain::{Direction, Movement, NormalisedEvent, Status};
use crate::ingest::{Outcome, RawDelivery, ingest};
use crate::providers::{Delivery, HeaderSource, MapError, VerifyError, parse_json};
use crate::source::Source;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    #[error("{0}")]
    Verification(#[from] VerifyError),
    #[error("{0}")]
    Payload(#[from] MapError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub async fn receive(
    context: &Context,
    source: &Source,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> Result<Outcome, ReceiveError> {
    let source_name = source.name.as_str();
    let now = context.clock.now();
    let delivery = Delivery { headers, body };
    let verified = source
        .provider
        .verify(&delivery, &source.keys, source.tolerance_secs, now)
        .inspect_err(|error| {
            context
                .metrics
                .verification_failure(source_name, error.code());
            tracing::warn!(
                source = source_name,
                reason = error.code(),
                body_bytes = body.len(),
                "{error}"
            );
        })?;
    let payload = std::str::from_utf8(body).map_err(|e| MapError::NotJson(e.to_string()))?;
    let (json, ambiguity) = parse_json(body)?;
    let mut event = source
        .provider
        .normalise(&verified, &json, &source.mapping)?;
    if let Some(ambiguity) = ambiguity {
        // Signed, so stored; never applied, whatever either reading says.
        event.reject_as(&ambiguity.to_string());
    }
    let payload_sha256 = hex::encode(Sha256::digest(body));
    let raw = RawDelivery {
        payload,
        payload_sha256: &payload_sha256,
        received_at: now,
    };
    let outcome = ingest(&context.store, source, &event, &raw).await?;
    if outcome.backlog {
        context.drain.wake();
    }
    count_ordering(context, source_name, &event, &outcome);
    let label = if outcome.duplicate {
        "duplicate"
    } else {
        outcome.status.as_str()
    };
    context.metrics.delivery(source_name, label);
    if outcome.conflict {
        context.metrics.delivery(source_name, "conflict");
        tracing::warn!(
            source = source_name,
            event_id = outcome.event_id.as_str(),
            "redelivery with a different body; the original payload is kept"
        );
    }
    tracing::info!(
        source = source_name,
        event_id = outcome.event_id.as_str(),
        status = outcome.status.as_str(),
        duplicate = outcome.duplicate,
        key_index = verified.key_index,
        "webhook received"
    );
    Ok(outcome)
}

/// The ordering counters a new delivery moves.
fn count_ordering(context: &Context, source: &str, event: &NormalisedEvent, outcome: &Outcome) {
    if outcome.duplicate {
        return;
    }
    let metrics = &context.metrics;
    if outcome.late
        && let Movement::Post(posting) = &event.movement
    {
        let effect = match posting.direction {
            Direction::Credit => "credit",
            Direction::Debit => "debit",
        };
        let action = if outcome.status == Status::Applied {
            "applied"
        } else {
            "held"
        };
        metrics.ordering(source, &format!("late_{effect}_{action}"), 1);
    }
    if outcome.status == Status::Waiting {
        metrics.ordering(source, "parked", 1);
    }
    metrics.ordering(source, "released", outcome.released);
}
