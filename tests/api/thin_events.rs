//! Stripe thin events against localstripe: a signed thin notification's
//! PaymentIntent is fetched from Stripe with the source's key and credited
//! with the fetched amount; the snapshot event of the same payment (both
//! destinations configured during a migration) credits nothing more; an
//! object that does not exist is held with the reason; one that cannot be
//! fetched this time is answered 503 for Stripe to retry, nothing stored.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_api::{FakeApi, Reply};
use crate::fixtures::signed;
use crate::helpers::*;
use crate::localstripe::{LocalStripe, free_port};
use crate::reconcile::{SECRET, app, source};

fn thin(event_id: &str, payment: &str) -> Value {
    json!({
        "id": event_id,
        "object": "v2.core.event",
        "type": "v1.payment_intent.succeeded",
        "created": "2026-11-28T04:00:00.000Z",
        "livemode": false,
        "context": null,
        "related_object": {
            "id": payment,
            "type": "payment_intent",
            "url": format!("/v1/payment_intents/{payment}"),
        },
    })
}

async fn post(app: &TestApp, body: &Value) -> reqwest::Response {
    app.post_signed("ls", &signed("stripe", SECRET, body, ""))
        .await
}

async fn a_thin_event_is_credited_with_its_fetched_payment_once(backend: Backend) {
    let Some(stripe) = LocalStripe::start("thin_events::a_thin_event_is_credited").await else {
        return;
    };
    let closed = format!("http://127.0.0.1:{}/webhooks/ls", free_port());
    stripe.send_webhooks_to(&closed, SECRET).await;
    let app = app(backend, &source(&stripe.base, 0)).await;
    let payment = stripe.pay(1, "acct_thin", 2500).remove(0);

    let answer = json_with_status(
        post(&app, &thin("evt_thin_1", &payment)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(app.balance("acct_thin", "USD").await, 2500);
    let stored = app.event("ls", "evt_thin_1").await;
    assert_eq!(stored["event_type"], "payment_intent.succeeded");
    assert_eq!(stored["payment_ref"], payment.as_str());
    // Stored as the snapshot it stands for, which a replay maps again.
    let payload: Value = serde_json::from_str(stored["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["data"]["object"]["amount"], 2500, "{payload}");
    assert_eq!(payload["type"], "payment_intent.succeeded");

    // The snapshot event of the same payment, from the other destination.
    let snapshot = stripe
        .events()
        .await
        .into_iter()
        .find(|e| e["data"]["object"]["id"] == payment.as_str())
        .unwrap();
    let again = json_with_status(post(&app, &snapshot).await, StatusCode::OK).await;
    assert_eq!(again["status"], "duplicate_effect", "{again}");
    assert_eq!(app.balance("acct_thin", "USD").await, 2500);

    // An object Stripe does not have: held, with why.
    let missing = json_with_status(
        post(&app, &thin("evt_thin_2", "pi_missing")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(missing["status"], "rejected", "{missing}");
    let held = app.event("ls", "evt_thin_2").await;
    assert!(
        held["reason"]
            .as_str()
            .unwrap()
            .contains("pi_missing does not exist"),
        "{held}"
    );
    app.assert_invariants().await;
}

async fn a_thin_event_whose_object_cannot_be_fetched_is_retried(backend: Backend) {
    let api = FakeApi::start(vec![Reply::status(500, None)]).await;
    let app = app(backend, &source(&api.base, 0)).await;
    let response = post(&app, &thin("evt_thin_3", "pi_3")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(api.asked().len(), 2, "tried twice: {:?}", api.asked());
    assert_eq!(api.asked()[0].0, "/v1/payment_intents/pi_3");
    let events = json_with_status(app.admin_get("/admin/api/events").await, StatusCode::OK).await;
    assert_eq!(events["events"], json!([]), "nothing stored");
}

/// Stripe failed to generate a `payment_intent.succeeded` and says so
/// afterwards: the notice is read back from the v2 events API, the
/// payment it names fetched, and credited once under the notice's id.
async fn an_event_stripe_failed_to_generate_is_credited_from_its_notice(backend: Backend) {
    let notice = json!({
        "id": "evt_health_1", "object": "v2.core.event",
        "type": "v2.core.health.event_generation_failure.resolved",
        "created": "2026-11-28T04:00:00.000Z", "livemode": false,
    });
    // As Stripe's guide shows it: the object in the impact, its url a
    // Dashboard link.
    let mut fetched = notice.clone();
    fetched["data"] = json!({"alert_id": "halert_1", "summary": "An event failed to generate",
        "impact": {"event_type": "payment_intent.succeeded", "related_object": {
            "id": "pi_h1", "type": "payment_intent",
            "url": "https://dashboard.stripe.com/payments/pi_h1"}}});
    let payment = json!({"id": "pi_h1", "object": "payment_intent", "amount": 4200,
        "amount_received": 4200, "currency": "usd", "status": "succeeded",
        "metadata": {"account_id": "acct_health"}});
    let api = FakeApi::start(vec![Reply::ok(fetched), Reply::ok(payment)]).await;
    let app = app(backend, &source(&api.base, 0)).await;

    let answer = json_with_status(post(&app, &notice).await, StatusCode::OK).await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(app.balance("acct_health", "USD").await, 4200);
    let asked: Vec<String> = api.asked().into_iter().map(|(target, _)| target).collect();
    assert_eq!(
        asked,
        ["/v2/core/events/evt_health_1", "/v1/payment_intents/pi_h1"]
    );
    let stored = app.event("ls", "evt_health_1").await;
    assert_eq!(stored["event_type"], "payment_intent.succeeded");
    assert_eq!(stored["payment_ref"], "pi_h1");
    // The notice again: nothing more.
    let again = json_with_status(post(&app, &notice).await, StatusCode::OK).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(app.balance("acct_health", "USD").await, 4200);
    app.assert_invariants().await;
}

both_backends!(
    an_event_stripe_failed_to_generate_is_credited_from_its_notice,
    a_thin_event_is_credited_with_its_fetched_payment_once,
    a_thin_event_whose_object_cannot_be_fetched_is_retried,
);
