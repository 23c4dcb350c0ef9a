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

use super::{
    Delivery, MapError, Mapping, Provider, Sample, Verified, VerifyError, check_tolerance,
    event_type_field, from_unix_seconds, hmac_sha256, parse_unix_seconds,
};
use crate::domain::{Direction, EventId, Movement, NormalisedEvent, PostingFields};
use crate::secret::{KeyBytes, Secret};

const CREDIT_TYPE: &str = "balance.credit";
const DEBIT_TYPE: &str = "balance.debit";

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

fn required<'a>(delivery: &'a Delivery<'_>, name: &'static str) -> Result<&'a str, VerifyError> {
    delivery
        .headers
        .header(name)
        .ok_or(VerifyError::MissingHeader(name))
}

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

    fn carries_sequence(&self) -> bool {
        true
    }

    fn key_from_secret(&self, secret: &Secret) -> Result<KeyBytes, String> {
        let encoded = secret
            .expose()
            .strip_prefix("whsec_")
            .unwrap_or(secret.expose());
        match STANDARD_PAD_INDIFFERENT.decode(encoded) {
            Ok(bytes) if !bytes.is_empty() => Ok(KeyBytes::new(bytes)),
            _ => Err("must be whsec_ followed by base64 key bytes".to_owned()),
        }
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        tolerance_secs: u64,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let names = if delivery.headers.header(STANDARD_NAMES.signature).is_none()
            && delivery.headers.header(SVIX_NAMES.signature).is_some()
        {
            &SVIX_NAMES
        } else {
            &STANDARD_NAMES
        };
        let id = required(delivery, names.id)?;
        let timestamp_text = required(delivery, names.timestamp)?;
        let signature = required(delivery, names.signature)?;
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
        let candidates: Vec<Vec<u8>> = signature
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
        check_tolerance(timestamp, tolerance_secs, now)?;
        let signed = [
            id.as_bytes(),
            b".",
            timestamp_text.as_bytes(),
            b".",
            delivery.body,
        ];
        let key_index = hmac_sha256::find_matching_key(keys, &signed, &candidates)
            .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        Ok(Verified {
            key_index,
            timestamp: Some(timestamp),
            event_id: Some(id.to_owned()),
        })
    }

    fn normalise(
        &self,
        verified: &Verified,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<NormalisedEvent, MapError> {
        let event_id = EventId::parse(
            verified
                .event_id
                .as_deref()
                .ok_or(MapError::MissingEventId("webhook-id"))?,
        )?;
        let event_type = event_type_field(payload, "type")?;
        let direction = match event_type.as_str() {
            CREDIT_TYPE => Some(Direction::Credit),
            DEBIT_TYPE => Some(Direction::Debit),
            _ => None,
        };
        let data = payload.get("data");
        let event_time = match payload.get("timestamp") {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| Some(t.with_timezone(&Utc)))
                .ok_or_else(|| "timestamp is not an RFC 3339 time".to_owned()),
        };
        let movement = match direction {
            None => Movement::None,
            Some(direction) => PostingFields {
                direction,
                account_path: mapping.account_path.as_str(),
                account: mapping.account_path.lookup(payload),
                currency: data.and_then(|d| d.get("currency")),
                amount: data.and_then(|d| d.get("amount_minor")),
                sequence: sequence(data, &event_time, verified.timestamp),
                explicit_sequence: data
                    .and_then(|d| d.get("sequence"))
                    .is_some_and(|s| !s.is_null()),
            }
            .into_movement(),
        };
        let occurred_at = event_time
            .ok()
            .flatten()
            .or_else(|| verified.timestamp.and_then(from_unix_seconds));
        Ok(NormalisedEvent {
            event_id,
            event_type,
            object_id: None,
            occurred_at,
            movement,
        })
    }

    fn sign(
        &self,
        key: &KeyBytes,
        body: &[u8],
        event_id: &str,
        timestamp: i64,
    ) -> Vec<(&'static str, String)> {
        let t = timestamp.to_string();
        let tag = hmac_sha256::sign(key, &[event_id.as_bytes(), b".", t.as_bytes(), b".", body]);
        vec![
            (STANDARD_NAMES.id, event_id.to_owned()),
            (STANDARD_NAMES.timestamp, t),
            (
                STANDARD_NAMES.signature,
                format!("v1,{}", STANDARD.encode(tag)),
            ),
        ]
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
