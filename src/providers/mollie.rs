//! Mollie next-gen webhooks: `X-Mollie-Signature: sha256=<hex>` is
//! HMAC-SHA256 over the raw body, keyed with the UTF-8 bytes of the
//! webhook's signing secret; the `sha256=` prefix is optional, as in
//! Mollie's PHP SDK. While a secret rotates Mollie repeats the header; a
//! proxy may fold the repeats into one comma-separated value, and any item
//! may match. No time is signed. Classic Mollie webhooks (`id=tr_...`,
//! unsigned) are not this kind. Source: ../shared/providers.md 2.14 and 6.9.
//!
//! The body is an event envelope, `{"id": "event_...", "type", "entityId",
//! "createdAt", "_embedded": {<resource type>: <snapshot>}}`: the delivered
//! envelope keys the snapshot by resource type (Mollie's PHP SDK fixtures
//! show `_embedded["payment-link"]`), so a payment event is read at
//! `_embedded.payment` and a refund event at `_embedded.refund` (assumed by
//! analogy: no delivered sample of either was found). `payment.paid`
//! credits the payment's `amount.value` (a decimal string in major units)
//! to its `metadata.account_id`, keyed `payment.paid:{tr_...}`;
//! `refund.refunded` debits the refund's amount from its `paymentId`, keyed
//! `refund:{re_...}`. A "simple" payload has no snapshot: its events are held
//! with the reason. Events are ordered by `createdAt`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{event_id_at, event_type_at, time_order};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, Currency, NormalisedEvent, format_minor};
use crate::secret::KeyBytes;

const HEADER: &str = "X-Mollie-Signature";
/// One hex tag, or several folded by a proxy (items that are not hex are
/// skipped); a header with none is malformed.
const TAG: HeaderTag = HeaderTag::new(HEADER, Encoding::Hex, "expected sha256=<hex>")
    .with_prefix("sha256=")
    .folded();

static RULES: &[Rule] = &[
    Rule {
        event_type: "payment.paid",
        effect: Effect::Credit,
        when: &[],
        amount: Amount::Path {
            amount: "_embedded.payment.amount.value",
            currency: "_embedded.payment.amount.currency",
            format: AmountFormat::Decimal,
        },
        payment: "entityId",
        object: "entityId",
        key: Key::Field {
            prefix: "payment.paid",
            path: "entityId",
        },
        optional: false,
    },
    Rule {
        event_type: "refund.refunded",
        effect: Effect::Reverse(Basis::Each),
        when: &[],
        amount: Amount::Path {
            amount: "_embedded.refund.amount.value",
            currency: "_embedded.refund.amount.currency",
            format: AmountFormat::Decimal,
        },
        payment: "_embedded.refund.paymentId",
        object: "entityId",
        key: Key::Field {
            prefix: "refund",
            path: "entityId",
        },
        optional: false,
    },
];

pub struct Mollie;

impl Provider for Mollie {
    fn kind(&self) -> &'static str {
        "mollie"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "_embedded.payment.metadata.account_id"
    }

    /// Mollie ids (`tr_`, `re_`, next-gen event ids) are Mollie-wide.
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
        let (sequence, created) = time_order(payload.get("createdAt"), "createdAt");
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
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let suffix = sample.event_id.trim_start_matches("event_");
        let payment = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("tr_{suffix}"));
        let exponent = Currency::parse(&sample.currency).map_or(2, |c| c.exponent());
        let amount = json!({
            "currency": sample.currency,
            "value": format_minor(sample.amount_minor, exponent),
        });
        let event_type = sample.event_type.as_deref().unwrap_or("payment.paid");
        let links = |path: &str| {
            json!({"self": {"href": format!("https://api.mollie.com/v2/{path}"),
            "type": "application/hal+json"}})
        };
        let (resource, entity, snapshot) = if event_type.starts_with("refund.") {
            let refund = format!("re_{suffix}");
            let snapshot = json!({
                "resource": "refund",
                "id": refund,
                "mode": "live",
                "amount": amount,
                "description": "Refund",
                "metadata": null,
                "status": event_type.trim_start_matches("refund."),
                "paymentId": payment,
                "createdAt": time,
                "_links": links(&format!("payments/{payment}/refunds/{refund}")),
            });
            ("refund", refund, snapshot)
        } else {
            let snapshot = json!({
                "resource": "payment",
                "id": payment,
                "mode": "live",
                "amount": amount,
                "description": "Top-up",
                "method": "ideal",
                "metadata": {"account_id": sample.account_id},
                "status": event_type.trim_start_matches("payment."),
                "createdAt": time,
                "paidAt": time,
                "profileId": "pfl_QkEhN94Ba",
                "sequenceType": "oneoff",
                "_links": links(&format!("payments/{payment}")),
            });
            ("payment", payment, snapshot)
        };
        json!({
            "resource": "event",
            "id": sample.event_id,
            "type": event_type,
            "entityId": entity,
            "createdAt": time,
            "_embedded": {resource: snapshot},
            "_links": links(&format!("events/{}", sample.event_id)),
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
