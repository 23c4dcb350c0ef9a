//! A signed body that can be read two ways is stored as `rejected`, with
//! the reason naming where, and never moves money: a duplicate key anywhere
//! (the amount, the type, Stripe's metadata), or a number no float holds.

use hookledger::cli::sign_body;
use hookledger::secret::Secret;
use reqwest::StatusCode;

use crate::helpers::{Backend, STRIPE_SECRET, TestApp, json_with_status, now};

async fn deliver_rejected(app: &TestApp, event_id: &str, body: &str) -> String {
    let answer = json_with_status(
        app.deliver_body("demo", event_id, body.as_bytes()).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(answer["status"], "rejected", "{body}");
    let event = app.event("demo", event_id).await;
    assert_eq!(event["payload"], body, "the body is stored as it came");
    event["reason"].as_str().unwrap().to_owned()
}

async fn a_body_with_two_readings_is_rejected_never_applied(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let two_amounts = r#"{"type": "balance.credit", "timestamp": "2026-06-01T12:00:00Z",
        "data": {"account_id": "acct_1", "amount_minor": 1, "amount_minor": 999999, "currency": "USD"}}"#;
    assert_eq!(
        deliver_rejected(&app, "msg_amounts", two_amounts).await,
        "the signed body has the key data.amount_minor more than once"
    );
    let two_types = r#"{"type": "balance.debit", "timestamp": "2026-06-01T12:00:00Z",
        "data": {"account_id": "acct_1", "amount_minor": 5, "currency": "USD"}, "type": "balance.credit"}"#;
    assert_eq!(
        deliver_rejected(&app, "msg_types", two_types).await,
        "the signed body has the key type more than once"
    );
    let huge = r#"{"type": "balance.credit", "timestamp": "2026-06-01T12:00:00Z",
        "data": {"account_id": "acct_1", "amount_minor": 1e400, "currency": "USD"}}"#;
    assert_eq!(
        deliver_rejected(&app, "msg_huge", huge).await,
        "the signed body has a number out of range at data.amount_minor: 1e400"
    );
    // A redelivery is a duplicate of the rejected event, not a second try.
    let again = app
        .deliver_body("demo", "msg_amounts", two_amounts.as_bytes())
        .await;
    let again = json_with_status(again, StatusCode::OK).await;
    assert_eq!(
        (again["status"].as_str(), again["duplicate"].as_bool()),
        (Some("rejected"), Some(true))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

async fn a_stripe_body_with_a_duplicate_key_is_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let created = now().timestamp();
    let body = format!(
        r#"{{"id": "evt_dup", "type": "payment_intent.succeeded", "created": {created},
        "data": {{"object": {{"id": "pi_1", "amount_received": 500, "currency": "usd",
        "metadata": {{"account_id": "acct_1", "account_id": "acct_2"}}}}}}}}"#
    );
    let request = sign_body(
        "stripe",
        &Secret::new(STRIPE_SECRET),
        body.into_bytes(),
        "",
        created,
    )
    .unwrap();
    let answer = json_with_status(app.post_signed("stripe", &request).await, StatusCode::OK).await;
    assert_eq!(answer["status"], "rejected");
    assert_eq!(
        app.event("stripe", "evt_dup").await["reason"],
        "the signed body has the key data.object.metadata.account_id more than once"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    assert_eq!(app.balance("acct_2", "USD").await, 0);
}

both_backends!(
    a_body_with_two_readings_is_rejected_never_applied,
    a_stripe_body_with_a_duplicate_key_is_rejected,
);
