//! PostgreSQL with a synchronous standby that is gone: a COMMIT waits for
//! it, and PostgreSQL bounds that wait with nothing (`statement_timeout`
//! is off during the commit). hookledger bounds the group client side
//! (`database.statement_timeout_ms`): past it the delivery is answered 503
//! with Retry-After, never 200, since whether its COMMIT took effect is
//! unknown, and the connection is closed, not given back to the pool. Once
//! the standby question is settled (here the operator stops waiting for
//! it), the commit completes, the provider's retry is a duplicate, and the
//! credit is applied once. On a server of the test's own
//! (`pg_cluster`), since the setting is the whole server's.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::helpers::{Backend, Options, TestApp, assert_error, credit};
use crate::pg_cluster::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_waiting_for_a_gone_standby_is_answered_503_and_applied_once() {
    let test = "sync_standby::a_commit_waiting_for_a_gone_standby_is_answered_503_and_applied_once";
    if Backend::postgres_or_skip(test).is_none() {
        return;
    }
    let cluster = Cluster::new();
    let primary = cluster.primary("primary", "");
    let options = Options {
        database: "statement_timeout_ms = 1000\nacquire_timeout_secs = 2",
        ..Options::default()
    };
    let app = TestApp::spawn_with(Backend::Postgres(primary.url("postgres")), options).await;
    app.send_ok(&credit("msg_before", "acct_1", 100)).await;

    // From now every commit waits for a standby named `gone`.
    primary.set("synchronous_standby_names", "gone").await;
    let sent = Instant::now();
    let response = tokio::time::timeout(
        Duration::from_secs(20),
        app.send(&credit("msg_waiting", "acct_1", 1500)),
    )
    .await
    .expect("answered, not left waiting with the commit");
    let waited = sent.elapsed();
    assert_eq!(response.headers()["retry-after"], "5");
    assert_error(response, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    assert!(
        waited < Duration::from_secs(5),
        "answered after the group's bound of 1 s, not the standby: {waited:?}"
    );
    // The commit still waits on the server, on a connection the app has
    // closed.
    primary
        .until(
            "select count(*) = 1 from pg_stat_activity where wait_event = 'SyncRep'",
            Duration::from_secs(5),
        )
        .await;

    // The operator stops waiting for the standby: the commit completes.
    primary.set("synchronous_standby_names", "").await;
    primary
        .until(
            "select count(*) = 0 from pg_stat_activity where wait_event = 'SyncRep'",
            Duration::from_secs(10),
        )
        .await;
    let retried = app.send_ok(&credit("msg_waiting", "acct_1", 1500)).await;
    assert_eq!(retried["duplicate"], true, "{retried}");
    let next = app.send_ok(&credit("msg_after", "acct_1", 10)).await;
    assert_eq!(next["duplicate"], false, "{next}");
    assert_eq!(app.balance("acct_1", "USD").await, 1610);
    app.assert_invariants().await;
}
