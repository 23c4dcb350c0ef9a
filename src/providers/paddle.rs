//! Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>]`,
//! HMAC-SHA256 over `{ts}:{raw body}` keyed with the UTF-8 bytes of the
//! whole endpoint secret (`pdl_ntfset_...`), hex. Any `h1` may match (Paddle
//! may send several while a secret rotates); as in Paddle's SDK, a key other
//! than `ts` or `h1` makes the header malformed. The SDK's replay window is
//! 5 s each way, and so is the default here. Source: ../shared/providers.md
//! 2.4 and 6.2.
//!
//! `transaction.completed` credits `data.details.totals.grand_total` (a
//! string of minor units) to `data.custom_data.account_id`; the payment is
//! the transaction (`txn_...`). Refunds and chargebacks are adjustments
//! (`adjustment.created`, then `adjustment.updated` when Paddle approves
//! most refunds): each debits `data.totals.total` once, when its status is
//! `approved`, keyed by the adjustment id, and names its transaction in
//! `data.transaction_id`; adjustments carry no custom data, so the account
//! is the transaction's. Events are ordered by `occurred_at` to the
//! microsecond.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{check_tolerance, event_id_at, event_type_at, parse_unix_seconds, time_order};
use super::hmac_sha256;
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, ReconcileApi, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::KeyBytes;

const HEADER: &str = "Paddle-Signature";

const ADJUSTMENT: Rule = Rule {
    event_type: "adjustment.created",
    effect: Effect::Reverse(Basis::Each),
    when: &[
        Condition {
            path: "data.action",
            values: &["refund", "chargeback"],
        },
        Condition {
            path: "data.status",
            values: &["approved"],
        },
    ],
    amount: Amount::Path {
        amount: "data.totals.total",
        currency: "data.currency_code",
        format: AmountFormat::MinorString,
    },
    payment: "data.transaction_id",
    object: "data.id",
    key: Key::Field {
        prefix: "adjustment",
        path: "data.id",
    },
    optional: false,
};

static RULES: &[Rule] = &[
    Rule {
        event_type: "transaction.completed",
        effect: Effect::Credit,
        when: &[],
        amount: Amount::Path {
            amount: "data.details.totals.grand_total",
            currency: "data.currency_code",
            format: AmountFormat::MinorString,
        },
        payment: "data.id",
        object: "data.id",
        key: Key::EventId,
        optional: false,
    },
    ADJUSTMENT,
    Rule {
        event_type: "adjustment.updated",
        ..ADJUSTMENT
    },
];

pub struct Paddle;

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
    let mut saw_h1 = false;
    for item in value.split(';') {
        let (key, val) = item
            .trim()
            .split_once('=')
            .ok_or(malformed("expected key=value items separated by ;"))?;
        match key {
            "ts" if timestamp_text.is_some() => return Err(malformed("more than one ts= item")),
            "ts" => timestamp_text = Some(val),
            "h1" => {
                saw_h1 = true;
                // A value that is not hex cannot match; the others still may
                // (Paddle's own test sends `h1=dummy` beside the real one).
                signatures.extend(hex::decode(val).ok());
            }
            _ => return Err(malformed("only ts= and h1= items are allowed")),
        }
    }
    let timestamp_text = timestamp_text.ok_or(malformed("no ts= timestamp"))?;
    let timestamp =
        parse_unix_seconds(timestamp_text).ok_or(malformed("ts= is not a unix timestamp"))?;
    if !saw_h1 {
        return Err(malformed("no h1= signature"));
    }
    Ok(SignatureHeader {
        timestamp_text,
        timestamp,
        signatures,
    })
}

impl Provider for Paddle {
    fn kind(&self) -> &'static str {
        "paddle"
    }

    fn default_tolerance_secs(&self) -> u64 {
        5
    }

    fn default_account_path(&self) -> &'static str {
        "data.custom_data.account_id"
    }

    /// Paddle ids (`evt_`, `adj_`) are Paddle-wide, and one event keeps its
    /// `event_id` on every notification destination (`notification_id` differs).
    fn global_ids(&self) -> bool {
        true
    }

    /// `GET /events` (reconcile/paddle.rs); Paddle keeps events 90 days.
    fn reconcile_api(&self) -> Option<ReconcileApi> {
        Some(ReconcileApi {
            base: Some("https://api.paddle.com"),
            retention_days: 90,
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
        let signed = [header.timestamp_text.as_bytes(), b":", delivery.body];
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
        let (sequence, occurred) = time_order(payload.get("occurred_at"), "occurred_at");
        let view = EventView {
            event_id: event_id_at(payload, "event_id")?,
            event_type: event_type_at(payload, "event_type")?,
            root: payload,
            sequence,
            explicit_sequence: false,
            occurred_at: occurred,
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let ts = unsigned.timestamp.to_string();
        let tag = hmac_sha256::sign(key, &[ts.as_bytes(), b":", &unsigned.body]);
        SignedParts {
            headers: vec![(HEADER, format!("ts={ts};h1={}", hex::encode(tag)))],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let occurred = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let suffix = sample.event_id.trim_start_matches("evt_");
        let transaction = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("txn_{suffix}"));
        let amount = sample.amount_minor.to_string();
        let event_type = sample
            .event_type
            .as_deref()
            .unwrap_or("transaction.completed");
        let data = if event_type.starts_with("adjustment.") {
            json!({
                "id": format!("adj_{suffix}"),
                "action": "refund",
                "type": "partial",
                "transaction_id": transaction,
                "status": "approved",
                "reason": "requested by customer",
                "currency_code": sample.currency,
                "totals": {"subtotal": amount, "tax": "0", "total": amount, "fee": "0",
                    "earnings": amount, "currency_code": sample.currency},
            })
        } else {
            json!({
                "id": transaction,
                "status": "completed",
                "currency_code": sample.currency,
                "custom_data": {"account_id": sample.account_id},
                "details": {"totals": {"subtotal": amount, "tax": "0", "total": amount,
                    "grand_total": amount, "currency_code": sample.currency}},
            })
        };
        json!({
            "event_id": sample.event_id,
            "event_type": event_type,
            "occurred_at": occurred,
            "notification_id": format!("ntf_{suffix}"),
            "data": data,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
