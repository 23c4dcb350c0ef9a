//! PostgreSQL only (a read-only server is a PostgreSQL state): a server
//! that refuses writes, as a standby behind an address that has not moved
//! yet, or a primary fenced read-only. Deliveries are answered 503 with
//! Retry-After, nothing is written, no connection stays on the server (the
//! refused write, SQLSTATE 25006, recycles the pool; a new connection to a
//! read-only server is refused), and once it takes writes again the pool
//! recovers and the provider's retry applies once.
//!
//! The refusal on connections already open is raised by a trigger (on a
//! real failover those connections die with their server); new sessions
//! are read-only through `alter database ... set
//! default_transaction_read_only`, which the shared server allows per
//! database.

use std::time::Duration;

use reqwest::StatusCode;
use sqlx::Connection;

use crate::helpers::{Backend, Options, TestApp, assert_error, credit};

const REFUSE_WRITES: &str = "
create function refuse_write() returns trigger language plpgsql as $$
begin
    raise exception 'cannot execute INSERT in a read-only transaction' using errcode = '25006';
end $$;
create trigger refuse_write before insert on intents
for each row execute function refuse_write();";

/// The backends the app holds on its database (`application_name`
/// `hookledger`, which the store sets), by pid.
async fn app_backends(admin: &mut sqlx::PgConnection, database: &str) -> Vec<i32> {
    sqlx::query_scalar(
        "select pid from pg_stat_activity
         where datname = $1 and application_name = 'hookledger' order by pid",
    )
    .bind(database)
    .fetch_all(admin)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_is_left_and_the_pool_recovers_when_it_takes_writes() {
    let test = "read_only::a_read_only_server_is_left_and_the_pool_recovers_when_it_takes_writes";
    let Some(backend) = Backend::postgres_or_skip(test) else {
        return;
    };
    let options = Options {
        database: "acquire_timeout_secs = 1",
        ..Options::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let database = app.database_url.rsplit('/').next().unwrap();
    let database = database.split('?').next().unwrap().to_owned();
    let mut admin = sqlx::PgConnection::connect(&app.database_url)
        .await
        .unwrap();
    app.send_ok(&credit("msg_before", "acct_1", 100)).await;
    let before = app_backends(&mut admin, &database).await;
    assert!(!before.is_empty(), "the app holds connections");

    // Read-only from now: the open connections refuse the write, new ones
    // are read-only.
    sqlx::raw_sql(REFUSE_WRITES)
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "alter database {database} set default_transaction_read_only = on"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    for attempt in 0..3 {
        let response = app.send(&credit("msg_during", "acct_1", 1500)).await;
        assert_eq!(response.headers()["retry-after"], "5", "attempt {attempt}");
        assert_error(response, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    }
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_error(ready, StatusCode::SERVICE_UNAVAILABLE, "unavailable").await;
    // None of the connections open before is left, and no new one stays.
    let mut left = app_backends(&mut admin, &database).await;
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = app_backends(&mut admin, &database).await;
    }
    assert_eq!(left, Vec::<i32>::new(), "before: {before:?}");

    // Writable again: the provider's retry applies once.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "alter database {database} reset default_transaction_read_only;
         drop trigger refuse_write on intents"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let applied = app.send_ok(&credit("msg_during", "acct_1", 1500)).await;
    assert_eq!(applied["duplicate"], false, "{applied}");
    let again = app.send_ok(&credit("msg_during", "acct_1", 1500)).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(app.balance("acct_1", "USD").await, 1600);
    let after = app_backends(&mut admin, &database).await;
    assert!(
        after.iter().all(|pid| !before.contains(pid)),
        "new connections: before {before:?}, after {after:?}"
    );
    app.assert_invariants().await;
}
