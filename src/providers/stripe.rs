//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256
//! over `{t}.{raw body}` keyed with the UTF-8 bytes of the whole `whsec_...`
//! secret (it is not base64-decoded). Any `v1` may match; other schemes
//! (`v0`) are ignored, as in Stripe's SDKs. Source: ../shared/providers.md 2.1.
//!
//! Stripe's SDK checks the tolerance in the past only; hookledger applies it
//! both ways, so a timestamp far in the future is refused too.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{
    Delivery, MapError, Mapping, Provider, Sample, Verified, VerifyError, check_tolerance,
    event_id_field, event_type_field, from_unix_seconds, hmac_sha256, parse_unix_seconds,
};
use crate::domain::{Direction, Movement, NormalisedEvent, PostingFields};
use crate::secret::{KeyBytes, Secret};

const HEADER: &str = "Stripe-Signature";
/// The only type that credits in the core; refunds and disputes come with the
/// provider issue. `checkout.session.completed` is deliberately not mapped:
/// it describes the same payment and would credit it twice.
const CREDIT_TYPE: &str = "payment_intent.succeeded";

pub struct Stripe;

struct SignatureHeader<'a> {
    timestamp_text: &'a str,
    timestamp: i64,
    signatures: Vec<Vec<u8>>,
}

fn malformed(problem: &'static str) -> VerifyError {
    VerifyError::MalformedHeader {
        header: HEADER,
        problem,
    }
}

fn parse_header(value: &str) -> Result<SignatureHeader<'_>, VerifyError> {
    let mut timestamp_text = None;
    let mut signatures = Vec::new();
    let mut saw_v1 = false;
    for item in value.split(',') {
        let (key, val) = item
            .trim()
            .split_once('=')
            .ok_or(malformed("expected key=value items"))?;
        match key {
            "t" if timestamp_text.is_some() => return Err(malformed("more than one t= item")),
            "t" => timestamp_text = Some(val),
            "v1" => {
                saw_v1 = true;
                // A v1 that is not hex cannot match; it is skipped, as Stripe's
                // SDK effectively does, and the others are still tried.
                signatures.extend(hex::decode(val).ok());
            }
            _ => {}
        }
    }
    let timestamp_text = timestamp_text.ok_or(malformed("no t= timestamp"))?;
    let timestamp =
        parse_unix_seconds(timestamp_text).ok_or(malformed("t= is not a unix timestamp"))?;
    if !saw_v1 {
        return Err(malformed("no v1= signature"));
    }
    Ok(SignatureHeader {
        timestamp_text,
        timestamp,
        signatures,
    })
}

impl Provider for Stripe {
    fn kind(&self) -> &'static str {
        "stripe"
    }

    fn default_tolerance_secs(&self) -> u64 {
        300
    }

    fn default_account_path(&self) -> &'static str {
        "data.object.metadata.account_id"
    }

    fn key_from_secret(&self, secret: &Secret) -> Result<KeyBytes, String> {
        if secret.expose().is_empty() {
            return Err("secret is empty".to_owned());
        }
        Ok(KeyBytes::new(secret.expose().as_bytes().to_vec()))
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        tolerance_secs: u64,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let value = delivery
            .headers
            .header(HEADER)
            .ok_or(VerifyError::MissingHeader(HEADER))?;
        let header = parse_header(value)?;
        check_tolerance(header.timestamp, tolerance_secs, now)?;
        let signed = [header.timestamp_text.as_bytes(), b".", delivery.body];
        let key_index = hmac_sha256::find_matching_key(keys, &signed, &header.signatures)
            .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        Ok(Verified {
            key_index,
            timestamp: Some(header.timestamp),
            event_id: None,
        })
    }

    fn normalise(
        &self,
        _verified: &Verified,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<NormalisedEvent, MapError> {
        let event_id = event_id_field(payload, "id")?;
        let event_type = event_type_field(payload, "type")?;
        let created = payload.get("created").and_then(Value::as_i64);
        let object = payload.pointer("/data/object");
        let movement = if event_type == CREDIT_TYPE {
            PostingFields {
                direction: Direction::Credit,
                account_path: mapping.account_path.as_str(),
                account: mapping.account_path.lookup(payload),
                currency: object.and_then(|o| o.get("currency")),
                amount: object.and_then(|o| o.get("amount_received")),
                sequence: created.ok_or_else(|| "created is missing or not an integer".to_owned()),
                explicit_sequence: false,
            }
            .into_movement()
        } else {
            Movement::None
        };
        Ok(NormalisedEvent {
            event_id,
            event_type,
            object_id: object
                .and_then(|o| o.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            occurred_at: created.and_then(from_unix_seconds),
            movement,
        })
    }

    fn sign(
        &self,
        key: &KeyBytes,
        body: &[u8],
        _event_id: &str,
        timestamp: i64,
    ) -> Vec<(&'static str, String)> {
        let t = timestamp.to_string();
        let tag = hmac_sha256::sign(key, &[t.as_bytes(), b".", body]);
        vec![(HEADER, format!("t={t},v1={}", hex::encode(tag)))]
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let created = sample.sequence.unwrap_or(sample.timestamp);
        let object_id = format!("pi_{}", sample.event_id.trim_start_matches("evt_"));
        json!({
            "id": sample.event_id,
            "object": "event",
            "api_version": "2024-06-20",
            "created": created,
            "livemode": false,
            "type": sample.event_type.as_deref().unwrap_or(CREDIT_TYPE),
            "data": {"object": {
                "id": object_id,
                "object": "payment_intent",
                "amount": sample.amount_minor,
                "amount_received": sample.amount_minor,
                "currency": sample.currency.to_ascii_lowercase(),
                "status": "succeeded",
                "metadata": {"account_id": sample.account_id},
            }},
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
