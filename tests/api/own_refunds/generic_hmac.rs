//! An in-house sender signing with an HMAC (`generic-hmac`), whose listed
//! debit type is a refund of the sale at `reverses_path`; its credits name
//! their sale at `object_path`, which `payment_path` defaults to.

use serde_json::{Value, json};

use crate::backend::Backend;
use crate::kinds::Kind;

pub const INHOUSE: Kind = Kind {
    source: "inhouse-sales",
    kind: "generic-hmac",
    secret: "secret of the in-house sales service",
    old_secret: "previous secret of the sales service",
    config: r#"
[[sources]]
name = "inhouse-sales"
kind = "generic-hmac"
secrets = ["secret of the in-house sales service", "previous secret of the sales service"]
signature_header = "X-Sales-Signature"
signature_prefix = "sha256="
signed_payload = "{timestamp}.{body}"
timestamp_header = "X-Sales-Timestamp"
credit_types = ["sale.settled"]
debit_types = ["sale.refunded"]
account_path = "customer"
object_path = "sale.id"
reverses_path = "refund.sale_id"
"#,
    payment,
    refund,
    key_of,
};

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    json!({"id": event_id, "type": "sale.settled", "customer": "acct_1",
        "amount": amount, "currency": "USD", "sale": {"id": payment}})
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    json!({"id": event_id, "type": "sale.refunded", "amount": amount, "currency": "USD",
        "refund": {"id": refund_id, "sale_id": payment}})
}

fn key_of(body: &Value) -> String {
    body["id"].as_str().unwrap().to_owned()
}

async fn partial_refunds_add_up_to_the_payment_and_no_further(backend: Backend) {
    super::partial_refunds_add_up_to_the_payment_and_no_further(backend, &INHOUSE).await;
}

async fn two_refunds_racing_never_take_more_than_the_payment(backend: Backend) {
    super::two_refunds_racing_never_take_more_than_the_payment(backend, &INHOUSE).await;
}

async fn a_refund_naming_no_payment_is_rejected(backend: Backend) {
    let mut nameless = refund("e2", "rf_1", "pay_1", 300);
    nameless["refund"]
        .as_object_mut()
        .unwrap()
        .remove("sale_id");
    super::a_refund_naming_no_payment_is_rejected(backend, &INHOUSE, nameless, "refund.sale_id")
        .await;
}

crate::kind_scenarios!(
    INHOUSE;
    partial_refunds_add_up_to_the_payment_and_no_further,
    two_refunds_racing_never_take_more_than_the_payment,
    a_refund_naming_no_payment_is_rejected,
);
