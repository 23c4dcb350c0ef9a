//! Paddle Billing end to end: completed transactions credit, approved
//! refund adjustments debit once (created pending, then updated approved),
//! and the 5 s replay window holds: a delivery signed 6 s ago is refused.

use chrono::TimeDelta;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;

pub const PADDLE: Kind = Kind {
    source: "paddle",
    kind: "paddle",
    secret: "pdl_ntfset_01hv8x2acma2gz3ysy1w9h7q6e_Zm9yIHRlc3RzIG9ubHk",
    old_secret: "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_cmV0aXJlZCBzZWNyZXQ",
    config: r#"
[[sources]]
name = "paddle"
kind = "paddle"
secrets = ["pdl_ntfset_01hv8x2acma2gz3ysy1w9h7q6e_Zm9yIHRlc3RzIG9ubHk",
    "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_cmV0aXJlZCBzZWNyZXQ"]
"#,
    payment,
    refund,
    key_of,
};

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    let amount = json!(amount.to_string());
    edited(
        "paddle",
        "transaction.completed",
        &[
            ("event_id", json!(event_id)),
            ("data.id", json!(payment)),
            ("data.details.totals.total", amount.clone()),
            ("data.details.totals.grand_total", amount),
        ],
    )
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "paddle",
        "adjustment.updated",
        &[
            ("event_id", json!(event_id)),
            ("data.id", json!(refund_id)),
            ("data.transaction_id", json!(payment)),
            ("data.totals.total", json!(amount.to_string())),
        ],
    )
}

fn key_of(body: &Value) -> String {
    match body["event_type"].as_str() {
        Some(t) if t.starts_with("adjustment.") => {
            format!("adjustment:{}", body["data"]["id"].as_str().unwrap())
        }
        _ => body["event_id"].as_str().unwrap().to_owned(),
    }
}

/// The refund's first event is pending approval (ignored); its approval
/// debits; the approval redelivered under a new event id does not.
async fn a_refund_debits_once_when_approved(backend: Backend) {
    let app = PADDLE.spawn(backend).await;
    PADDLE.send(&app, &payment("e1", "txn_1", 1500)).await;
    let pending = edited(
        "paddle",
        "adjustment.created",
        &[("data.transaction_id", json!("txn_1"))],
    );
    assert_eq!(PADDLE.send(&app, &pending).await["status"], "ignored");
    let mut approved = pending.clone();
    approved["event_id"] = json!("evt_approved");
    approved["event_type"] = json!("adjustment.updated");
    approved["data"]["status"] = json!("approved");
    let answer = PADDLE.send(&app, &approved).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (
            Some("applied"),
            Some("adjustment:adj_01hvb8mdj9xtmfjp8jx7nhfbkd")
        )
    );
    approved["event_id"] = json!("evt_approved_again");
    assert_eq!(PADDLE.send(&app, &approved).await["duplicate"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

/// Paddle's SDK allows 5 s of skew: 6 s is refused, both ways.
async fn six_seconds_of_skew_is_refused(backend: Backend) {
    let app = PADDLE.spawn(backend).await;
    let body = payment("e1", "txn_1", 1500);
    let signed = PADDLE.sign(&body);
    for skew in [6, -12] {
        app.clock.advance(TimeDelta::seconds(skew));
        super::assert_refused(&app, &PADDLE, &signed, "timestamp_outside_tolerance").await;
    }
    app.clock.advance(TimeDelta::seconds(6));
    assert_eq!(PADDLE.send(&app, &body).await["status"], "applied");
}

crate::kind_scenarios!(PADDLE; a_refund_debits_once_when_approved, six_seconds_of_skew_is_refused);
