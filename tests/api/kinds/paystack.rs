//! Paystack end to end: the signature is HMAC-SHA512, so an otherwise
//! correct HMAC-SHA256 of the body is refused; Paystack has no event id, and
//! a refund is debited once, when processed, under its own reference (its
//! pending event moves nothing and cannot be mistaken for it).

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;

pub const PAYSTACK: Kind = Kind {
    source: "paystack",
    kind: "paystack",
    secret: "sk_test_0c9b1f3a7e5d4c2b8a6f0e1d9c7b5a3f2e4d6c8b",
    old_secret: "sk_test_7d3e9a1c5b2f4e6a8c0d2b4f6e8a0c1d3e5f7a9b",
    config: r#"
[[sources]]
name = "paystack"
kind = "paystack"
secrets = ["sk_test_0c9b1f3a7e5d4c2b8a6f0e1d9c7b5a3f2e4d6c8b",
    "sk_test_7d3e9a1c5b2f4e6a8c0d2b4f6e8a0c1d3e5f7a9b"]
"#,
    payment,
    refund,
    key_of,
};

fn payment(_event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "paystack",
        "charge.success",
        &[
            ("data.reference", json!(payment)),
            ("data.amount", json!(amount)),
            ("data.requested_amount", json!(amount)),
        ],
    )
}

/// Paystack writes a refund's amount as a string of subunits.
fn refund(_event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "paystack",
        "refund.processed",
        &[
            ("data.refund_reference", json!(refund_id)),
            ("data.transaction_reference", json!(payment)),
            ("data.amount", json!(amount.to_string())),
        ],
    )
}

fn key_of(body: &Value) -> String {
    let data = &body["data"];
    match body["event"].as_str() {
        Some("refund.processed") => {
            format!("refund:{}", data["refund_reference"].as_str().unwrap())
        }
        _ => format!("charge.success:{}", data["reference"].as_str().unwrap()),
    }
}

async fn a_sha256_signature_is_refused(backend: Backend) {
    let app = PAYSTACK.spawn(backend).await;
    let body = payment("e1", "T1", 1500);
    let mut request = PAYSTACK.sign(&body);
    let mut mac = Hmac::<Sha256>::new_from_slice(PAYSTACK.secret.as_bytes()).unwrap();
    mac.update(&request.body);
    request.headers[0].1 = hex::encode(mac.finalize().into_bytes());
    super::assert_refused(&app, &PAYSTACK, &request, "signature_mismatch").await;
    assert!(app.events().await.is_empty(), "nothing stored");
}

async fn a_refund_debits_once_when_processed(backend: Backend) {
    let app = PAYSTACK.spawn(backend).await;
    PAYSTACK.send(&app, &payment("e1", "T1", 1500)).await;
    let mut pending = refund("e2", "rf_1", "T1", 500);
    pending["event"] = json!("refund.pending");
    pending["data"]["status"] = json!("pending");
    pending["data"]["refund_reference"] = Value::Null;
    let answer = PAYSTACK.send(&app, &pending).await;
    assert_eq!(answer["status"], "ignored", "{answer}");
    assert!(
        answer["event_id"]
            .as_str()
            .unwrap()
            .starts_with("event:refund.pending:"),
        "{answer}"
    );
    let processed = refund("e3", "rf_1", "T1", 500);
    let answer = PAYSTACK.send(&app, &processed).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (Some("applied"), Some("refund:rf_1"))
    );
    assert_eq!(PAYSTACK.send(&app, &processed).await["duplicate"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

crate::kind_scenarios!(
    PAYSTACK;
    a_sha256_signature_is_refused,
    a_refund_debits_once_when_processed
);
