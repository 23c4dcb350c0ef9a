//! The Stripe source kind end to end, signed as Stripe's SDK signs.

use hookledger::cli::sign_body;
use hookledger::providers::Sample;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{
    Backend, STRIPE_SECRET, TestApp, assert_error, credit, json_with_status, now,
};

fn payment(event_id: &str, account: &str, amount: i64) -> Sample {
    Sample {
        currency: "usd".into(),
        ..credit(event_id, account, amount)
    }
}

async fn send_stripe(app: &TestApp, sample: &Sample) -> serde_json::Value {
    let response = app.deliver("stripe", "stripe", STRIPE_SECRET, sample).await;
    json_with_status(response, StatusCode::OK).await
}

async fn payment_intent_succeeded_credits_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sample = payment("evt_1", "acct_1", 2599);
    assert_eq!(send_stripe(&app, &sample).await["status"], "applied");
    assert_eq!(send_stripe(&app, &sample).await["duplicate"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 2599);
    let event = app.event("stripe", "evt_1").await;
    assert_eq!(event["event_type"], "payment_intent.succeeded");
    assert_eq!(event["object_id"], "pi_1", "kept for refunds");
    assert_eq!(event["currency"], "USD");
    assert_eq!(event["sequence"], now().timestamp(), "Stripe's created");
    assert_eq!(app.entries("acct_1").await[0]["object_id"], "pi_1");
    app.assert_invariants().await;
}

async fn other_stripe_types_are_ignored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for (id, kind) in [
        ("evt_1", "checkout.session.completed"),
        ("evt_2", "charge.refunded"),
    ] {
        let sample = Sample {
            event_type: Some(kind.into()),
            ..payment(id, "acct_1", 100)
        };
        assert_eq!(
            send_stripe(&app, &sample).await["status"],
            "ignored",
            "{kind}"
        );
    }
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

async fn a_payment_without_account_metadata_is_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = json!({
        "id": "evt_1", "type": "payment_intent.succeeded", "created": now().timestamp(),
        "data": {"object": {"id": "pi_1", "amount_received": 500, "currency": "usd", "metadata": {}}},
    });
    let request = sign_body(
        "stripe",
        &Secret::new(STRIPE_SECRET),
        body.to_string().into_bytes(),
        "",
        now().timestamp(),
    )
    .unwrap();
    let answer = json_with_status(app.post_signed("stripe", &request).await, StatusCode::OK).await;
    assert_eq!(answer["status"], "rejected");
    assert_eq!(
        app.event("stripe", "evt_1").await["reason"],
        "no account id at data.object.metadata.account_id"
    );
    app.assert_invariants().await;
}

async fn stripe_signatures_are_checked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sample = payment("evt_1", "acct_1", 100);
    // A Standard Webhooks signature is no Stripe signature.
    let wrong_kind = app
        .deliver(
            "stripe",
            "standard-webhooks",
            crate::helpers::DEMO_SECRET,
            &sample,
        )
        .await;
    assert_error(
        wrong_kind,
        StatusCode::UNAUTHORIZED,
        "missing_signature_header",
    )
    .await;
    let wrong_secret = app
        .deliver("stripe", "stripe", "whsec_other", &sample)
        .await;
    assert_error(wrong_secret, StatusCode::UNAUTHORIZED, "signature_mismatch").await;
    let stale = Sample {
        timestamp: now().timestamp() - 600,
        ..sample.clone()
    };
    let old = app.deliver("stripe", "stripe", STRIPE_SECRET, &stale).await;
    assert_error(old, StatusCode::UNAUTHORIZED, "timestamp_outside_tolerance").await;
    // Several v1 entries (Stripe's roll-over): any one may match.
    let mut request =
        hookledger::cli::signed_sample("stripe", &Secret::new(STRIPE_SECRET), &sample).unwrap();
    let value = request.headers[0]
        .1
        .replace(",v1=", &format!(",v1={},v1=", "0".repeat(64)));
    request.headers[0].1 = value;
    json_with_status(app.post_signed("stripe", &request).await, StatusCode::OK).await;
    assert_eq!(app.events().await.len(), 1);
    app.assert_invariants().await;
}

both_backends!(
    payment_intent_succeeded_credits_once,
    other_stripe_types_are_ignored,
    a_payment_without_account_metadata_is_rejected,
    stripe_signatures_are_checked,
);
