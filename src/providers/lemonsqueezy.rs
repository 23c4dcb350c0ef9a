//! Lemon Squeezy: `X-Signature`, hex HMAC-SHA256 over the raw body keyed
//! with the UTF-8 bytes of the webhook's signing secret (6 to 40 characters,
//! chosen by the merchant). No time is signed, so there is no replay
//! window; one signature per delivery, every configured secret is tried.
//! Source: ../shared/providers.md 2.9 and 6.11.
//!
//! The `X-Event-Name` header is unsigned and is not read: the event type is
//! the body's `meta.event_name`, which is signed. Lemon Squeezy documents no
//! event id, so every intent key comes from the signed body.
//! `order_created` credits `data.attributes.total` (integer cents, tax
//! included) in `data.attributes.currency` to `meta.custom_data.account_id`
//! when the order's `status` is `paid`, keyed `order:{order id}`: one credit
//! per order. `order_refunded` carries the order again, with its running
//! refunded total `data.attributes.refunded_amount`: it is keyed
//! `order_refunded:{order id}:{refunded_amount}` (one key per new total, so
//! a redelivery is a duplicate) and the engine posts only what the total
//! adds (`Basis::Total`). Any other event is keyed `{event_name}:{id}:{16
//! hex of sha256(body)}`, which can never equal a money key, so a pending
//! order seen first does not hold its order's key. Subscription renewals
//! (`subscription_payment_success`) are not mapped. Events are ordered by
//! `data.attributes.updated_at`, to the microsecond.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{body_digest_id, event_type_at, id_text, lookup, sequence_of, time_of};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, EventId, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "X-Signature";
const TAG: HeaderTag = HeaderTag::new(HEADER, Encoding::Hex, "not hex");
const CREATED: &str = "order_created";
const REFUNDED: &str = "order_refunded";
const UPDATED_AT: &str = "data.attributes.updated_at";

static RULES: &[Rule] = &[
    Rule {
        event_type: CREATED,
        effect: Effect::Credit,
        when: &[Condition {
            path: "data.attributes.status",
            values: &["paid"],
        }],
        amount: Amount::Path {
            amount: "data.attributes.total",
            currency: "data.attributes.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.id",
        object: "data.id",
        key: Key::Field {
            prefix: "order",
            path: "data.id",
        },
        optional: false,
    },
    Rule {
        event_type: REFUNDED,
        effect: Effect::Reverse(Basis::Total),
        when: &[],
        amount: Amount::Path {
            amount: "data.attributes.refunded_amount",
            currency: "data.attributes.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.id",
        object: "data.id",
        // The running total is part of the key: see `event_id`.
        key: Key::EventId,
        optional: false,
    },
];

pub struct LemonSqueezy;

/// A refund's key holds the order and its new refunded total; every other
/// event's is derived from its body.
fn event_id(event_name: &str, payload: &Value, body: &[u8]) -> Result<EventId, MapError> {
    let order = lookup(payload, "data.id");
    if event_name == REFUNDED
        && let (Some(order), Some(total)) = (
            id_text(order),
            id_text(lookup(payload, "data.attributes.refunded_amount")),
        )
    {
        return Ok(EventId::parse(&format!("{REFUNDED}:{order}:{total}"))?);
    }
    body_digest_id(event_name, order, body)
}

impl Provider for LemonSqueezy {
    fn kind(&self) -> &'static str {
        "lemonsqueezy"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "meta.custom_data.account_id"
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        _policy: &VerifyPolicy<'_>,
        _now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        TAG.verify(delivery, keys, &[delivery.body])
    }

    fn normalise(
        &self,
        _verified: &Verified,
        delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let event_name = event_type_at(payload, "meta.event_name")?;
        let updated = lookup(payload, UPDATED_AT);
        let view = EventView {
            event_id: event_id(&event_name, payload, delivery.body)?,
            event_type: event_name,
            root: payload,
            sequence: sequence_of(updated, UPDATED_AT),
            explicit_sequence: false,
            occurred_at: time_of(updated),
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let event_name = serde_json::from_slice::<Value>(&unsigned.body)
            .ok()
            .and_then(|body| id_text(lookup(&body, "meta.event_name")))
            .unwrap_or_default();
        SignedParts {
            headers: vec![
                TAG.sign(key, &[&unsigned.body]),
                ("X-Event-Name", event_name),
            ],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let at = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let event_name = sample.event_type.as_deref().unwrap_or(CREATED);
        let refunded = event_name == REFUNDED;
        let order = sample.payment.clone().unwrap_or_else(|| {
            // Lemon Squeezy order ids are digits in a string.
            let digits: String = sample
                .event_id
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            if digits.is_empty() {
                "1".to_owned()
            } else {
                digits
            }
        });
        let amount = sample.amount_minor;
        json!({
            "meta": {
                "test_mode": true,
                "event_name": event_name,
                "custom_data": {"account_id": sample.account_id},
            },
            "data": {
                "type": "orders",
                "id": order,
                "attributes": {
                    "store_id": 1,
                    "customer_id": 1,
                    "identifier": sample.event_id,
                    "order_number": 1,
                    "user_name": "Darlene Daugherty",
                    "user_email": "darlene@example.com",
                    "currency": sample.currency,
                    "currency_rate": "1.0000",
                    "subtotal": amount,
                    "discount_total": 0,
                    "tax": 0,
                    "total": amount,
                    "refunded_amount": if refunded { amount } else { 0 },
                    "status": if refunded { "refunded" } else { "paid" },
                    "refunded": refunded,
                    "refunded_at": if refunded { json!(at) } else { Value::Null },
                    "test_mode": true,
                    "created_at": at,
                    "updated_at": at,
                },
            },
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
