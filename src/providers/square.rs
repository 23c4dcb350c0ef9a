//! Square: `x-square-hmacsha256-signature` is base64 HMAC-SHA256 over the
//! subscription's notification URL followed directly by the raw body, keyed
//! with the UTF-8 bytes of the subscription's signature key. The URL is the
//! one configured per source (`notification_url`, required for this kind),
//! never one rebuilt from the request: behind a proxy the two differ, and
//! Square signs the URL byte for byte as registered (a trailing `/` breaks
//! it). No time is signed. Source: ../shared/providers.md 2.6 and 6.4.
//!
//! `payment.created` / `payment.updated` credit `data.object.payment.
//! amount_money` (minor units) to `data.object.payment.reference_id` once
//! the payment is `COMPLETED`; the intent key is `payment:{payment id}`, so
//! the later `payment.updated` events of a completed payment (a refund
//! changes its `refunded_money`, say) never credit it again. `refund.created`
//! / `refund.updated` debit a refund once it is `COMPLETED`, keyed by the
//! refund id; a refund carries no reference of its own, so the account is
//! the payment's (`payment_id`). Events are ordered by their `created_at`
//! (Square writes nanoseconds; microseconds are kept).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{event_id_at, event_type_at, time_order};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{
    KindSettings, Provider, ReconcileApi, Sample, SettingsError, SignedParts, Unsigned,
    VerifyPolicy,
};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "x-square-hmacsha256-signature";
const TAG: HeaderTag = HeaderTag::new(HEADER, Encoding::Base64, "not base64");

const PAYMENT: Rule = Rule {
    event_type: "payment.updated",
    effect: Effect::Credit,
    when: &[Condition {
        path: "data.object.payment.status",
        values: &["COMPLETED"],
    }],
    amount: Amount::Path {
        amount: "data.object.payment.amount_money.amount",
        currency: "data.object.payment.amount_money.currency",
        format: AmountFormat::Minor,
    },
    payment: "data.object.payment.id",
    object: "data.object.payment.id",
    key: Key::Field {
        prefix: "payment",
        path: "data.object.payment.id",
    },
    optional: false,
};

const REFUND: Rule = Rule {
    event_type: "refund.updated",
    effect: Effect::Reverse(Basis::Each),
    when: &[Condition {
        path: "data.object.refund.status",
        values: &["COMPLETED"],
    }],
    amount: Amount::Path {
        amount: "data.object.refund.amount_money.amount",
        currency: "data.object.refund.amount_money.currency",
        format: AmountFormat::Minor,
    },
    payment: "data.object.refund.payment_id",
    object: "data.object.refund.id",
    key: Key::Field {
        prefix: "refund",
        path: "data.object.refund.id",
    },
    optional: false,
};

static RULES: &[Rule] = &[
    PAYMENT,
    Rule {
        event_type: "payment.created",
        ..PAYMENT
    },
    REFUND,
    Rule {
        event_type: "refund.created",
        ..REFUND
    },
];

pub struct Square;

impl Provider for Square {
    fn kind(&self) -> &'static str {
        "square"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "data.object.payment.reference_id"
    }

    /// Square's `event_id` is a UUID, the idempotency value its docs name.
    fn global_ids(&self) -> bool {
        true
    }

    /// `POST /v2/events` (reconcile/square.rs); Square keeps events 28 days.
    fn reconcile_api(&self) -> Option<ReconcileApi> {
        Some(ReconcileApi {
            base: Some("https://connect.squareup.com"),
            retention_days: 28,
            client_credentials: false,
        })
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    fn own_keys(&self) -> &'static [&'static str] {
        &["notification_url"]
    }

    fn check_settings(&self, settings: &KindSettings) -> Result<(), SettingsError> {
        let refuse = |message: &str| SettingsError {
            key: "notification_url",
            message: message.to_owned(),
        };
        let url = settings.notification_url.as_deref().ok_or_else(|| {
            refuse(
                "kind square signs the notification URL: set notification_url to the URL \
                 exactly as registered in the Square subscription",
            )
        })?;
        if !(url.starts_with("https://") || url.starts_with("http://")) || url.trim() != url {
            return Err(refuse(
                "must be the absolute URL registered with Square, e.g. \
                 \"https://hooks.example.com/webhooks/square\", with no surrounding spaces",
            ));
        }
        Ok(())
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        policy: &VerifyPolicy<'_>,
        _now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let presented = TAG.presented(delivery)?;
        // Config refuses a square source without the URL; without it no
        // signature Square made can match.
        let url = policy
            .settings
            .notification_url
            .as_deref()
            .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        TAG.matching(keys, &[url.as_bytes(), delivery.body], &presented)
    }

    fn normalise(
        &self,
        _verified: &Verified,
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let (sequence, created) = time_order(payload.get("created_at"), "created_at");
        let view = EventView {
            event_id: event_id_at(payload, "event_id")?,
            event_type: event_type_at(payload, "type")?,
            root: payload,
            sequence,
            explicit_sequence: false,
            occurred_at: created,
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let url = unsigned.settings.notification_url.as_deref().unwrap_or("");
        SignedParts {
            headers: vec![TAG.sign(key, &[url.as_bytes(), &unsigned.body])],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let time = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Micros, true);
        let suffix = sample.event_id.trim_start_matches("msg_");
        let payment = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("sq{suffix}"));
        let money = json!({"amount": sample.amount_minor, "currency": sample.currency});
        let event_type = sample.event_type.as_deref().unwrap_or("payment.updated");
        let (object_type, id, object) = if event_type.starts_with("refund.") {
            let refund = format!("{payment}_{suffix}");
            let object = json!({"refund": {
                "id": refund,
                "status": "COMPLETED",
                "amount_money": money,
                "payment_id": payment,
                "location_id": "L88917AVBK2S5",
                "reason": "Requested by customer",
                "created_at": time,
                "updated_at": time,
            }});
            ("refund", refund, object)
        } else {
            let object = json!({"payment": {
                "id": payment,
                "status": "COMPLETED",
                "amount_money": money,
                "total_money": money,
                "approved_money": money,
                "source_type": "CARD",
                "location_id": "L88917AVBK2S5",
                "reference_id": sample.account_id,
                "created_at": time,
                "updated_at": time,
                "version_token": "zpCBiO0YgSg5cCEqjUxHQGEuZA9SJBdp1WwI",
            }});
            ("payment", payment, object)
        };
        json!({
            "merchant_id": "ML82H4QPKMGXY",
            "type": event_type,
            "event_id": sample.event_id,
            "created_at": time,
            "data": {"type": object_type, "id": id, "object": object},
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
