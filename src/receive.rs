//! The webhook pipeline for one request: find the source, verify the
//! signature over the raw bytes, parse and normalise, then ingest. Nothing is
//! written for a request that fails verification; everything is for one that
//! passes it.

use crate::clock::Clock;
use crate::domain::{Direction, EventId, Movement, NormalisedEvent, Origin, Rejection, Status};
use crate::failures::{Failure, VerificationFailures};
use crate::ingest::{DrainSignal, Ingestor, Outcome, RawDelivery};
use crate::providers::{
    Delivery, HeaderSource, MapError, RecordingHeaders, Verified, VerifyError, VerifyPolicy,
    parse_json,
};
use crate::source::Source;
use crate::store::StoreError;
use crate::telemetry::{LogBudget, Metrics};
use crate::thin::Thin;

/// How payloads are fingerprinted (tests and tools name it from here).
pub use crate::ingest::sha256_hex;

#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    #[error("{0}")]
    Verification(#[from] VerifyError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Verified, but what it needs from the provider could not be had
    /// this time (a thin event's object): nothing stored, the sender retries.
    #[error("{0}")]
    Unavailable(String),
}

/// What the pipeline uses of the app state.
pub struct Pipeline<'a> {
    pub clock: &'a dyn Clock,
    pub metrics: &'a Metrics,
    /// Where a failed verification is kept for the admin.
    pub failures: &'a VerificationFailures,
    /// Bounds the log lines unauthenticated clients can cause.
    pub log_budget: &'a LogBudget,
    pub ingestor: &'a Ingestor,
    /// Woken when a release stopped at its bound with more ready.
    pub drain: &'a DrainSignal,
}

/// What a delivery produced: an outcome per event (one, or a batch's
/// several), in the order the body lists them.
#[derive(Debug, Clone)]
pub struct Received {
    pub outcomes: Vec<Outcome>,
}

pub async fn receive(
    context: &Pipeline<'_>,
    source: &std::sync::Arc<Source>,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> Result<Received, ReceiveError> {
    let source_name = source.name.as_str();
    let started = std::time::Instant::now();
    let now = context.clock.now();
    // Which headers the scheme reads is kept with the event (the event
    // page; what a replay maps it with again).
    let recorded = RecordingHeaders::new(headers);
    let delivery = Delivery {
        headers: &recorded,
        body,
        received_at: now,
    };
    let verified = verify(source, &delivery).inspect_err(|error| {
        context
            .metrics
            .verification_failure(source_name, error.code());
        context.metrics.at_minute(now, "verification_failed");
        context.metrics.failed(source_name, now);
        let failure = Failure::new(now, error, headers.names(), body.len(), sha256_hex(body));
        context.failures.record(source_name, failure);
        // Anyone can cause this line: budgeted, summarised per minute.
        if context
            .log_budget
            .admit("failed verifications", &format!("for source {source_name}"))
        {
            tracing::warn!(
                source = source_name,
                reason = error.code(),
                body_bytes = body.len(),
                "{error}"
            );
        }
    })?;
    context
        .metrics
        .verified(source_name, now, verified.key_index, verified.timestamp);
    // Verified means stored: from here on, whatever the body holds, the
    // delivery is recorded (an unusable one as `rejected`, with its bytes)
    // and only a database failure (or a thin event's object that could not
    // be fetched this time) may answer 5xx.
    let payload_sha256 = sha256_hex(body);
    let events = match crate::thin::expand(source, body)
        .await
        .map_err(ReceiveError::Unavailable)?
    {
        None => storable_events(source, &verified, &delivery, &payload_sha256),
        Some(Thin::Rejected(event)) => vec![event],
        Some(Thin::Snapshot(snapshot)) => expanded(source, &verified, &delivery, snapshot),
    };
    let signature_headers = recorded.to_json();
    let raw = RawDelivery {
        payload: body,
        payload_sha256: &payload_sha256,
        received_at: now,
        signature_headers: signature_headers.as_deref(),
        signed_at: verified.timestamp,
        signed_event_id: verified.event_id.as_deref(),
        origin: Origin::Webhook,
    };
    let stored = std::time::Instant::now();
    let outcomes = context.ingestor.ingest(source, &events, &raw).await?;
    context
        .metrics
        .transaction_seconds(stored.elapsed().as_secs_f64());
    let took = started.elapsed();
    for (event, outcome) in events.iter().zip(&outcomes) {
        record(context, source_name, &verified, event, outcome, took);
    }
    Ok(Received { outcomes })
}

/// Checks the delivery's signature with the source's keys, tolerance and
/// settings, at the time it was received.
pub(crate) fn verify(source: &Source, delivery: &Delivery<'_>) -> Result<Verified, VerifyError> {
    let policy = VerifyPolicy {
        tolerance_secs: source.tolerance_secs,
        settings: &source.settings,
    };
    source
        .provider
        .verify(delivery, &source.keys, &policy, delivery.received_at)
}

/// What a verified delivery stores: its events, each made storable, or the
/// one `rejected` event of a delivery that cannot be read.
pub(crate) fn storable_events(
    source: &Source,
    verified: &Verified,
    delivery: &Delivery<'_>,
    payload_sha256: &str,
) -> Vec<NormalisedEvent> {
    let mut events = normalise(source, verified, delivery)
        .unwrap_or_else(|error| vec![unreadable(payload_sha256, &error)]);
    for event in &mut events {
        event.make_storable();
    }
    events
}

/// The events a verified delivery holds, read the provider's way.
fn normalise(
    source: &Source,
    verified: &Verified,
    delivery: &Delivery<'_>,
) -> Result<Vec<NormalisedEvent>, MapError> {
    std::str::from_utf8(delivery.body).map_err(|e| MapError::NotJson(e.to_string()))?;
    let (json, ambiguity) = parse_json(delivery.body)?;
    let mut events = source
        .provider
        .normalise(verified, delivery, &json, &source.mapping)?;
    if events.is_empty() {
        return Err(MapError::Unusable("the delivery holds no event".to_owned()));
    }
    if let Some(ambiguity) = ambiguity {
        // Signed, so stored; never applied, whatever either reading says.
        for event in &mut events {
            event.reject_as(&ambiguity.to_string());
        }
    }
    Ok(events)
}

/// The one event stored for an authentic delivery that cannot be read as
/// the provider's events: `rejected` with the reason, its bytes kept. Its
/// key is the body's digest: providers resend the same body, so a
/// redelivery is a duplicate, whatever per-attempt header comes with it.
fn unreadable(payload_sha256: &str, error: &MapError) -> NormalisedEvent {
    let event_id = EventId::parse(&format!("unreadable:{payload_sha256}"))
        .expect("a fixed prefix and 64 hex digits make a valid event id");
    NormalisedEvent {
        event_id,
        event_type: "unreadable".to_owned(),
        object_id: None,
        occurred_at: None,
        movement: Movement::Rejected(Rejection {
            reason: format!("unreadable: {error}"),
            account: None,
            currency: None,
            signed_amount: None,
            sequence: None,
        }),
        payload: None,
    }
}

/// A thin event's events: its snapshot mapped as a delivery of it would
/// be, each storing the snapshot as its payload (a replay maps it again).
fn expanded(
    source: &Source,
    verified: &Verified,
    delivery: &Delivery<'_>,
    snapshot: String,
) -> Vec<NormalisedEvent> {
    let digest = sha256_hex(snapshot.as_bytes());
    let snapshot_delivery = Delivery {
        body: snapshot.as_bytes(),
        ..*delivery
    };
    let mut events = storable_events(source, verified, &snapshot_delivery, &digest);
    for event in &mut events {
        event.payload = Some(snapshot.clone());
    }
    events
}

/// Counts and logs one event's outcome.
fn record(
    context: &Pipeline<'_>,
    source_name: &str,
    verified: &Verified,
    event: &NormalisedEvent,
    outcome: &Outcome,
    took: std::time::Duration,
) {
    if outcome.backlog {
        context.drain.wake();
    }
    count_ordering(context, source_name, event, outcome);
    let label = if outcome.duplicate {
        "duplicate"
    } else {
        outcome.status.as_str()
    };
    context.metrics.delivery(source_name, label);
    context.metrics.at_minute(context.clock.now(), label);
    if outcome.conflict {
        context.metrics.delivery(source_name, "conflict");
        tracing::warn!(
            source = source_name,
            event_id = outcome.event_id.as_str(),
            "redelivery with a different body; the original payload is kept"
        );
    }
    // One line per event: what it was and what became of it, never the
    // body or a secret (the key is named by its position).
    tracing::info!(
        source = source_name,
        event_id = outcome.event_id.as_str(),
        outcome = label,
        status = outcome.status.as_str(),
        duplicate = outcome.duplicate,
        key_index = verified.key_index,
        duration_ms = took.as_secs_f64() * 1000.0,
        "webhook received"
    );
}

/// The ordering counters a new delivery moves.
fn count_ordering(
    context: &Pipeline<'_>,
    source: &str,
    event: &NormalisedEvent,
    outcome: &Outcome,
) {
    if outcome.duplicate {
        return;
    }
    let metrics = &context.metrics;
    let direction = match &event.movement {
        Movement::Post(posting) => Some(posting.direction),
        Movement::Reverse(request) => Some(request.direction),
        _ => None,
    };
    if outcome.late
        && let Some(direction) = direction
    {
        let effect = match direction {
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
    if outcome.status == Status::Unmatched {
        metrics.ordering(source, "unmatched", 1);
    }
    if outcome.status == Status::DuplicateEffect {
        metrics.ordering(source, "duplicate_effect", 1);
    }
    metrics.ordering(source, "released", outcome.released);
}
