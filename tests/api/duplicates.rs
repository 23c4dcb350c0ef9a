//! Redeliveries: recognised however often, however concurrently, however
//! late, and never a second effect.

use chrono::TimeDelta;
use futures::future::join_all;
use hookledger::providers::Sample;
use reqwest::StatusCode;

use crate::helpers::{Backend, Options, TestApp, body_of, credit, json_with_status, now};

async fn five_sequential_redeliveries_post_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sample = credit("msg_1", "acct_1", 1500);
    let first = app.send_ok(&sample).await;
    assert_eq!(first["duplicate"], false);
    for _ in 0..4 {
        let again = app.send_ok(&sample).await;
        assert_eq!(
            again,
            serde_json::json!({"status": "applied", "duplicate": true, "event_id": "msg_1"})
        );
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    assert_eq!(app.entries("acct_1").await.len(), 1);
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["deliveries"], 5);
    assert_eq!(event["conflicts"], 0);
    app.assert_invariants().await;
}

async fn fifty_concurrent_deliveries_post_once(backend: Backend) {
    // Fifty deliveries queue for eight connections on one row's lock: under
    // a loaded CI machine the default 5 s wait for a connection can pass
    // (a 503 the provider retries); this test is about the one post.
    let options = Options {
        database: "acquire_timeout_secs = 60",
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let sample = credit("msg_1", "acct_1", 1500);
    let answers = join_all((0..50).map(|_| app.send_ok(&sample))).await;
    let firsts = answers.iter().filter(|a| a["duplicate"] == false).count();
    assert_eq!(firsts, 1, "exactly one delivery is the first: {answers:?}");
    assert!(
        answers.iter().all(|a| a["status"] == "applied"),
        "{answers:?}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    assert_eq!(app.entries("acct_1").await.len(), 1);
    assert_eq!(app.event("demo", "msg_1").await["deliveries"], 50);
    app.assert_invariants().await;
}

async fn a_redelivery_with_another_body_is_a_conflict_and_the_original_is_kept(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    let original = app.event("demo", "msg_1").await;
    let answer = app.send_ok(&credit("msg_1", "acct_1", 9999)).await;
    assert_eq!(answer["duplicate"], true);
    assert_eq!(answer["status"], "applied");
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["conflicts"], 1);
    assert_eq!(event["deliveries"], 2);
    assert_eq!(
        event["payload"], original["payload"],
        "the original payload is never overwritten"
    );
    assert_eq!(event["payload_sha256"], original["payload_sha256"]);
    assert_eq!(event["amount_minor"], 1500);
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    let metrics = json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await;
    assert_eq!(metrics["deliveries"]["demo"]["conflict"], 1);
    assert_eq!(metrics["deliveries"]["demo"]["duplicate"], 1);
    app.assert_invariants().await;
}

async fn a_redelivery_days_later_is_still_recognised(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = body_of(&credit("msg_1", "acct_1", 1500));
    json_with_status(
        app.deliver_body("demo", "msg_1", &body).await,
        StatusCode::OK,
    )
    .await;
    // Providers retry for days, re-signing the same body with a fresh timestamp.
    app.clock.advance(TimeDelta::days(3));
    let later = now().timestamp() + 3 * 86_400;
    let response = app.deliver_body_at("demo", "msg_1", &body, later).await;
    let answer = json_with_status(response, StatusCode::OK).await;
    assert_eq!(answer["duplicate"], true);
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["deliveries"], 2);
    assert_eq!(
        event["conflicts"], 0,
        "same body, new signature: not a conflict"
    );
    assert_ne!(event["last_received_at"], event["first_received_at"]);
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

async fn duplicates_answer_the_stored_status(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ignored = Sample {
        event_type: Some("ping".into()),
        ..credit("msg_1", "acct_1", 1)
    };
    let rejected = Sample {
        currency: "QQQ".into(),
        ..credit("msg_2", "acct_1", 1)
    };
    for (sample, status) in [(ignored, "ignored"), (rejected, "rejected")] {
        app.send_ok(&sample).await;
        let response = app.send(&sample).await;
        let answer = json_with_status(response, StatusCode::OK).await;
        assert_eq!(
            (answer["status"].as_str(), answer["duplicate"].as_bool()),
            (Some(status), Some(true))
        );
    }
    app.assert_invariants().await;
}

async fn fifty_concurrent_redeliveries_are_each_counted(backend: Backend) {
    // A redelivery of an event this instance stored is counted in a batch
    // with the others waiting (ingest::redelivery): the batch adds each
    // one, however many of the same event it holds.
    let app = TestApp::spawn(backend).await;
    let sample = credit("msg_1", "acct_1", 1500);
    assert_eq!(app.send_ok(&sample).await["duplicate"], false);
    let ignored = Sample {
        event_type: Some("ping".into()),
        ..credit("msg_2", "acct_2", 700)
    };
    assert_eq!(app.send_ok(&ignored).await["status"], "ignored");
    let sends = (0..50).map(|n| app.send_ok(if n % 5 == 0 { &ignored } else { &sample }));
    let answers = join_all(sends).await;
    for (n, answer) in answers.iter().enumerate() {
        let status = if n % 5 == 0 { "ignored" } else { "applied" };
        assert_eq!(answer["duplicate"], true, "{answer}");
        assert_eq!(answer["status"], status, "{answer}");
    }
    assert_eq!(app.event("demo", "msg_1").await["deliveries"], 41);
    assert_eq!(app.event("demo", "msg_2").await["deliveries"], 11);
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    assert_eq!(app.entries("acct_2").await.len(), 0);
    app.assert_invariants().await;
}

both_backends!(
    fifty_concurrent_redeliveries_are_each_counted,
    five_sequential_redeliveries_post_once,
    fifty_concurrent_deliveries_post_once,
    a_redelivery_with_another_body_is_a_conflict_and_the_original_is_kept,
    a_redelivery_days_later_is_still_recognised,
    duplicates_answer_the_stored_status,
);
