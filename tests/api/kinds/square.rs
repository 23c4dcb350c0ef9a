//! Square end to end: the signature covers the notification URL configured
//! for the source, so a body signed for any other URL (one `/` more) is
//! refused; a payment credits once however many `payment.*` events report
//! it completed.

use hookledger::cli::sign_body_with;
use hookledger::providers::KindSettings;
use hookledger::secret::Secret;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;
use crate::helpers::now;

const URL: &str = "https://hooks.example.com/webhooks/square";

pub const SQUARE: Kind = Kind {
    source: "square",
    kind: "square",
    secret: "Ibxx_5AKakO-3qeNVR61Dw",
    old_secret: "MCmhFRxGX82xMwg5FsaoQA",
    config: r#"
[[sources]]
name = "square"
kind = "square"
secrets = ["Ibxx_5AKakO-3qeNVR61Dw", "MCmhFRxGX82xMwg5FsaoQA"]
notification_url = "https://hooks.example.com/webhooks/square"
"#,
    payment,
    refund,
    key_of,
};

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "square",
        "payment.updated",
        &[
            ("event_id", json!(event_id)),
            ("data.id", json!(payment)),
            ("data.object.payment.id", json!(payment)),
            ("data.object.payment.amount_money.amount", json!(amount)),
            ("data.object.payment.total_money.amount", json!(amount)),
            ("data.object.payment.approved_money.amount", json!(amount)),
        ],
    )
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "square",
        "refund.updated",
        &[
            ("event_id", json!(event_id)),
            ("data.id", json!(refund_id)),
            ("data.object.refund.id", json!(refund_id)),
            ("data.object.refund.payment_id", json!(payment)),
            ("data.object.refund.amount_money.amount", json!(amount)),
        ],
    )
}

fn key_of(body: &Value) -> String {
    let object = &body["data"]["object"];
    match body["type"].as_str() {
        Some(t) if t.starts_with("refund.") => {
            format!("refund:{}", object["refund"]["id"].as_str().unwrap())
        }
        _ => format!("payment:{}", object["payment"]["id"].as_str().unwrap()),
    }
}

/// Square signs `notification_url + body`: the same body signed for the
/// URL with a trailing `/` (or any other) is 401, and nothing is stored.
async fn a_body_signed_for_another_url_is_refused(backend: Backend) {
    let app = SQUARE.spawn(backend).await;
    let body = payment("e1", "pay_1", 1500);
    for other in [format!("{URL}/"), URL.replacen("https://", "http://", 1)] {
        let settings = KindSettings {
            notification_url: Some(other),
            ..KindSettings::default()
        };
        let signed = sign_body_with(
            "square",
            &Secret::new(SQUARE.secret),
            body.to_string().into_bytes(),
            "e1",
            now().timestamp(),
            &settings,
        )
        .unwrap();
        super::assert_refused(&app, &SQUARE, &signed, "signature_mismatch").await;
    }
    assert!(app.events().await.is_empty(), "nothing stored");
    assert_eq!(SQUARE.send(&app, &body).await["status"], "applied");
    app.assert_invariants().await;
}

/// Approved (not yet completed) is ignored; completed credits; a later
/// `payment.updated` of the same payment (Square sends one when a refund
/// changes `refunded_money`) is the same intent, never a second credit.
async fn a_payment_credits_once_when_completed(backend: Backend) {
    let app = SQUARE.spawn(backend).await;
    let mut approved = payment("e1", "pay_1", 1500);
    approved["data"]["object"]["payment"]["status"] = json!("APPROVED");
    let answer = SQUARE.send(&app, &approved).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (Some("ignored"), Some("e1"))
    );
    let completed = payment("e2", "pay_1", 1500);
    let answer = SQUARE.send(&app, &completed).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (Some("applied"), Some("payment:pay_1"))
    );
    let mut refunded = payment("e3", "pay_1", 1500);
    refunded["data"]["object"]["payment"]["refunded_money"] =
        json!({"amount": 500, "currency": "USD"});
    let mut created = payment("e4", "pay_1", 1500);
    created["type"] = json!("payment.created");
    for again in [refunded, created] {
        let answer = SQUARE.send(&app, &again).await;
        assert_eq!(answer["duplicate"], true, "{answer}");
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

crate::kind_scenarios!(
    SQUARE;
    a_body_signed_for_another_url_is_refused,
    a_payment_credits_once_when_completed
);
