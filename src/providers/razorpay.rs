//! Razorpay: `X-Razorpay-Signature`, hex HMAC-SHA256 over the raw body
//! keyed with the UTF-8 bytes of the webhook secret (set per webhook in the
//! dashboard; not necessarily the API key secret). No time is signed, so
//! there is no replay window. One signature per delivery; after the secret
//! changes, retries of older events are still signed with the old one, so
//! every configured secret is tried. Source: ../shared/providers.md 2.8, 6.6.
//!
//! The event id header (`x-razorpay-event-id`) is unsigned and is not used:
//! every intent key comes from the signed body, so a replay under a new id
//! header is a duplicate and a forged one cannot make a second credit.
//! `payment.captured` credits `payload.payment.entity.amount` (integer
//! paise, or the currency's subunit) to the payment's
//! `notes.account_id`, keyed `payment:{payment id}`: one credit per
//! payment, also if a source adds `order.paid` (which reports the same
//! payment) to its credit types. `refund.processed` debits the refund's own
//! `amount` from `payment_id`, keyed `refund:{refund id}`, but only for a
//! captured payment: Razorpay also refunds uncaptured payments
//! automatically, and those were never credited. Any other event is keyed
//! `{event}:{entity id}:{16 hex of sha256(body)}`, which can never equal a
//! money key. Events are ordered by the body's `created_at` (unix seconds).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{body_digest_id, event_type_at, from_unix_seconds};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "X-Razorpay-Signature";
const TAG: HeaderTag = HeaderTag::new(HEADER, Encoding::Hex, "not hex");
const CAPTURED: &str = "payment.captured";
const REFUNDED: &str = "refund.processed";

static RULES: &[Rule] = &[
    Rule {
        event_type: CAPTURED,
        effect: Effect::Credit,
        when: &[],
        amount: Amount::Path {
            amount: "payload.payment.entity.amount",
            currency: "payload.payment.entity.currency",
            format: AmountFormat::Minor,
        },
        payment: "payload.payment.entity.id",
        object: "payload.payment.entity.id",
        key: Key::Field {
            prefix: "payment",
            path: "payload.payment.entity.id",
        },
        optional: false,
    },
    Rule {
        event_type: REFUNDED,
        effect: Effect::Reverse(Basis::Each),
        when: &[
            Condition {
                path: "payload.refund.entity.status",
                values: &["processed"],
            },
            Condition {
                path: "payload.payment.entity.captured",
                values: &["true"],
            },
        ],
        amount: Amount::Path {
            amount: "payload.refund.entity.amount",
            currency: "payload.refund.entity.currency",
            format: AmountFormat::Minor,
        },
        payment: "payload.refund.entity.payment_id",
        object: "payload.refund.entity.id",
        key: Key::Field {
            prefix: "refund",
            path: "payload.refund.entity.id",
        },
        optional: false,
    },
];

pub struct Razorpay;

/// The id of the event's main entity: the first one `contains` names.
fn entity_id(payload: &Value) -> Option<&Value> {
    let first = payload.get("contains")?.get(0)?.as_str()?;
    payload.get("payload")?.get(first)?.get("entity")?.get("id")
}

impl Provider for Razorpay {
    fn kind(&self) -> &'static str {
        "razorpay"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "payload.payment.entity.notes.account_id"
    }

    /// Keys are Razorpay entity ids (`pay_`, `rfnd_`), Razorpay-wide, or a
    /// digest of the signed body itself.
    fn global_ids(&self) -> bool {
        true
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
        let event_type = event_type_at(payload, "event")?;
        let created = payload.get("created_at").and_then(Value::as_i64);
        let view = EventView {
            event_id: body_digest_id(&event_type, entity_id(payload), delivery.body)?,
            event_type,
            root: payload,
            sequence: created.ok_or_else(|| "created_at is missing or not an integer".to_owned()),
            explicit_sequence: false,
            occurred_at: created.and_then(from_unix_seconds),
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        SignedParts {
            headers: vec![
                TAG.sign(key, &[&unsigned.body]),
                ("X-Razorpay-Event-Id", unsigned.event_id.to_owned()),
            ],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let created = sample.sequence.unwrap_or(sample.timestamp);
        let suffix: String = sample
            .event_id
            .trim_start_matches("evt_")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(14)
            .collect();
        let payment_id = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("pay_{suffix}"));
        let mut payment = json!({
            "id": payment_id,
            "entity": "payment",
            "amount": sample.amount_minor,
            "currency": sample.currency,
            "status": "captured",
            "order_id": format!("order_{suffix}"),
            "international": false,
            "method": "upi",
            "amount_refunded": 0,
            "refund_status": null,
            "captured": true,
            "description": "Top-up",
            "email": "gaurav.kumar@example.com",
            "contact": "+919000090000",
            "notes": {"account_id": sample.account_id},
            "fee": 0,
            "tax": 0,
            "error_code": null,
            "error_description": null,
            "created_at": created,
        });
        let event_type = sample.event_type.as_deref().unwrap_or(CAPTURED);
        let (contains, body) = if event_type.starts_with("refund.") {
            payment["status"] = json!("refunded");
            payment["amount_refunded"] = json!(sample.amount_minor);
            payment["refund_status"] = json!("full");
            let refund = json!({
                "id": format!("rfnd_{suffix}"),
                "entity": "refund",
                "amount": sample.amount_minor,
                "currency": sample.currency,
                "payment_id": payment_id,
                "notes": {},
                "receipt": null,
                "acquirer_data": {"rrn": null},
                "created_at": created,
                "batch_id": null,
                "status": "processed",
                "speed_processed": "normal",
                "speed_requested": "normal",
            });
            (
                json!(["refund", "payment"]),
                json!({"refund": {"entity": refund}, "payment": {"entity": payment}}),
            )
        } else {
            (json!(["payment"]), json!({"payment": {"entity": payment}}))
        };
        json!({
            "entity": "event",
            "account_id": "acc_BFQ7uQEaa7j2z7",
            "event": event_type,
            "contains": contains,
            "payload": body,
            "created_at": created,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
