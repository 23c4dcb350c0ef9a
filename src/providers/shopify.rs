//! Shopify: `X-Shopify-Hmac-Sha256`, base64 HMAC-SHA256 over the raw body
//! keyed with the UTF-8 bytes of the app's client secret. Nothing else is
//! signed: no time (so no replay window), and neither the topic nor the ids.
//! One signature per delivery; after a secret rotation Shopify may sign
//! with the old secret for up to an hour, so every configured secret is
//! tried. Source: ../shared/providers.md 2.5 and 6.3.
//!
//! The unsigned `X-Shopify-Topic` is only a hint. It picks the rule, and
//! the rule then requires the signed body to have that topic's shape:
//! `orders/paid` credits only an order whose `financial_status` is `paid`,
//! `refunds/create` debits only a refund (a body with `order_id` and at
//! least one transaction). A forged topic can make a body ignored, never a
//! credit or a refund it is not. `X-Shopify-Webhook-Id` and
//! `X-Shopify-Event-Id` are unsigned too and are not used: every intent key
//! comes from the signed body, so a replay under new id headers is a
//! duplicate. A paid order is keyed `orders/paid:{order id}` (one credit per
//! order, whichever delivery brings it), a refund `refund:{refund id}`;
//! any other event `{topic}:{id}:{16 hex of sha256(body)}`, which can never
//! equal a money key, so an unpaid order seen first does not hold the key
//! of its payment.
//!
//! The credit is the order's `total_price_set.presentment_money` (a decimal
//! string in major units), the money the customer paid: refunds are made in
//! the presentment currency, which in a multi-currency shop differs from
//! the shop currency of `total_price`, so a refund always matches its
//! order's currency. A refund debits the sum of its `transactions[]` whose
//! `kind` is `refund` and `status` is `success` (per refund) from its
//! `order_id`; a refund without a successful transaction is rejected for an
//! operator (a pending one may still move money). The account is the
//! order's note attribute `account_id`; a refund carries none, so its
//! order's is used. Events are ordered by the body's `updated_at` (orders)
//! or `processed_at` (refunds), to the microsecond.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::delivery::Delivery;
use super::fields::{body_digest_id, sequence_of, time_of};
use super::header_tag::{Encoding, HeaderTag};
use super::mapping::{MapError, Mapping};
use super::provider::{Provider, ReconcileApi, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, Currency, NormalisedEvent, PositiveAmount, format_minor};
use crate::secret::KeyBytes;

const HMAC_HEADER: &str = "X-Shopify-Hmac-Sha256";
const TAG: HeaderTag = HeaderTag::new(HMAC_HEADER, Encoding::Base64, "not base64");
const TOPIC_HEADER: &str = "X-Shopify-Topic";
const PAID: &str = "orders/paid";
const REFUND: &str = "refunds/create";

static RULES: &[Rule] = &[
    Rule {
        event_type: PAID,
        effect: Effect::Credit,
        when: &[Condition {
            path: "financial_status",
            values: &["paid"],
        }],
        amount: Amount::Path {
            amount: "total_price_set.presentment_money.amount",
            currency: "total_price_set.presentment_money.currency_code",
            format: AmountFormat::Decimal,
        },
        payment: "id",
        object: "id",
        key: Key::Field {
            prefix: PAID,
            path: "id",
        },
        optional: false,
    },
    Rule {
        event_type: REFUND,
        effect: Effect::Reverse(Basis::Each),
        when: &[
            Condition {
                path: "order_id",
                values: &[],
            },
            // A refund that only restocks has no transaction: no money.
            Condition {
                path: "transactions.0",
                values: &[],
            },
        ],
        amount: Amount::Computed(refunded),
        payment: "order_id",
        object: "id",
        key: Key::Field {
            prefix: "refund",
            path: "id",
        },
        optional: false,
    },
];

/// A refund's money: the sum of its successful refund transactions
/// (decimal strings, major units), in minor units of their one currency.
fn refunded(refund: &Value) -> Result<(Value, Value, AmountFormat), String> {
    let transactions = refund
        .get("transactions")
        .and_then(Value::as_array)
        .ok_or("transactions must be an array")?;
    let mut currency: Option<Currency> = None;
    let mut total: i64 = 0;
    let succeeded = transactions.iter().filter(|t| {
        t.get("kind").and_then(Value::as_str) == Some("refund")
            && t.get("status").and_then(Value::as_str) == Some("success")
    });
    for transaction in succeeded {
        let code = transaction
            .get("currency")
            .and_then(Value::as_str)
            .ok_or("a refund transaction has no currency")?;
        let this = Currency::parse(code).map_err(|e| e.to_string())?;
        if let Some(first) = currency
            && first != this
        {
            return Err(format!(
                "refund transactions are in both {first} and {this}"
            ));
        }
        currency = Some(this);
        let amount =
            PositiveAmount::from_json_as(transaction.get("amount"), AmountFormat::Decimal, this)
                .map_err(|e| e.to_string())?;
        total = total
            .checked_add(amount.minor())
            .ok_or("the refund's transactions add up beyond any amount")?;
    }
    let currency = currency.ok_or(
        "the refund has no successful refund transaction (pending or failed): nothing to debit",
    )?;
    Ok((json!(total), json!(currency.code()), AmountFormat::Minor))
}

pub struct Shopify;

/// The ordering time: an order's `updated_at`, a refund's `processed_at`.
fn sequence_field(payload: &Value) -> (&'static str, Option<&Value>) {
    ["updated_at", "processed_at", "created_at"]
        .into_iter()
        .map(|name| (name, payload.get(name)))
        .find(|(_, value)| value.is_some_and(|v| !v.is_null()))
        .unwrap_or(("updated_at", None))
}

/// The topic Shopify sends a body under, by its shape (for signing
/// samples: the body itself does not name it).
fn topic_of(body: &[u8]) -> &'static str {
    let Ok(payload) = serde_json::from_slice::<Value>(body) else {
        return PAID;
    };
    let has = |name: &str| payload.get(name).is_some_and(|v| !v.is_null());
    if has("order_id") && has("transactions") {
        REFUND
    } else if payload.get("financial_status").and_then(Value::as_str) == Some("paid") {
        PAID
    } else {
        "orders/updated"
    }
}

/// A Shopify-style numeric id (orders and refunds have integer ids),
/// stable for a sample's event id.
fn numeric_id(seed: &str) -> u64 {
    let digest = Sha256::digest(seed.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    // Thirteen digits, like Shopify's ids today.
    1_000_000_000_000 + u64::from_be_bytes(bytes) % 9_000_000_000_000
}

/// A payment given as digits is Shopify's integer order id.
fn id_value(id: &str) -> Value {
    id.parse::<u64>().map_or_else(|_| json!(id), |n| json!(n))
}

impl Provider for Shopify {
    fn kind(&self) -> &'static str {
        "shopify"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    /// The shop's orders (reconcile/shopify.rs); REST lists the last 60
    /// days of orders to an app without `read_all_orders`.
    fn reconcile_api(&self) -> Option<ReconcileApi> {
        Some(ReconcileApi {
            base: None,
            retention_days: 60,
            client_credentials: false,
        })
    }

    fn default_account_path(&self) -> &'static str {
        "note_attributes.[name=account_id].value"
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
        // Unsigned: it selects a rule, whose conditions check the body.
        let topic = delivery.optional(TOPIC_HEADER).unwrap_or("");
        if topic.len() > 255 {
            return Err(MapError::BadEventType);
        }
        let (path, time) = sequence_field(payload);
        let view = EventView {
            event_id: body_digest_id(topic, payload.get("id"), delivery.body)?,
            event_type: topic.to_owned(),
            root: payload,
            sequence: sequence_of(time, path),
            explicit_sequence: false,
            occurred_at: time_of(time),
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let triggered = DateTime::from_timestamp(unsigned.timestamp, 0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Millis, true);
        SignedParts {
            headers: vec![
                TAG.sign(key, &[&unsigned.body]),
                (TOPIC_HEADER, topic_of(&unsigned.body).to_owned()),
                ("X-Shopify-API-Version", "2025-10".to_owned()),
                // A sample has one id; Shopify's event and delivery ids differ.
                ("X-Shopify-Webhook-Id", unsigned.event_id.to_owned()),
                ("X-Shopify-Event-Id", unsigned.event_id.to_owned()),
                ("X-Shopify-Triggered-At", triggered),
            ],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let at = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let exponent = Currency::parse(&sample.currency).map_or(2, |c| c.exponent());
        let amount = format_minor(sample.amount_minor, exponent);
        let order = sample.payment.as_deref().map_or_else(
            || json!(numeric_id(&format!("order:{}", sample.event_id))),
            id_value,
        );
        let money = json!({"amount": amount, "currency_code": sample.currency});
        let body = if sample.event_type.as_deref() == Some(REFUND) {
            json!({
                "id": numeric_id(&format!("refund:{}", sample.event_id)),
                "order_id": order,
                "created_at": at,
                "processed_at": at,
                "note": "requested by customer",
                "restock": false,
                "refund_line_items": [],
                "order_adjustments": [],
                "transactions": [{
                    "id": numeric_id(&format!("transaction:{}", sample.event_id)),
                    "order_id": order,
                    "kind": "refund",
                    "gateway": "shopify_payments",
                    "status": "success",
                    "amount": amount,
                    "currency": sample.currency,
                    "parent_id": numeric_id(&format!("sale:{}", sample.event_id)),
                    "processed_at": at,
                    "test": false,
                }],
            })
        } else {
            json!({
                "id": order,
                "name": "#1001",
                "order_number": 1001,
                "created_at": at,
                "updated_at": at,
                "processed_at": at,
                "currency": sample.currency,
                "presentment_currency": sample.currency,
                "financial_status": "paid",
                "total_price": amount,
                "subtotal_price": amount,
                "total_tax": format_minor(0, exponent),
                "total_price_set": {"shop_money": money, "presentment_money": money},
                "note_attributes": [{"name": "account_id", "value": sample.account_id}],
                "test": false,
            })
        };
        body.to_string().into_bytes()
    }
}

#[cfg(test)]
mod tests;
