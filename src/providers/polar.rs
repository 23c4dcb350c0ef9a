//! Polar: Standard Webhooks headers and signing (`webhook-id`,
//! `webhook-timestamp`, `webhook-signature: v1,<base64>` over
//! `{id}.{timestamp}.{raw body}`), checked ±300 s as Polar's SDK does; the
//! code is shared with [`standard_webhooks`](super::standard_webhooks).
//! What differs is the key. Polar signed with the UTF-8 bytes of the whole
//! `whsec_...` secret until 2026-09-08, and secrets generated since are used
//! the Standard Webhooks way (base64-decoded after `whsec_`). An old secret
//! is itself valid base64, so it cannot be told apart by looking at it: a
//! configured secret stands for both keys, and either may verify, as in
//! Polar's SDK. Samples are signed with the first (legacy) key. Source:
//! ../shared/providers.md 2.3 and 6.12.
//!
//! The event id is the signed `webhook-id`, the same across Polar's retries
//! and manual redeliveries. `order.paid` credits `data.total_amount`
//! (integer cents, tax included) in `data.currency` to
//! `data.metadata.account_id`, keyed `order.paid:{order id}`: one credit
//! per order, even if it reaches hookledger as two webhook events (two
//! endpoints of one organisation pointing here, say). `order.refunded`
//! carries the order with its running refunded totals, which Polar keeps
//! without tax in `refunded_amount` and for the tax in
//! `refunded_tax_amount`: the reversal is their sum, so that a full refund
//! takes back the whole credit, and the engine posts only what the total
//! adds (`Basis::Total`); it is keyed by its webhook id (a second copy of a
//! total posts nothing). Polar sends no dispute webhook. Events are ordered
//! by the body's `timestamp`, to the microsecond (Polar also delivers in
//! order per endpoint).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{event_type_at, sequence_of};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy, utf8_key};
use super::rules::{Amount, Effect, EventView, Key, Rule, map_event};
use super::standard_webhooks::{
    StandardWebhooks, body_time, sign_standard, signed_event_id, verify_signed,
};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};

const PAID: &str = "order.paid";
const REFUNDED: &str = "order.refunded";

static RULES: &[Rule] = &[
    Rule {
        event_type: PAID,
        effect: Effect::Credit,
        when: &[],
        amount: Amount::Path {
            amount: "data.total_amount",
            currency: "data.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.id",
        object: "data.id",
        key: Key::Field {
            prefix: PAID,
            path: "data.id",
        },
        optional: false,
    },
    Rule {
        event_type: REFUNDED,
        effect: Effect::Reverse(Basis::Total),
        when: &[],
        amount: Amount::Computed(refunded_with_tax),
        payment: "data.id",
        object: "data.id",
        key: Key::EventId,
        optional: false,
    },
];

/// The order's running refunded total, tax included, in cents.
fn refunded_with_tax(event: &Value) -> Result<(Value, Value, AmountFormat), String> {
    let data = event.get("data");
    let part = |name: &str, required: bool| match data.and_then(|d| d.get(name)) {
        None | Some(Value::Null) if !required => Ok(0),
        Some(Value::Number(n)) => n
            .as_i64()
            .filter(|cents| *cents >= 0)
            .ok_or_else(|| format!("data.{name} must be a non-negative integer of cents")),
        None | Some(Value::Null) => Err(format!("data.{name} is missing")),
        Some(_) => Err(format!("data.{name} must be an integer of cents")),
    };
    let total = part("refunded_amount", true)?
        .checked_add(part("refunded_tax_amount", false)?)
        .ok_or("the refunded total is beyond any amount")?;
    let currency = data
        .and_then(|d| d.get("currency"))
        .cloned()
        .unwrap_or(Value::Null);
    Ok((json!(total), currency, AmountFormat::Minor))
}

pub struct Polar;

impl Provider for Polar {
    fn kind(&self) -> &'static str {
        "polar"
    }

    fn default_tolerance_secs(&self) -> u64 {
        300
    }

    fn default_account_path(&self) -> &'static str {
        "data.metadata.account_id"
    }

    /// The key is the Standard Webhooks message id, one per event for every
    /// endpoint.
    fn global_ids(&self) -> bool {
        true
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    /// The legacy key (UTF-8 of the whole secret) first, then the Standard
    /// Webhooks one where the secret decodes as such.
    fn keys_from_secret(&self, secret: &Secret) -> Result<Vec<KeyBytes>, String> {
        let mut keys = vec![utf8_key(secret)?];
        if let Ok(standard) = StandardWebhooks.keys_from_secret(secret) {
            keys.extend(standard);
        }
        Ok(keys)
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
        let view = EventView {
            event_id: signed_event_id(verified)?,
            event_type: event_type_at(payload, "type")?,
            root: payload,
            sequence: sequence_of(payload.get("timestamp"), "timestamp"),
            explicit_sequence: false,
            occurred_at: body_time(payload).ok().flatten(),
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        sign_standard(key, unsigned)
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let at = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let event_type = sample.event_type.as_deref().unwrap_or(PAID);
        let refunded = if event_type == REFUNDED {
            sample.amount_minor
        } else {
            0
        };
        let order = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("ord_{}", sample.event_id));
        json!({
            "type": event_type,
            "timestamp": at,
            "data": {
                "id": order,
                "created_at": at,
                "modified_at": at,
                "status": if refunded > 0 { "refunded" } else { "paid" },
                "paid": true,
                "subtotal_amount": sample.amount_minor,
                "discount_amount": 0,
                "net_amount": sample.amount_minor,
                "tax_amount": 0,
                "total_amount": sample.amount_minor,
                "refunded_amount": refunded,
                "refunded_tax_amount": 0,
                "currency": sample.currency.to_ascii_lowercase(),
                "billing_reason": "purchase",
                "customer_id": "992fae2a-2a17-4b7a-8d9e-e287cf90131b",
                "product_id": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
                "metadata": {"account_id": sample.account_id},
            },
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
