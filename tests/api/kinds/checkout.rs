//! Checkout.com end to end: a refund is keyed by its action, not by the
//! event that reports it, so the same refund reported again under a new
//! event id debits once while a second refund of the same payment debits
//! too; a pending refund moves nothing.

use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;

pub const CHECKOUT: Kind = Kind {
    source: "checkout",
    kind: "checkout",
    secret: "5f1c2b8e-0d3a-4e6f-9a7b-c4d2e1f0a9b8",
    old_secret: "8a1e4f7c-3b2d-4c5e-8f9a-0b1c2d3e4f5a",
    config: r#"
[[sources]]
name = "checkout"
kind = "checkout"
secrets = ["5f1c2b8e-0d3a-4e6f-9a7b-c4d2e1f0a9b8", "8a1e4f7c-3b2d-4c5e-8f9a-0b1c2d3e4f5a"]
"#,
    payment,
    refund,
    key_of,
};

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "checkout",
        "payment_captured",
        &[
            ("id", json!(event_id)),
            ("data.id", json!(payment)),
            ("data.action_id", json!(format!("act_capture_{payment}"))),
            ("data.amount", json!(amount)),
            ("data.balances.total_authorized", json!(amount)),
            ("data.balances.total_captured", json!(amount)),
            ("data.balances.available_to_refund", json!(amount)),
        ],
    )
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "checkout",
        "payment_refunded",
        &[
            ("id", json!(event_id)),
            ("data.id", json!(payment)),
            ("data.action_id", json!(refund_id)),
            ("data.amount", json!(amount)),
            ("data.balances.total_refunded", json!(amount)),
        ],
    )
}

fn key_of(body: &Value) -> String {
    let data = &body["data"];
    match body["type"].as_str() {
        Some("payment_refunded") => format!("refund:{}", data["action_id"].as_str().unwrap()),
        _ => format!("capture:{}", data["action_id"].as_str().unwrap()),
    }
}

async fn refunds_debit_once_per_refund_action(backend: Backend) {
    let app = CHECKOUT.spawn(backend).await;
    CHECKOUT.send(&app, &payment("e1", "pay_1", 1500)).await;
    let mut pending = refund("e2", "act_1", "pay_1", 500);
    pending["type"] = json!("payment_refund_pending");
    assert_eq!(CHECKOUT.send(&app, &pending).await["status"], "ignored");
    let first = CHECKOUT
        .send(&app, &refund("e3", "act_1", "pay_1", 500))
        .await;
    assert_eq!(
        (first["status"].as_str(), first["event_id"].as_str()),
        (Some("applied"), Some("refund:act_1"))
    );
    let again = CHECKOUT
        .send(&app, &refund("e4", "act_1", "pay_1", 500))
        .await;
    assert_eq!(
        again["duplicate"], true,
        "same action, new event id: {again}"
    );
    let second = CHECKOUT
        .send(&app, &refund("e5", "act_2", "pay_1", 300))
        .await;
    assert_eq!(second["status"], "applied", "{second}");
    assert_eq!(app.balance("acct_1", "USD").await, 700);
    app.assert_invariants().await;
}

/// A payment captured in two parts credits both (each capture action once),
/// and its refunds are bounded by their sum.
async fn a_payment_captured_in_parts_credits_each_part(backend: Backend) {
    let app = CHECKOUT.spawn(backend).await;
    let mut first = payment("e1", "pay_1", 600);
    first["data"]["action_id"] = json!("act_cap_1");
    let mut second = payment("e2", "pay_1", 900);
    second["data"]["action_id"] = json!("act_cap_2");
    for capture in [&first, &second, &first] {
        CHECKOUT.send(&app, capture).await;
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    let all = CHECKOUT
        .send(&app, &refund("e3", "act_ref", "pay_1", 1500))
        .await;
    assert_eq!(all["status"], "applied", "{all}");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

crate::kind_scenarios!(
    CHECKOUT;
    refunds_debit_once_per_refund_action,
    a_payment_captured_in_parts_credits_each_part,
);
