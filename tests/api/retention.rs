//! Retention: done events' payloads are emptied after `payload_days`; the
//! intent row stays, so a redelivery is still a duplicate and a changed body
//! still a conflict (by its hash); held events keep their payloads; the
//! page says when a payload was purged.

use std::time::Duration;

use reqwest::StatusCode;

use crate::browser::{login, page};
use crate::helpers::{Backend, Options, TestApp, credit_seq, debit_seq, json_with_status, now};
use crate::samples::body_of;

const RETENTION: &str = "retention = { payload_days = 1, purge_interval_secs = 1 }";

async fn purged(app: &TestApp, event_id: &str) -> serde_json::Value {
    for _ in 0..100 {
        let event = app.event("demo", event_id).await;
        if !event["payload_purged_at"].is_null() {
            return event;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{event_id} was never purged");
}

async fn old_payloads_go_and_the_keys_stay(backend: Backend) {
    let options = Options {
        top_level: RETENTION,
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let credit = body_of(&credit_seq("msg_1", "acct_1", 1500, 5));
    let answer = app.deliver_body("demo", "msg_1", &credit).await;
    assert_eq!(
        json_with_status(answer, StatusCode::OK).await["status"],
        "applied"
    );
    // A late debit, held: its payload stays whatever its age.
    let late = body_of(&debit_seq("msg_2", "acct_1", 100, 1));
    let answer = app.deliver_body("demo", "msg_2", &late).await;
    assert_eq!(
        json_with_status(answer, StatusCode::OK).await["status"],
        "stale"
    );

    app.clock.advance(chrono::TimeDelta::days(2));
    let event = purged(&app, "msg_1").await;
    assert_eq!(event["payload"], "", "{event}");
    assert_eq!(event["status"], "applied");
    assert_eq!(event["amount_minor"], 1500, "the row is kept");
    let held = app.event("demo", "msg_2").await;
    assert!(held["payload_purged_at"].is_null(), "{held}");
    assert_eq!(held["payload"].as_str().unwrap().as_bytes(), &late[..]);

    // Signed at the app's (advanced) time, as a provider retrying would.
    let later = (now() + chrono::TimeDelta::days(2)).timestamp();
    let again = app.deliver_body_at("demo", "msg_1", &credit, later).await;
    let again = json_with_status(again, StatusCode::OK).await;
    assert_eq!(again["duplicate"], true, "{again}");
    let changed = body_of(&credit_seq("msg_1", "acct_1", 9999, 5));
    let conflict = app.deliver_body_at("demo", "msg_1", &changed, later).await;
    assert_eq!(
        json_with_status(conflict, StatusCode::OK).await["duplicate"],
        true
    );
    assert_eq!(
        app.event("demo", "msg_1").await["conflicts"],
        1,
        "found by its hash"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1500);

    let cookie = login(&app).await;
    let detail = page(&app, "/admin/event?source=demo&id=msg_1", &cookie).await;
    assert!(detail.contains("payload purged on "), "{detail}");
    app.assert_invariants().await;
}

crate::both_backends!(old_payloads_go_and_the_keys_stay);
