//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256
//! over `{t}.{raw body}` keyed with the UTF-8 bytes of the whole `whsec_...`
//! secret (it is not base64-decoded). Any `v1` may match; other schemes
//! (`v0`) are ignored, as in Stripe's SDKs. Source: ../shared/providers.md 2.1.
//!
//! Stripe's SDK checks the tolerance in the past only; hookledger applies it
//! both ways, so a timestamp far in the future is refused too.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{
    check_tolerance, event_id_at, event_type_at, from_unix_seconds, parse_unix_seconds,
};
use super::hmac_sha256;
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, ReconcileApi, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "Stripe-Signature";

/// A Refund or Dispute object's own amount, in minor units.
const OBJECT_AMOUNT: Amount = Amount::Path {
    amount: "data.object.amount",
    currency: "data.object.currency",
    format: AmountFormat::Minor,
};

const SUCCEEDED: &[Condition] = &[Condition {
    path: "data.object.status",
    values: &["succeeded"],
}];

/// `payment_intent.succeeded` credits the PaymentIntent. `charge.succeeded`
/// and `checkout.session.completed` describe the same payment: a source
/// that prefers one lists it in `credit_types`, and since each names the
/// PaymentIntent, a source listing several credits the payment once (the
/// others are `duplicate_effect`). A refund debits once, keyed by the refund's own id,
/// whichever of `refund.created` / `refund.updated` reports it succeeded
/// first; since API version 2024-10-28.acacia these fire for every refund.
/// `charge.refunded` reports the running total instead: a source on an
/// older API version lists it in `debit_types` instead of the refund types
/// (never both). Disputes debit when the funds are withdrawn and credit
/// back when they are reinstated. Refunds and disputes name the
/// PaymentIntent; their account is the payment's. Source:
/// ../shared/providers.md 6.1.
static RULES: &[Rule] = &[
    Rule {
        event_type: "payment_intent.succeeded",
        effect: Effect::Credit,
        when: &[],
        amount: Amount::Path {
            amount: "data.object.amount_received",
            currency: "data.object.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.object.id",
        object: "data.object.id",
        key: Key::EventId,
        optional: false,
    },
    Rule {
        event_type: "charge.succeeded",
        effect: Effect::Credit,
        when: &[],
        amount: Amount::Path {
            amount: "data.object.amount_captured",
            currency: "data.object.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::EventId,
        optional: true,
    },
    Rule {
        event_type: "checkout.session.completed",
        effect: Effect::Credit,
        when: &[Condition {
            path: "data.object.payment_status",
            values: &["paid"],
        }],
        amount: Amount::Path {
            amount: "data.object.amount_total",
            currency: "data.object.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::EventId,
        optional: true,
    },
    Rule {
        event_type: "refund.created",
        effect: Effect::Reverse(Basis::Each),
        when: SUCCEEDED,
        amount: OBJECT_AMOUNT,
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::Field {
            prefix: "refund",
            path: "data.object.id",
        },
        optional: false,
    },
    Rule {
        event_type: "refund.updated",
        effect: Effect::Reverse(Basis::Each),
        when: SUCCEEDED,
        amount: OBJECT_AMOUNT,
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::Field {
            prefix: "refund",
            path: "data.object.id",
        },
        optional: false,
    },
    Rule {
        event_type: "charge.dispute.funds_withdrawn",
        effect: Effect::Reverse(Basis::Each),
        when: &[],
        amount: OBJECT_AMOUNT,
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::Field {
            prefix: "dispute-withdrawn",
            path: "data.object.id",
        },
        optional: false,
    },
    Rule {
        event_type: "charge.dispute.funds_reinstated",
        effect: Effect::Reinstate {
            undoes: "dispute-withdrawn",
        },
        when: &[],
        amount: OBJECT_AMOUNT,
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::Field {
            prefix: "dispute-reinstated",
            path: "data.object.id",
        },
        optional: false,
    },
    Rule {
        event_type: "charge.refunded",
        effect: Effect::Reverse(Basis::Total),
        when: &[],
        amount: Amount::Path {
            amount: "data.object.amount_refunded",
            currency: "data.object.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.object.payment_intent",
        object: "data.object.id",
        key: Key::EventId,
        optional: true,
    },
];

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

    /// Stripe ids (`evt_`, `re_`, `du_`) name one object across Stripe, and
    /// an event sent to several endpoints keeps its id.
    fn global_ids(&self) -> bool {
        true
    }

    fn reconcile_api(&self) -> Option<ReconcileApi> {
        Some(ReconcileApi {
            base: Some("https://api.stripe.com"),
            retention_days: 30,
            client_credentials: false,
        })
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        policy: &VerifyPolicy<'_>,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let header = parse_header(delivery.required(HEADER)?)?;
        check_tolerance(header.timestamp, policy.tolerance_secs, now)?;
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
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let created = payload.get("created").and_then(Value::as_i64);
        let view = EventView {
            event_id: event_id_at(payload, "id")?,
            event_type: event_type_at(payload, "type")?,
            root: payload,
            sequence: created.ok_or_else(|| "created is missing or not an integer".to_owned()),
            explicit_sequence: false,
            occurred_at: created.and_then(from_unix_seconds),
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let t = unsigned.timestamp.to_string();
        let tag = hmac_sha256::sign(key, &[t.as_bytes(), b".", &unsigned.body]);
        SignedParts {
            headers: vec![(HEADER, format!("t={t},v1={}", hex::encode(tag)))],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let created = sample.sequence.unwrap_or(sample.timestamp);
        let event_type = sample
            .event_type
            .as_deref()
            .unwrap_or("payment_intent.succeeded");
        let suffix = sample.event_id.trim_start_matches("evt_");
        let payment = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("pi_{suffix}"));
        let currency = sample.currency.to_ascii_lowercase();
        let object = match event_type {
            "refund.created" | "refund.updated" => json!({
                "id": format!("re_{suffix}"),
                "object": "refund",
                "amount": sample.amount_minor,
                "currency": currency,
                "payment_intent": payment,
                "charge": format!("ch_{suffix}"),
                "status": "succeeded",
                "metadata": {},
            }),
            "charge.refunded" => json!({
                "id": format!("ch_{suffix}"),
                "object": "charge",
                "amount_refunded": sample.amount_minor,
                "currency": currency,
                "payment_intent": payment,
                "refunded": false,
                "metadata": {"account_id": sample.account_id},
            }),
            t if t.starts_with("charge.dispute.") => json!({
                "id": format!("dp_{suffix}"),
                "object": "dispute",
                "amount": sample.amount_minor,
                "currency": currency,
                "payment_intent": payment,
                "charge": format!("ch_{suffix}"),
                "status": "under_review",
                "metadata": {},
            }),
            _ => json!({
                "id": payment,
                "object": "payment_intent",
                "amount": sample.amount_minor,
                "amount_received": sample.amount_minor,
                "currency": currency,
                "status": "succeeded",
                "metadata": {"account_id": sample.account_id},
            }),
        };
        json!({
            "id": sample.event_id,
            "object": "event",
            "api_version": "2024-10-28.acacia",
            "created": created,
            "livemode": false,
            "type": event_type,
            "data": {"object": object},
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
