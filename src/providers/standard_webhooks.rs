//! Standard Webhooks (the spec behind Svix, Polar and others), also
//! hookledger's own format for in-house senders. Headers `webhook-id`,
//! `webhook-timestamp`, `webhook-signature` (a space-separated list of
//! `v1,<base64>`); HMAC-SHA256 over `{id}.{timestamp}.{raw body}` keyed with
//! the base64-decoded secret after `whsec_`. Svix's `svix-*` header names are
//! accepted as a set too. Source: ../shared/providers.md 2.2.
//!
//! hookledger's payload: `{"type": "balance.credit" | "balance.debit",
//! "timestamp"?, "data": {"account_id", "amount_minor", "currency",
//! "sequence"?}}`. The sequence is `data.sequence`; without it, the event time
//! in the body's `timestamp` (the spec's recommended field, whole seconds);
//! without that, the signed delivery timestamp. The body time comes first
//! because a provider re-signs every retry with a fresh timestamp: an old
//! event retried after a newer one would otherwise look newer.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_PAD_INDIFFERENT};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{
    check_tolerance, event_type_at, from_unix_seconds, parse_unix_seconds, rfc3339,
};
use super::hmac_sha256;
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, EventId, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};

const CREDIT_TYPE: &str = "balance.credit";

const AMOUNT: Amount = Amount::Path {
    amount: "data.amount_minor",
    currency: "data.currency",
    format: AmountFormat::Minor,
};

static RULES: &[Rule] = &[
    Rule {
        event_type: CREDIT_TYPE,
        effect: Effect::Credit,
        when: &[],
        amount: AMOUNT,
        payment: "",
        object: "",
        key: Key::EventId,
        optional: false,
    },
    Rule {
        event_type: "balance.debit",
        effect: Effect::Debit,
        when: &[],
        amount: AMOUNT,
        payment: "",
        object: "",
        key: Key::EventId,
        optional: false,
    },
];

pub struct StandardWebhooks;

/// The three headers, under one naming scheme.
struct HeaderNames {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const STANDARD_NAMES: HeaderNames = HeaderNames {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};
const SVIX_NAMES: HeaderNames = HeaderNames {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

/// `data.sequence`, else the body's event time, else the signed timestamp.
fn sequence(
    data: Option<&Value>,
    event_time: &Result<Option<DateTime<Utc>>, String>,
    signed_timestamp: Option<i64>,
) -> Result<i64, String> {
    match data.and_then(|d| d.get("sequence")) {
        Some(Value::Null) | None => match event_time {
            Ok(Some(time)) => Ok(time.timestamp()),
            Ok(None) => signed_timestamp.ok_or_else(|| "no sequence and no timestamp".to_owned()),
            Err(problem) => Err(problem.clone()),
        },
        Some(value) => value
            .as_i64()
            .ok_or_else(|| "sequence must be an integer".to_owned()),
    }
}

/// The id and timestamp headers and the base64 signature list, under one
/// naming scheme: the standard one, or Svix's when only Svix's signature
/// header is present. Shared with Polar, which signs the same way.
pub(super) struct SignedHeaders<'a> {
    pub id: &'a str,
    pub timestamp_text: &'a str,
    pub timestamp: i64,
    pub candidates: Vec<Vec<u8>>,
}

pub(super) fn read_headers<'a>(
    delivery: &'a Delivery<'_>,
) -> Result<SignedHeaders<'a>, VerifyError> {
    let names = if delivery
        .headers
        .raw_header(STANDARD_NAMES.signature)
        .is_none()
        && delivery.headers.raw_header(SVIX_NAMES.signature).is_some()
    {
        &SVIX_NAMES
    } else {
        &STANDARD_NAMES
    };
    let id = delivery.required(names.id)?;
    let timestamp_text = delivery.required(names.timestamp)?;
    let signature = delivery.required(names.signature)?;
    // The spec forbids '.' in the id: it separates the signed parts.
    if id.is_empty() || id.contains('.') {
        return Err(VerifyError::MalformedHeader {
            header: names.id,
            problem: "must be non-empty and contain no '.'",
        });
    }
    let timestamp = parse_unix_seconds(timestamp_text).ok_or(VerifyError::MalformedHeader {
        header: names.timestamp,
        problem: "not a unix timestamp",
    })?;
    let mut saw_v1 = false;
    let candidates = signature
        .split_whitespace()
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .inspect(|_| saw_v1 = true)
        .filter_map(|tag| STANDARD.decode(tag).ok())
        .collect();
    if !saw_v1 {
        return Err(VerifyError::MalformedHeader {
            header: names.signature,
            problem: "no v1,<base64> signature",
        });
    }
    Ok(SignedHeaders {
        id,
        timestamp_text,
        timestamp,
        candidates,
    })
}

/// Verifies `{id}.{timestamp}.{body}` against the keys.
pub(super) fn verify_signed(
    delivery: &Delivery<'_>,
    keys: &[KeyBytes],
    tolerance_secs: u64,
    now: DateTime<Utc>,
) -> Result<Verified, VerifyError> {
    let headers = read_headers(delivery)?;
    check_tolerance(headers.timestamp, tolerance_secs, now)?;
    let signed = [
        headers.id.as_bytes(),
        b".",
        headers.timestamp_text.as_bytes(),
        b".",
        delivery.body,
    ];
    let key_index = hmac_sha256::find_matching_key(keys, &signed, &headers.candidates)
        .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
    Ok(Verified {
        key_index,
        timestamp: Some(headers.timestamp),
        event_id: Some(headers.id.to_owned()),
    })
}

/// The three Standard Webhooks headers for `unsigned`, signed with `key`.
pub(super) fn sign_standard(key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
    let t = unsigned.timestamp.to_string();
    let tag = hmac_sha256::sign(
        key,
        &[
            unsigned.event_id.as_bytes(),
            b".",
            t.as_bytes(),
            b".",
            &unsigned.body,
        ],
    );
    SignedParts {
        headers: vec![
            (STANDARD_NAMES.id, unsigned.event_id.to_owned()),
            (STANDARD_NAMES.timestamp, t),
            (
                STANDARD_NAMES.signature,
                format!("v1,{}", STANDARD.encode(tag)),
            ),
        ],
        body: unsigned.body,
    }
}

/// The signed `webhook-id` as the event id.
pub(super) fn signed_event_id(verified: &Verified) -> Result<EventId, MapError> {
    Ok(EventId::parse(
        verified
            .event_id
            .as_deref()
            .ok_or(MapError::MissingEventId("webhook-id"))?,
    )?)
}

/// The body's `timestamp` (RFC 3339), if it has one.
pub(super) fn body_time(payload: &Value) -> Result<Option<DateTime<Utc>>, String> {
    match payload.get("timestamp") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_str()
            .and_then(rfc3339)
            .map(Some)
            .ok_or_else(|| "timestamp is not an RFC 3339 time".to_owned()),
    }
}

impl Provider for StandardWebhooks {
    fn kind(&self) -> &'static str {
        "standard-webhooks"
    }

    fn default_tolerance_secs(&self) -> u64 {
        300
    }

    fn default_account_path(&self) -> &'static str {
        "data.account_id"
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    fn carries_sequence(&self) -> bool {
        true
    }

    /// `payment_path` and `reverses_path`: the sender's own payment refs.
    fn payments_configured(&self) -> bool {
        true
    }

    fn keys_from_secret(&self, secret: &Secret) -> Result<Vec<KeyBytes>, String> {
        let encoded = secret
            .expose()
            .strip_prefix("whsec_")
            .unwrap_or(secret.expose());
        match STANDARD_PAD_INDIFFERENT.decode(encoded) {
            Ok(bytes) if !bytes.is_empty() => Ok(vec![KeyBytes::new(bytes)]),
            _ => Err("must be whsec_ followed by base64 key bytes".to_owned()),
        }
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        policy: &VerifyPolicy<'_>,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        verify_signed(delivery, keys, policy.tolerance_secs, now)
    }

    fn normalise(
        &self,
        verified: &Verified,
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let event_time = body_time(payload);
        let data = payload.get("data");
        let view = EventView {
            event_id: signed_event_id(verified)?,
            event_type: event_type_at(payload, "type")?,
            root: payload,
            sequence: sequence(data, &event_time, verified.timestamp),
            explicit_sequence: data
                .and_then(|d| d.get("sequence"))
                .is_some_and(|s| !s.is_null()),
            occurred_at: event_time
                .clone()
                .ok()
                .flatten()
                .or_else(|| verified.timestamp.and_then(from_unix_seconds)),
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        sign_standard(key, unsigned)
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let mut data = json!({
            "account_id": sample.account_id,
            "amount_minor": sample.amount_minor,
            "currency": sample.currency,
        });
        if let Some(sequence) = sample.sequence {
            data["sequence"] = json!(sequence);
        }
        if let Some(payment) = &sample.payment {
            // Read where a source's `payment_path` points there.
            data["payment_id"] = json!(payment);
        }
        let timestamp = from_unix_seconds(sample.timestamp).map(|t| t.to_rfc3339());
        json!({
            "type": sample.event_type.as_deref().unwrap_or(CREDIT_TYPE),
            "timestamp": timestamp,
            "data": data,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
