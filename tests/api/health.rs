//! Probes, and what a provider sees when the database is not there: 503 with
//! Retry-After, nothing partial, and a retry that then succeeds once.

use reqwest::StatusCode;

use crate::helpers::{Backend, TestApp, assert_error, credit, json_with_status};
use crate::locker::Locker;

async fn probes_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let health = json_with_status(
        app.client.get(app.url("/healthz")).send().await.unwrap(),
        StatusCode::OK,
    )
    .await;
    assert_eq!(health["status"], "ok");
    let ready = json_with_status(
        app.client.get(app.url("/readyz")).send().await.unwrap(),
        StatusCode::OK,
    )
    .await;
    assert_eq!(ready["status"], "ready");
}

async fn a_closed_database_answers_503(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.store().close().await;
    let response = app
        .deliver(
            "demo",
            "standard-webhooks",
            crate::helpers::DEMO_SECRET,
            &credit("msg_1", "a", 1),
        )
        .await;
    assert_eq!(response.headers()["retry-after"], "5");
    assert_error(response, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_error(ready, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
}

/// Another session holds a lock the transaction needs until the database's
/// own timeout fires: 503, nothing written; once the lock is gone the
/// provider's retry is applied exactly once.
async fn a_locked_database_answers_503_and_the_retry_applies_once(backend: Backend) {
    let short_waits = "busy_timeout_ms = 300\nstatement_timeout_ms = 300";
    let options = crate::helpers::Options {
        database: short_waits,
        ..Default::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let locker = Locker::lock(&app.database_url).await;
    let sample = credit("msg_1", "acct_1", 1500);
    let response = app
        .deliver(
            "demo",
            "standard-webhooks",
            crate::helpers::DEMO_SECRET,
            &sample,
        )
        .await;
    assert_error(response, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    locker.release().await;
    assert!(
        app.events().await.is_empty(),
        "the failed transaction left nothing behind"
    );
    let answer = app.send_ok(&sample).await;
    assert_eq!(
        (answer["status"].as_str(), answer["duplicate"].as_bool()),
        (Some("applied"), Some(false))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

both_backends!(
    probes_answer,
    a_closed_database_answers_503,
    a_locked_database_answers_503_and_the_retry_applies_once,
);
