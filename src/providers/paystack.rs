//! Paystack: `x-paystack-signature` is hex HMAC-SHA512 over the raw body,
//! keyed with the UTF-8 bytes of the account's secret API key (`sk_live_...`
//! / `sk_test_...`). No time is signed. Source: ../shared/providers.md 2.10
//! and 6.7; payload shapes from Paystack's documentation samples
//! (PaystackOSS/doc-code-snippets `dist/doc/payments/webhooks/events.js`,
//! `dist/doc/payments/refunds/events.js`).
//!
//! `charge.success` credits `data.amount` (integer subunits) to
//! `data.metadata.account_id`, keyed `charge.success:{data.reference}`.
//! `refund.processed` debits the refund's `data.amount` from the
//! transaction `data.transaction_reference`, keyed by the refund's
//! `refund:{data.refund_reference}` (the documented refund events carry no
//! `id`); Paystack writes that amount as a string in some refund samples and
//! as an integer in others, and both are read.
//!
//! Paystack has no event id: an event that moves no money is stored under
//! `event:{event}:{data.id or data.reference}:{body digest}`, a form no
//! money key can take. Charges are ordered by `data.paid_at`;
//! the documented refund events carry no time at all, so an event without
//! `paid_at` is ordered by when it arrived: `verify` records the arrival
//! time (not a signed time; nothing is checked against it).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::delivery::Delivery;
use super::fields::{body_digest_id, event_type_at, lookup, time_order};
use super::header_tag::{Encoding, HeaderTag};
use super::hmac_sha256::HmacSha512;
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, EventId, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "x-paystack-signature";
const TAG: HeaderTag<HmacSha512> = HeaderTag::new(HEADER, Encoding::Hex, "not hex");

static RULES: &[Rule] = &[
    Rule {
        event_type: "charge.success",
        effect: Effect::Credit,
        when: &[Condition {
            path: "data.status",
            values: &["success"],
        }],
        amount: Amount::Path {
            amount: "data.amount",
            currency: "data.currency",
            format: AmountFormat::Minor,
        },
        payment: "data.reference",
        object: "data.reference",
        key: Key::Field {
            prefix: "charge.success",
            path: "data.reference",
        },
        optional: false,
    },
    Rule {
        event_type: "refund.processed",
        effect: Effect::Reverse(Basis::Each),
        when: &[Condition {
            path: "data.status",
            values: &["processed"],
        }],
        amount: Amount::Computed(refund_amount),
        payment: "data.transaction_reference",
        object: "data.refund_reference",
        key: Key::Field {
            prefix: "refund",
            path: "data.refund_reference",
        },
        optional: false,
    },
];

/// A refund's subunits, as a JSON integer or a string of digits: Paystack's
/// documented refund events use both.
fn refund_amount(root: &Value) -> Result<(Value, Value, AmountFormat), String> {
    let amount = lookup(root, "data.amount").cloned().unwrap_or(Value::Null);
    let currency = lookup(root, "data.currency")
        .cloned()
        .unwrap_or(Value::Null);
    let format = if amount.is_string() {
        AmountFormat::MinorString
    } else {
        AmountFormat::Minor
    };
    Ok((amount, currency, format))
}

/// The key of an event that moves no money: `event:{type}:{data.id or
/// data.reference}:{digest of the body}` (see `fields::body_digest_id`); no
/// money key starts with `event:`, and the digest keeps a refund's pending
/// event (no id, no reference) or a second dispute reminder from passing as
/// a redelivery.
fn event_key(event_type: &str, payload: &Value, body: &[u8]) -> Result<EventId, MapError> {
    let resource = ["data.id", "data.reference"]
        .into_iter()
        .filter_map(|path| lookup(payload, path))
        .find(|value| super::fields::id_text(Some(value)).is_some());
    body_digest_id(&format!("event:{event_type}"), resource, body)
}

pub struct Paystack;

impl Provider for Paystack {
    fn kind(&self) -> &'static str {
        "paystack"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "data.metadata.account_id"
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
        let paid_at = lookup(payload, "data.paid_at").filter(|v| !v.is_null());
        let (sequence, occurred_at) = match paid_at {
            Some(time) => {
                let (sequence, time) = time_order(Some(time), "data.paid_at");
                // It is there: the reason says only that it cannot be read.
                let unreadable = |_| "data.paid_at is not an RFC 3339 time".to_owned();
                (sequence.map_err(unreadable), time)
            }
            // Refund events carry no time at all: they are ordered by arrival.
            None => (Ok(delivery.received_at.timestamp_micros()), None),
        };
        let view = EventView {
            event_id: event_key(&event_type, payload, delivery.body)?,
            event_type,
            root: payload,
            sequence,
            explicit_sequence: false,
            occurred_at,
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
        let seconds = sample.sequence.unwrap_or(sample.timestamp);
        let time = |offset: i64| {
            DateTime::from_timestamp(seconds.saturating_add(offset), 0)
                .unwrap_or_default()
                .to_rfc3339_opts(SecondsFormat::Millis, true)
        };
        let digest = hex::encode(Sha256::digest(sample.event_id.as_bytes()));
        let transaction_id = u64::from_str_radix(&digest[..8], 16).unwrap_or(302_961);
        let reference = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("T{transaction_id}"));
        let customer = json!({"first_name": "Ada", "last_name": "Obi",
            "email": "ada@example.com"});
        let event_type = sample.event_type.as_deref().unwrap_or("charge.success");
        let data = if event_type.starts_with("refund.") {
            json!({
                "status": event_type.trim_start_matches("refund."),
                "transaction_reference": reference,
                "refund_reference": (transaction_id + 1).to_string(),
                "amount": sample.amount_minor.to_string(),
                "currency": sample.currency,
                "processor": "mpgs_zen",
                "customer": customer,
                "integration": 412_829,
                "domain": "live",
            })
        } else {
            json!({
                "id": transaction_id,
                "domain": "live",
                "status": "success",
                "reference": reference,
                "amount": sample.amount_minor,
                "message": null,
                "gateway_response": "Approved by Financial Institution",
                "paid_at": time(0),
                "created_at": time(-20),
                "channel": "card",
                "currency": sample.currency,
                "metadata": {"account_id": sample.account_id},
                "fees": null,
                "customer": {"id": 68_324, "email": "ada@example.com",
                    "customer_code": "CUS_qo38as2hpsgk2r0", "metadata": null,
                    "risk_action": "default"},
                "authorization": {"authorization_code": "AUTH_f5rnfq9p", "bin": "539999",
                    "last4": "8877", "channel": "card", "card_type": "mastercard DEBIT",
                    "country_code": "NG", "brand": "mastercard", "reusable": true},
                "plan": {},
            })
        };
        json!({"event": event_type, "data": data})
            .to_string()
            .into_bytes()
    }
}

#[cfg(test)]
mod tests;
