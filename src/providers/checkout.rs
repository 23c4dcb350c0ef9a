//! Checkout.com: `Cko-Signature` is hex HMAC-SHA256 over the raw body, keyed
//! with the UTF-8 bytes of the webhook's signature key. No time is signed.
//! (An `Authorization` header with a configured key may come too; the
//! signature already proves the sender, so it is not read.) Source:
//! ../shared/providers.md 2.11 and 6.8.
//!
//! `payment_captured` credits `data.amount` (minor units) to
//! `data.metadata.account_id`, keyed by the capture action
//! (`capture:{act_...}`): a capture credits once, and a payment captured in
//! parts credits each part (the payment adds them up, and its refunds are
//! bounded by the sum). `payment_refunded` debits the refund action's
//! `data.amount` from the payment `data.id`, keyed by the action
//! (`refund:{act_...}`); its running total (`data.balances.total_refunded`)
//! is not used. Events are ordered by `created_on`, or in the workflows
//! format, which has none, by `timestamp`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{event_id_at, event_type_at, time_order};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "Cko-Signature";
const TAG: HeaderTag = HeaderTag::new(HEADER, Encoding::Hex, "not hex");

const AMOUNT: Amount = Amount::Path {
    amount: "data.amount",
    currency: "data.currency",
    format: AmountFormat::Minor,
};

static RULES: &[Rule] = &[
    Rule {
        event_type: "payment_captured",
        // A payment may be captured in parts, each its own action.
        effect: Effect::CreditPart,
        when: &[],
        amount: AMOUNT,
        payment: "data.id",
        object: "data.id",
        key: Key::Field {
            prefix: "capture",
            path: "data.action_id",
        },
        optional: false,
    },
    Rule {
        event_type: "payment_refunded",
        effect: Effect::Reverse(Basis::Each),
        when: &[],
        amount: AMOUNT,
        payment: "data.id",
        object: "data.action_id",
        key: Key::Field {
            prefix: "refund",
            path: "data.action_id",
        },
        optional: false,
    },
];

pub struct Checkout;

impl Provider for Checkout {
    fn kind(&self) -> &'static str {
        "checkout"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "data.metadata.account_id"
    }

    /// Keys are Checkout.com action ids (`act_`), unique per action.
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
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let field = ["created_on", "timestamp"]
            .into_iter()
            .find(|field| payload.get(field).is_some())
            .unwrap_or("created_on");
        let (sequence, created) = time_order(payload.get(field), field);
        let view = EventView {
            event_id: event_id_at(payload, "id")?,
            event_type: event_type_at(payload, "type")?,
            root: payload,
            sequence,
            explicit_sequence: false,
            occurred_at: created,
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        SignedParts {
            headers: vec![TAG.sign(key, &[&unsigned.body])],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let time = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Millis, true);
        let suffix = sample.event_id.trim_start_matches("evt_");
        let payment = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("pay_{suffix}"));
        let event_type = sample.event_type.as_deref().unwrap_or("payment_captured");
        let mut balances = json!({"total_authorized": sample.amount_minor, "total_voided": 0,
            "available_to_void": 0, "total_captured": sample.amount_minor,
            "available_to_capture": 0, "total_refunded": 0,
            "available_to_refund": sample.amount_minor});
        if event_type == "payment_refunded" {
            balances["total_refunded"] = json!(sample.amount_minor);
            balances["available_to_refund"] = json!(0);
        }
        json!({
            "id": sample.event_id,
            "type": event_type,
            "version": "1.0.1",
            "created_on": time,
            "data": {
                "id": payment,
                "action_id": format!("act_{suffix}"),
                "response_code": "10000",
                "response_summary": "Approved",
                "reference": format!("ORD-{suffix}"),
                "amount": sample.amount_minor,
                "currency": sample.currency,
                "processed_on": time,
                "balances": balances,
                "metadata": {"account_id": sample.account_id},
            },
            "_links": {"self": {"href": format!(
                "https://api.checkout.com/workflows/events/{}", sample.event_id)}},
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
