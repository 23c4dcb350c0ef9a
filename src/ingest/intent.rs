//! The intent row an event is written as: what a first delivery inserts,
//! and what a replay rewrites an event with; and the raw delivery it is
//! written from, its bytes fingerprinted by SHA-256.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::domain::{Basis, Movement, NormalisedEvent, Origin, Status};
use crate::source::Source;
use crate::store::NewIntent;

/// The raw delivery the events were mapped from.
pub struct RawDelivery<'a> {
    /// The exact bytes received.
    pub payload: &'a [u8],
    pub payload_sha256: &'a str,
    pub received_at: DateTime<Utc>,
    /// The headers the scheme read, as a JSON object (see
    /// `RecordingHeaders`).
    pub signature_headers: Option<&'a str>,
    /// The time the signature covered, where the scheme signs one.
    pub signed_at: Option<i64>,
    /// The event id the signature covered outside the body, where the
    /// scheme signs one.
    pub signed_event_id: Option<&'a str>,
    /// A webhook's, or a reconcile run's (fetched from the provider).
    pub origin: Origin,
}

/// Lowercase hex SHA-256: how payloads are fingerprinted for conflicts.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The intent row a new event starts as.
pub(super) fn new_intent<'a>(
    source: &'a Source,
    event: &'a NormalisedEvent,
    raw: &'a RawDelivery<'_>,
    payload: (&'a [u8], &'a str),
) -> NewIntent<'a> {
    let mut intent = NewIntent {
        source: source.name.as_str(),
        scope: source.scope.as_str(),
        event_id: event.event_id.as_str(),
        event_type: &event.event_type,
        status: Status::Ignored,
        reason: None,
        account_id: None,
        currency: None,
        amount_minor: None,
        object_id: event.object_id.as_deref(),
        sequence: None,
        occurred_at: event.occurred_at,
        payload_sha256: payload.1,
        payload: payload.0,
        received_at: raw.received_at,
        signature_headers: raw.signature_headers,
        signed_at: raw.signed_at,
        signed_event_id: raw.signed_event_id,
        origin: raw.origin,
        payment_ref: None,
        reversal: None,
        reversal_total: None,
        undoes: None,
        partial: false,
    };
    match &event.movement {
        Movement::None => {}
        Movement::Rejected(rejection) => {
            intent.status = Status::Rejected;
            intent.reason = Some(&rejection.reason);
            intent.account_id = rejection.account.as_ref().map(|a| a.as_str());
            intent.currency = rejection.currency.as_ref().map(|c| c.code());
            intent.amount_minor = rejection.signed_amount;
            intent.sequence = rejection.sequence;
        }
        Movement::Post(posting) => {
            intent.status = Status::Applied;
            intent.account_id = Some(posting.account.as_str());
            intent.currency = Some(posting.currency.code());
            intent.amount_minor = Some(posting.signed_amount());
            intent.sequence = Some(posting.sequence);
            if let Some((payment, part)) = posting.link.paid() {
                intent.payment_ref = Some(payment);
                intent.partial = part;
            }
        }
        Movement::Reverse(request) => {
            intent.status = Status::Unmatched;
            intent.account_id = request.account.as_ref().map(|a| a.as_str());
            intent.currency = Some(request.currency.code());
            intent.amount_minor = Some(request.signed_amount());
            intent.sequence = Some(request.sequence);
            intent.payment_ref = Some(&request.reversal.payment_ref);
            intent.reversal = Some(request.reversal.basis.as_str());
            intent.reversal_total =
                (request.reversal.basis == Basis::Total).then(|| request.amount.minor());
            intent.undoes = request.reversal.undoes.as_deref();
        }
    }
    intent
}

/// The bytes stored for an event and their digest: a batch item's own JSON,
/// else the delivery's body.
pub(super) fn event_payload<'a>(
    event: &'a NormalisedEvent,
    raw: &'a RawDelivery<'_>,
) -> (&'a [u8], std::borrow::Cow<'a, str>) {
    match &event.payload {
        Some(item) => (item.as_bytes(), sha256_hex(item.as_bytes()).into()),
        None => (raw.payload, raw.payload_sha256.into()),
    }
}
