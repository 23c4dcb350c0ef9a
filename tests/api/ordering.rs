//! The high-water guard (the default ordering): a late credit applies and is
//! marked late; a late debit is held for an operator, who can apply it
//! exactly once or dismiss it. `on_stale` changes either per source.

use futures::future::join_all;
use reqwest::StatusCode;

use crate::helpers::{
    Backend, DEMO_SECRET, Options, TestApp, assert_error, body_of, credit, credit_seq, debit_seq,
    json_with_status, now,
};

const APPLY_2: &str = "/admin/api/events/demo/msg_2/apply";

/// Credits msg_1 with sequence 2, then debits msg_2 with sequence 1 (late,
/// so held as stale).
async fn out_of_order_pair(app: &TestApp) {
    assert_eq!(
        app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 2)).await["status"],
        "applied"
    );
    assert_eq!(
        app.send_ok(&debit_seq("msg_2", "acct_1", 250, 1)).await["status"],
        "stale"
    );
}

async fn a_late_debit_is_held_as_stale(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    out_of_order_pair(&app).await;
    assert_eq!(
        app.balance("acct_1", "USD").await,
        1000,
        "only the newer event is applied"
    );
    let event = app.event("demo", "msg_2").await;
    assert_eq!(event["status"], "stale");
    assert_eq!(event["sequence"], 1);
    assert_eq!(event["late"], true);
    assert_eq!(
        event["reason"],
        "out of order: sequence 1 is below 2, already applied for this account"
    );
    let held = json_with_status(
        app.admin_get("/admin/api/events?status=stale").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(held["events"][0]["event_id"], "msg_2");
    // A redelivery of the stale event stays stale and changes nothing.
    assert_eq!(
        app.send_ok(&debit_seq("msg_2", "acct_1", 250, 1)).await["duplicate"],
        true
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

async fn a_late_credit_applies_and_keeps_the_guard(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 5)).await;
    let late = app.send_ok(&credit_seq("msg_2", "acct_1", 250, 3)).await;
    assert_eq!(late["status"], "applied");
    let event = app.event("demo", "msg_2").await;
    assert_eq!(event["late"], true);
    assert_eq!(event["reason"], "applied out of order: sequence 3 below 5");
    assert_eq!(app.event("demo", "msg_1").await["late"], false);
    assert_eq!(app.balance("acct_1", "USD").await, 1250);
    // The guard stayed at 5: a debit at 4 is late too, and held.
    assert_eq!(
        app.send_ok(&debit_seq("msg_3", "acct_1", 1, 4)).await["status"],
        "stale"
    );
    let listed = app.events().await;
    let late_ids: Vec<&str> = listed
        .iter()
        .filter(|e| e["late"] == true)
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(late_ids, ["msg_3", "msg_2"], "lists mark late events");
    let metrics = json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await;
    assert_eq!(metrics["ordering"]["demo"]["late_credit_applied"], 1);
    assert_eq!(metrics["ordering"]["demo"]["late_debit_held"], 1);
    app.assert_invariants().await;
}

async fn on_stale_hold_holds_late_credits_too(backend: Backend) {
    let options = Options {
        extra_sources: &format!(
            "[[sources]]\nname = \"strict\"\nkind = \"standard-webhooks\"\nsecrets = [\"{DEMO_SECRET}\"]\non_stale = \"hold\"\n"
        ),
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let strict = |sample| {
        let app = &app;
        async move {
            let response = app
                .deliver("strict", "standard-webhooks", DEMO_SECRET, &sample)
                .await;
            json_with_status(response, StatusCode::OK).await
        }
    };
    strict(credit_seq("msg_1", "acct_1", 1000, 2)).await;
    let late = strict(credit_seq("msg_2", "acct_1", 250, 1)).await;
    assert_eq!(late["status"], "stale");
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

async fn equal_sequences_both_apply(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_eq!(
        app.send_ok(&credit_seq("msg_1", "acct_1", 100, 5)).await["status"],
        "applied"
    );
    // A debit: were an equal sequence late, it would be held.
    assert_eq!(
        app.send_ok(&debit_seq("msg_2", "acct_1", 30, 5)).await["status"],
        "applied"
    );
    let second = app.event("demo", "msg_2").await;
    assert_eq!(second["late"], false, "{second}");
    assert!(second["reason"].is_null(), "{second}");
    assert_eq!(
        app.send_ok(&credit_seq("msg_3", "acct_2", 100, 1)).await["status"],
        "applied",
        "guards are per account"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 70);
    app.assert_invariants().await;
}

async fn an_operator_applies_a_stale_event_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    out_of_order_pair(&app).await;
    let response = app
        .admin_post(APPLY_2, r#"{"note": "customer ticket 42"}"#)
        .await;
    let body = json_with_status(response, StatusCode::OK).await;
    assert_eq!(body["status"], "applied");
    assert_eq!(body["previous_status"], "stale");
    assert_eq!(body["balance_after_minor"], 750);
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    let entries = app.entries("acct_1").await;
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["event_id"], "msg_2");
    assert_eq!(entries[0]["operator_applied"], true);
    let event = app.event("demo", "msg_2").await;
    assert_eq!(event["status"], "applied");
    assert_eq!(event["audit"][0]["action"], "apply");
    assert_eq!(event["audit"][0]["note"], "customer ticket 42");
    assert_eq!(event["audit"][0]["previous_status"], "stale");

    let again = assert_error(
        app.admin_post(APPLY_2, "").await,
        StatusCode::CONFLICT,
        "wrong_status",
    )
    .await;
    assert_eq!(again["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    // The guard was not moved back: another sequence-1 debit is still stale.
    assert_eq!(
        app.send_ok(&debit_seq("msg_3", "acct_1", 1, 1)).await["status"],
        "stale"
    );
    app.assert_invariants().await;
}

async fn concurrent_applies_post_exactly_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    out_of_order_pair(&app).await;
    let responses = join_all((0..10).map(|_| app.admin_post(APPLY_2, ""))).await;
    let statuses: Vec<StatusCode> = responses.iter().map(|r| r.status()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::CONFLICT)
            .count(),
        9,
        "{statuses:?}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    assert_eq!(
        app.event("demo", "msg_2").await["audit"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    app.assert_invariants().await;
}

async fn dismiss_holds_no_money_and_ends_the_hold(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    out_of_order_pair(&app).await;
    app.send_ok(&hookledger::providers::Sample {
        currency: "QQQ".into(),
        ..credit("msg_3", "acct_1", 5)
    })
    .await;
    for id in ["msg_2", "msg_3"] {
        let response = app
            .admin_post(&format!("/admin/api/events/demo/{id}/dismiss"), "{}")
            .await;
        let body = json_with_status(response, StatusCode::OK).await;
        assert_eq!(body["status"], "dismissed");
        assert!(body["balance_after_minor"].is_null());
    }
    assert_eq!(
        app.event("demo", "msg_3").await["audit"][0]["previous_status"],
        "rejected"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    let body = assert_error(
        app.admin_post(APPLY_2, "").await,
        StatusCode::CONFLICT,
        "wrong_status",
    )
    .await;
    assert_eq!(body["status"], "dismissed");
    let body = assert_error(
        app.admin_post("/admin/api/events/demo/msg_1/dismiss", "")
            .await,
        StatusCode::CONFLICT,
        "wrong_status",
    )
    .await;
    assert_eq!(
        body["status"], "applied",
        "applied events cannot be dismissed"
    );
    assert_error(
        app.admin_post("/admin/api/events/demo/nope/apply", "")
            .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    app.assert_invariants().await;
}

async fn a_rejected_event_cannot_be_applied(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&hookledger::providers::Sample {
        currency: "QQQ".into(),
        ..credit("msg_1", "acct_1", 5)
    })
    .await;
    let path = "/admin/api/events/demo/msg_1/apply";
    let body = assert_error(
        app.admin_post(path, "").await,
        StatusCode::CONFLICT,
        "wrong_status",
    )
    .await;
    assert_eq!(body["status"], "rejected");
    assert!(
        app.event("demo", "msg_1").await["audit"]
            .as_array()
            .unwrap()
            .is_empty(),
        "nothing audited"
    );
    app.assert_invariants().await;
}

async fn on_stale_apply_applies_late_debits_without_moving_the_guard_back(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let app = &app;
    let lenient = |sample| async move {
        let response = app
            .deliver("lenient", "standard-webhooks", DEMO_SECRET, &sample)
            .await;
        json_with_status(response, StatusCode::OK).await
    };
    assert_eq!(
        lenient(credit_seq("msg_1", "acct_1", 1000, 2)).await["status"],
        "applied"
    );
    assert_eq!(
        lenient(debit_seq("msg_2", "acct_1", 250, 1)).await["status"],
        "applied"
    );
    assert_eq!(
        app.event("lenient", "msg_2").await["reason"],
        "applied out of order: sequence 1 below 2"
    );
    // Had the guard moved back to 1, this would be in order (no reason).
    lenient(debit_seq("msg_3", "acct_1", 5, 1)).await;
    assert_eq!(
        app.event("lenient", "msg_3").await["reason"],
        "applied out of order: sequence 1 below 2"
    );
    lenient(credit_seq("msg_4", "acct_1", 5, 2)).await;
    let in_order = app.event("lenient", "msg_4").await;
    assert!(in_order["reason"].is_null());
    assert_eq!(in_order["late"], false);
    assert_eq!(app.balance("acct_1", "USD").await, 750);
    app.assert_invariants().await;
}

async fn a_retried_old_event_is_still_recognised_as_old(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let t = now().timestamp();
    let old = body_of(&crate::helpers::credit_at("msg_old", "acct_1", 100, t - 60));
    let new = body_of(&crate::helpers::credit_at("msg_new", "acct_1", 200, t - 30));
    json_with_status(
        app.deliver_body_at("demo", "msg_new", &new, t - 30).await,
        StatusCode::OK,
    )
    .await;
    // The old event's first attempt failed; its retry is signed now, later
    // than the newer event, but its body still says when it happened.
    let answer = json_with_status(
        app.deliver_body_at("demo", "msg_old", &old, t).await,
        StatusCode::OK,
    )
    .await;
    // Recognised as late: a credit, so applied, marked late against the
    // newer event's time.
    assert_eq!(answer["status"], "applied");
    let event = app.event("demo", "msg_old").await;
    assert_eq!(event["late"], true);
    assert_eq!(
        event["reason"],
        format!(
            "applied out of order: sequence {} below {}",
            readable(t - 60),
            readable(t - 30)
        )
    );
    assert_eq!(app.balance("acct_1", "USD").await, 300);
    app.assert_invariants().await;
}

both_backends!(
    a_late_debit_is_held_as_stale,
    a_late_credit_applies_and_keeps_the_guard,
    on_stale_hold_holds_late_credits_too,
    equal_sequences_both_apply,
    an_operator_applies_a_stale_event_once,
    concurrent_applies_post_exactly_once,
    dismiss_holds_no_money_and_ends_the_hold,
    a_rejected_event_cannot_be_applied,
    on_stale_apply_applies_late_debits_without_moving_the_guard_back,
    a_retried_old_event_is_still_recognised_as_old,
);

/// A timestamp sequence as reasons show it: the number and its time.
fn readable(seconds: i64) -> String {
    let time = chrono::DateTime::from_timestamp(seconds, 0).unwrap();
    format!("{seconds} ({})", time.format("%Y-%m-%d %H:%M:%S UTC"))
}
