//! Verified means stored: once a signature verifies, the delivery is kept,
//! whatever its content, and answered without a 5xx. Fields that cannot be
//! used make the event `rejected` with a reason naming them.

use hookledger::cli::{SignedRequest, sign_body};
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, STRIPE_SECRET, TestApp, json_with_status, now};
use crate::unreadable::stored_bytes;

const PAYMENT: &str = include_str!("../fixtures/stripe/payment_intent.succeeded.json");
const REFUND: &str = include_str!("../fixtures/stripe/refund.created.json");

fn stripe_signed(body: &[u8]) -> SignedRequest {
    sign_body(
        "stripe",
        &Secret::new(STRIPE_SECRET),
        body.to_vec(),
        "",
        now().timestamp(),
    )
    .expect("body signs")
}

fn with(template: &str, path: &str, value: Value) -> Vec<u8> {
    let mut body: Value = serde_json::from_str(template).unwrap();
    let mut at = &mut body;
    let segments: Vec<&str> = path.split('.').collect();
    for segment in &segments[..segments.len() - 1] {
        at = &mut at[*segment];
    }
    at[segments[segments.len() - 1]] = value;
    serde_json::to_vec(&body).unwrap()
}

/// The review's reproduction: a Stripe credit whose payment id holds NUL
/// answered 500 on every retry on PostgreSQL and applied on SQLite.
async fn a_stripe_credit_with_nul_in_its_object_id_is_stored_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = with(PAYMENT, "data.object.id", json!("pi_\u{0}1"));
    let request = stripe_signed(&body);
    for duplicate in [false, true] {
        let answer =
            json_with_status(app.post_signed("stripe", &request).await, StatusCode::OK).await;
        assert_eq!(answer["status"], "rejected", "{answer}");
        assert_eq!(answer["duplicate"], duplicate, "{answer}");
    }
    let event = app.event("stripe", "evt_3QWpG2EbX6tfNkNn0aG5hS0q").await;
    let reason = event["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("object id at data.object.id must be"),
        "{reason}"
    );
    assert_eq!(event["object_id"], Value::Null);
    assert_eq!(event["amount_minor"], 1000, "what was read is kept");
    assert_eq!(stored_bytes(&event), body, "the bytes are kept exactly");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

/// A Standard Webhooks `type` holding NUL: stored under its signed id, the
/// type escaped, rejected.
async fn a_type_with_nul_is_stored_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = json!({
        "type": "balance.credit\u{0}",
        "data": {"account_id": "acct_1", "amount_minor": 500, "currency": "USD"}
    });
    let response = app
        .deliver_body("demo", "msg_nul", &serde_json::to_vec(&body).unwrap())
        .await;
    let answer = json_with_status(response, StatusCode::OK).await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let event = app.event("demo", "msg_nul").await;
    assert_eq!(event["event_type"], "balance.credit\\u{0}");
    assert_eq!(
        event["reason"],
        "the event type has control characters or is over 255 bytes"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

/// A refund whose own id (its intent key) holds NUL cannot be keyed by it:
/// it is stored under the body's digest, rejected, and nothing is reversed.
async fn a_refund_with_an_unusable_key_is_stored_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let credit = stripe_signed(PAYMENT.as_bytes());
    let applied = json_with_status(app.post_signed("stripe", &credit).await, StatusCode::OK).await;
    assert_eq!(applied["status"], "applied");
    let body = with(REFUND, "data.object.id", json!("re_\u{0}"));
    let answer = json_with_status(
        app.post_signed("stripe", &stripe_signed(&body)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(answer["status"], "rejected", "{answer}");
    let key = answer["event_id"].as_str().unwrap();
    assert!(key.starts_with("unreadable:"), "{key}");
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

crate::both_backends!(
    a_stripe_credit_with_nul_in_its_object_id_is_stored_rejected,
    a_type_with_nul_is_stored_rejected,
    a_refund_with_an_unusable_key_is_stored_rejected,
);
