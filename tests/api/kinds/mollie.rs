//! Mollie (next-gen webhooks) end to end: while a secret rotates Mollie
//! repeats the signature header, and a value folded from the repeats
//! verifies if any of its signatures does; a "simple" payload, which has no
//! snapshot of the payment, is held with its reason, never credited.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;
use crate::helpers::json_with_status;

pub const MOLLIE: Kind = Kind {
    source: "mollie",
    kind: "mollie",
    secret: "whsk_Fq6ys7HbnhHRNEDCA4dKmP8v2JtgaXuc",
    old_secret: "whsk_2r9BzTwK4cLmQ7xNvE3sJd8HfYpA6uGo",
    config: r#"
[[sources]]
name = "mollie"
kind = "mollie"
secrets = ["whsk_Fq6ys7HbnhHRNEDCA4dKmP8v2JtgaXuc", "whsk_2r9BzTwK4cLmQ7xNvE3sJd8HfYpA6uGo"]
"#,
    payment,
    refund,
    key_of,
};

/// USD has two decimal places.
fn decimal(amount: i64) -> Value {
    json!(format!("{}.{:02}", amount / 100, amount % 100))
}

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "mollie",
        "payment.paid",
        &[
            ("id", json!(event_id)),
            ("entityId", json!(payment)),
            ("_embedded.payment.id", json!(payment)),
            ("_embedded.payment.amount.value", decimal(amount)),
            ("_embedded.payment.amountRemaining.value", decimal(amount)),
        ],
    )
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "mollie",
        "refund.refunded",
        &[
            ("id", json!(event_id)),
            ("entityId", json!(refund_id)),
            ("_embedded.refund.id", json!(refund_id)),
            ("_embedded.refund.paymentId", json!(payment)),
            ("_embedded.refund.amount.value", decimal(amount)),
        ],
    )
}

fn key_of(body: &Value) -> String {
    let entity = body["entityId"].as_str().unwrap();
    match body["type"].as_str() {
        Some("refund.refunded") => format!("refund:{entity}"),
        _ => format!("payment.paid:{entity}"),
    }
}

async fn a_folded_repeated_signature_header_verifies(backend: Backend) {
    let app = MOLLIE.spawn(backend).await;
    let body = payment("e1", "tr_1", 1500);
    let mut request = MOLLIE.sign(&body);
    let (name, signature) = request.headers.remove(0);
    assert!(signature.starts_with("sha256="), "{signature}");
    // The retiring secret's signature (here: one no secret makes) first.
    let folded = format!("sha256={}, {signature}", "0".repeat(64));
    request.headers.push((name, folded));
    let answer = json_with_status(MOLLIE.post(&app, &request).await, StatusCode::OK).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    app.assert_invariants().await;
}

async fn a_simple_payload_is_held_never_credited(backend: Backend) {
    let app = MOLLIE.spawn(backend).await;
    let mut simple = payment("e1", "tr_1", 1500);
    simple.as_object_mut().unwrap().remove("_embedded");
    let answer = MOLLIE.send(&app, &simple).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let stored = app.event("mollie", "payment.paid:tr_1").await;
    let reason = stored["reason"].as_str().unwrap();
    assert!(
        reason.contains("_embedded.payment.metadata.account_id"),
        "{reason}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

crate::kind_scenarios!(
    MOLLIE;
    a_folded_repeated_signature_header_verifies,
    a_simple_payload_is_held_never_credited
);
