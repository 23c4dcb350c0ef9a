//! An in-house sender of hookledger's own format (`standard-webhooks`),
//! whose `balance.credit` names its payment at `payment_path` and whose
//! `balance.debit` is a refund of the payment at `reverses_path` (the same
//! field, as in README's example).

use serde_json::{Value, json};

use crate::backend::Backend;
use crate::kinds::{Kind, header_id};

pub const LEDGER: Kind = Kind {
    source: "sales-ledger",
    kind: "standard-webhooks",
    secret: "whsec_aW4taG91c2UgbGVkZ2VyIHJlZnVuZHMga2V5",
    old_secret: "whsec_dGhlIGxlZGdlcidzIHByZXZpb3VzIGtleSAwMQ==",
    config: r#"
[[sources]]
name = "sales-ledger"
kind = "standard-webhooks"
secrets = ["whsec_aW4taG91c2UgbGVkZ2VyIHJlZnVuZHMga2V5",
    "whsec_dGhlIGxlZGdlcidzIHByZXZpb3VzIGtleSAwMQ=="]
payment_path = "data.payment_id"
reverses_path = "data.payment_id"
"#,
    payment,
    refund,
    key_of,
};

/// The event id is the signed `webhook-id`, derived from the body
/// ([`header_id`]): `event` keeps two events' bodies apart.
fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    json!({"type": "balance.credit", "data": {"event": event_id, "account_id": "acct_1",
        "amount_minor": amount, "currency": "USD", "payment_id": payment}})
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    json!({"type": "balance.debit", "data": {"event": event_id, "refund_id": refund_id,
        "amount_minor": amount, "currency": "USD", "payment_id": payment}})
}

fn key_of(body: &Value) -> String {
    header_id(body)
}

async fn partial_refunds_add_up_to_the_payment_and_no_further(backend: Backend) {
    super::partial_refunds_add_up_to_the_payment_and_no_further(backend, &LEDGER).await;
}

async fn two_refunds_racing_never_take_more_than_the_payment(backend: Backend) {
    super::two_refunds_racing_never_take_more_than_the_payment(backend, &LEDGER).await;
}

async fn a_refund_naming_no_payment_is_rejected(backend: Backend) {
    let mut nameless = refund("e2", "rf_1", "pay_1", 300);
    nameless["data"]["payment_id"] = Value::Null;
    super::a_refund_naming_no_payment_is_rejected(backend, &LEDGER, nameless, "data.payment_id")
        .await;
}

crate::kind_scenarios!(
    LEDGER;
    partial_refunds_add_up_to_the_payment_and_no_further,
    two_refunds_racing_never_take_more_than_the_payment,
    a_refund_naming_no_payment_is_rejected,
);
