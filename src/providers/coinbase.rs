//! Coinbase Commerce: `X-CC-Webhook-Signature` is hex HMAC-SHA256 over the
//! raw body, keyed with the UTF-8 bytes of the endpoint's shared secret. No
//! time is signed. Source: ../shared/providers.md 2.13 and 6.13.
//!
//! The body wraps the event: `{"id", "attempt_number", "event": {"id",
//! "type", "created_at", "data": <charge>}}`. `charge:confirmed` (the charge
//! is final, not merely seen on chain as with `charge:pending`) credits
//! `pricing.local.amount`, a decimal string in major units, to the charge's
//! `metadata.account_id`, keyed by the charge (`charge:{id}`): a charge
//! credits once. Coinbase has no refund or dispute event (crypto refunds
//! are manual), so nothing debits. Events are ordered by `event.created_at`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{event_id_at, event_type_at, lookup, time_order};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Currency, NormalisedEvent, format_minor};
use crate::secret::KeyBytes;

const HEADER: &str = "X-CC-Webhook-Signature";
const TAG: HeaderTag = HeaderTag::new(HEADER, Encoding::Hex, "not hex");

static RULES: &[Rule] = &[Rule {
    event_type: "charge:confirmed",
    effect: Effect::Credit,
    when: &[],
    amount: Amount::Path {
        amount: "event.data.pricing.local.amount",
        currency: "event.data.pricing.local.currency",
        format: AmountFormat::Decimal,
    },
    payment: "event.data.id",
    object: "event.data.id",
    key: Key::Field {
        prefix: "charge",
        path: "event.data.id",
    },
    optional: false,
}];

pub struct Coinbase;

impl Provider for Coinbase {
    fn kind(&self) -> &'static str {
        "coinbase"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "event.data.metadata.account_id"
    }

    /// Keys are Coinbase Commerce charge ids and event ids (UUIDs).
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
        let (sequence, created) =
            time_order(lookup(payload, "event.created_at"), "event.created_at");
        let view = EventView {
            event_id: event_id_at(payload, "event.id")?,
            event_type: event_type_at(payload, "event.type")?,
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
        let seconds = sample.sequence.unwrap_or(sample.timestamp);
        let time = |offset: i64| {
            DateTime::from_timestamp(seconds.saturating_add(offset), 0)
                .unwrap_or_default()
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        };
        let exponent = Currency::parse(&sample.currency).map_or(2, |c| c.exponent());
        let amount = format_minor(sample.amount_minor, exponent);
        let charge = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("charge-{}", sample.event_id));
        let event_type = sample.event_type.as_deref().unwrap_or("charge:confirmed");
        json!({
            "id": format!("delivery-{}", sample.event_id),
            "scheduled_for": time(60),
            "attempt_number": 1,
            "event": {
                "id": sample.event_id,
                "resource": "event",
                "type": event_type,
                "api_version": "2018-03-22",
                "created_at": time(0),
                "data": {
                    "id": charge,
                    "resource": "charge",
                    "code": "66BEOV2A",
                    "name": "Top-up",
                    "pricing_type": "fixed_price",
                    "pricing": {
                        "local": {"amount": amount, "currency": sample.currency},
                    },
                    "metadata": {"account_id": sample.account_id},
                    "timeline": [
                        {"time": time(-600), "status": "NEW"},
                        {"time": time(-300), "status": "PENDING"},
                        {"time": time(0), "status": "COMPLETED"},
                    ],
                    "payments": [],
                    "created_at": time(-600),
                    "expires_at": time(3000),
                    "confirmed_at": time(0),
                },
            },
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
