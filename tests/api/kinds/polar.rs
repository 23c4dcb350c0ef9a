//! Polar end to end: a paid order credits once per order, a refund reports
//! the order's running refunded totals (tax apart), of which only what is
//! new is debited. A secret stands for two keys: endpoints made before
//! 2026-09-08 sign with its UTF-8 bytes (what `hookledger send` does), newer
//! ones the Standard Webhooks way; both verify. The window is ±300 s.

use chrono::TimeDelta;
use hookledger::cli::sign_body;
use hookledger::secret::Secret;
use serde_json::{Value, json};

use super::{Kind, header_id};
use crate::backend::Backend;
use crate::fixtures::edited;
use crate::helpers::{json_with_status, now};

pub const POLAR: Kind = Kind {
    source: "polar",
    kind: "polar",
    secret: "whsec_c2VjcmV0IGZvciBob29rbGVkZ2VyIHBvbGFyIHRlc3Q",
    old_secret: "whsec_Rk9qWm1LcDd2Tm4zUTh4UjJ0WTVjVjBi0k8z4mC",
    config: r#"
[[sources]]
name = "polar"
kind = "polar"
secrets = ["whsec_c2VjcmV0IGZvciBob29rbGVkZ2VyIHBvbGFyIHRlc3Q",
    "whsec_Rk9qWm1LcDd2Tm4zUTh4UjJ0WTVjVjBi0k8z4mC"]
"#,
    payment,
    refund,
    key_of,
};

fn order(payment: &str, amount: i64) -> Value {
    edited(
        "polar",
        "order.paid",
        &[
            ("data.id", json!(payment)),
            ("data.subtotal_amount", json!(amount)),
            ("data.net_amount", json!(amount)),
            ("data.total_amount", json!(amount)),
            ("data.due_amount", json!(amount)),
        ],
    )
}

fn payment(_event_id: &str, payment: &str, amount: i64) -> Value {
    order(payment, amount)
}

/// The order as `order.refunded` reports it, with these refunded totals.
fn refunded(payment: &str, total: i64, tax: i64) -> Value {
    edited(
        "polar",
        "order.refunded",
        &[
            ("data.id", json!(payment)),
            ("data.refunded_amount", json!(total)),
            ("data.refunded_tax_amount", json!(tax)),
        ],
    )
}

fn refund(_event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    let total = super::lemonsqueezy::running_total(payment, refund_id, amount);
    refunded(payment, total, 0)
}

fn key_of(body: &Value) -> String {
    match body["type"].as_str() {
        Some("order.refunded") => header_id(body),
        _ => format!("order.paid:{}", body["data"]["id"].as_str().unwrap()),
    }
}

/// An endpoint whose secret Polar generated after the cutoff: signed as
/// Standard Webhooks signs (the decoded key), it verifies as well.
async fn a_secret_verifies_signed_either_way(backend: Backend) {
    let app = POLAR.spawn(backend).await;
    let body = order("ord_standard", 1500);
    let standard = sign_body(
        "standard-webhooks",
        &Secret::new(POLAR.secret),
        body.to_string().into_bytes(),
        &header_id(&body),
        now().timestamp(),
    )
    .unwrap();
    assert_ne!(
        standard.headers[2],
        POLAR.sign(&body).headers[2],
        "the two keys sign differently"
    );
    let answer = json_with_status(POLAR.post(&app, &standard).await, reqwest::StatusCode::OK).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    // The legacy signature of the same event: a duplicate.
    assert_eq!(POLAR.send(&app, &body).await["duplicate"], true);
    // The same order as a second webhook event (another id): still once.
    let second = POLAR.sign_with(POLAR.secret, &body, "msg_second_endpoint");
    let again = json_with_status(POLAR.post(&app, &second).await, reqwest::StatusCode::OK).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

/// A refund takes back the tax it refunds too, so a full refund of a taxed
/// order leaves nothing; totals seen before add nothing.
async fn refunds_take_back_their_tax_too(backend: Backend) {
    let app = POLAR.spawn(backend).await;
    let mut taxed = order("ord_taxed", 1200);
    taxed["data"]["tax_amount"] = json!(300);
    taxed["data"]["total_amount"] = json!(1500);
    POLAR.send(&app, &taxed).await;
    POLAR.send(&app, &refunded("ord_taxed", 400, 100)).await;
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    let late = POLAR.send(&app, &refunded("ord_taxed", 400, 0)).await;
    assert_eq!(late["status"], "ignored", "{late}");
    let mut full = refunded("ord_taxed", 1200, 300);
    full["data"]["status"] = json!("refunded");
    assert_eq!(POLAR.send(&app, &full).await["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

/// Polar's SDK allows 300 s of skew each way: 301 s is refused.
async fn five_minutes_of_skew_and_no_more(backend: Backend) {
    let app = POLAR.spawn(backend).await;
    let body = order("ord_skew", 1500);
    let signed = POLAR.sign(&body);
    for skew in [301, -602] {
        app.clock.advance(TimeDelta::seconds(skew));
        super::assert_refused(&app, &POLAR, &signed, "timestamp_outside_tolerance").await;
    }
    app.clock.advance(TimeDelta::seconds(601));
    let answer = json_with_status(POLAR.post(&app, &signed).await, reqwest::StatusCode::OK).await;
    assert_eq!(answer["status"], "applied", "300 s late: {answer}");
    app.assert_invariants().await;
}

crate::kind_scenarios!(POLAR; a_secret_verifies_signed_either_way, refunds_take_back_their_tax_too, five_minutes_of_skew_and_no_more);
