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
    let response = app.send(&sample).await;
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

/// A failure at the transaction's last statement (the ledger insert, made to
/// fail by a trigger) rolls back the intent, the guard and the balance too:
/// 500 without internals, nothing stored, and the retry is applied once.
async fn a_failure_at_the_ledger_insert_leaves_nothing_behind(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (install, remove) = match app.store() {
        hookledger::store::Store::Sqlite(..) => (
            "create trigger fail_ledger before insert on ledger_entries
             begin select raise(abort, 'injected failure'); end",
            "drop trigger fail_ledger",
        ),
        hookledger::store::Store::Postgres(..) => (
            "create function fail_ledger() returns trigger language plpgsql as
                 $$ begin raise exception 'injected failure'; end $$;
             create trigger fail_ledger before insert on ledger_entries
                 for each row execute function fail_ledger()",
            "drop trigger fail_ledger on ledger_entries; drop function fail_ledger()",
        ),
    };
    app.execute_sql(install).await.unwrap();
    let sample = crate::helpers::credit_seq("msg_1", "acct_1", 1500, 7);
    let response = app.send(&sample).await;
    let body = assert_error(response, StatusCode::INTERNAL_SERVER_ERROR, "internal").await;
    assert_eq!(body["message"], "internal error", "no internals leak");
    assert!(app.events().await.is_empty());
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.execute_sql(remove).await.unwrap();
    // Had the guard kept sequence 7, an event with sequence 6 would be stale.
    let earlier = crate::helpers::credit_seq("msg_0", "acct_1", 100, 6);
    assert_eq!(app.send_ok(&earlier).await["status"], "applied");
    let answer = app.send_ok(&sample).await;
    assert_eq!(
        (answer["status"].as_str(), answer["duplicate"].as_bool()),
        (Some("applied"), Some(false))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1600);
    app.assert_invariants().await;
}

both_backends!(
    a_failure_at_the_ledger_insert_leaves_nothing_behind,
    probes_answer,
    a_closed_database_answers_503,
    a_locked_database_answers_503_and_the_retry_applies_once,
);
