//! Graceful shutdown of the real binary: a delivery in flight at SIGTERM or
//! Ctrl-C is
//! either committed and answered 200, or (past `shutdown_timeout_secs`)
//! rolled back and unanswered (or answered 503, when its wait for the
//! database ends first as the process stops), and then its redelivery
//! applies it once. Never committed and unanswered, never answered 200 and
//! rolled back. The delivery is held in flight by the
//! database: on PostgreSQL a trigger pauses its transaction at the intent
//! insert; on SQLite another connection holds the write lock it waits for.

use std::path::Path;
use std::time::Duration;

use hookledger::cli::{SignedRequest, signed_sample};
use hookledger::providers::Sample;
use hookledger::secret::Secret;
use sqlx::{Connection, SqliteConnection};

use crate::helpers::Backend;
use crate::pause::{PAUSE, Pause};
use crate::postgres::TestDatabase;
use crate::process::Server;

const PAUSE_INSERTS: &str = "
create trigger pause_insert before insert on intents
for each row execute function pause()";

/// What holds a delivery in flight.
enum Hold {
    Postgres(Pause),
    Sqlite(SqliteConnection),
}

impl Hold {
    async fn take(database_url: &str) -> Hold {
        if database_url.starts_with("postgres") {
            let mut setup = sqlx::PgConnection::connect(database_url).await.unwrap();
            for sql in [PAUSE, PAUSE_INSERTS] {
                sqlx::raw_sql(sql).execute(&mut setup).await.unwrap();
            }
            Hold::Postgres(Pause::hold_on(database_url).await)
        } else {
            let mut connection = SqliteConnection::connect(database_url).await.unwrap();
            sqlx::raw_sql("begin immediate")
                .execute(&mut connection)
                .await
                .unwrap();
            Hold::Sqlite(connection)
        }
    }

    /// Until the delivery is stuck on the hold.
    async fn until_held(&mut self) {
        match self {
            Hold::Postgres(pause) => pause.until_waiting_on("advisory").await,
            // Nothing to observe: the write lock's wait is inside SQLite.
            Hold::Sqlite(_) => tokio::time::sleep(Duration::from_millis(800)).await,
        }
    }

    async fn release(self) {
        match self {
            Hold::Postgres(mut pause) => pause.release().await,
            Hold::Sqlite(mut connection) => {
                sqlx::raw_sql("rollback")
                    .execute(&mut connection)
                    .await
                    .unwrap();
            }
        }
    }
}

/// The demo's credit, signed now (the binary's clock is real).
pub(crate) fn delivery(dir: &Path, event_id: &str) -> SignedRequest {
    let secret = std::fs::read_to_string(dir.join("data/demo_secret")).unwrap();
    let sample = Sample {
        event_id: event_id.to_owned(),
        event_type: None,
        account_id: "acct_1".to_owned(),
        amount_minor: 1500,
        currency: "USD".to_owned(),
        sequence: Some(1),
        timestamp: chrono::Utc::now().timestamp(),
        payment: None,
    };
    signed_sample("standard-webhooks", &Secret::new(secret.trim()), &sample).unwrap()
}

pub(crate) async fn post(
    base: &str,
    request: &SignedRequest,
) -> Result<(u16, String), reqwest::Error> {
    let mut post = hookledger::tls::client()
        .post(format!("{base}/webhooks/demo"))
        .body(request.body.clone());
    for (name, value) in &request.headers {
        post = post.header(*name, value);
    }
    let response = post.send().await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}

/// A delivery the stop cut off: unanswered, or answered 503 (its wait for
/// the database ended as the process stopped, and nothing committed),
/// never 200.
fn assert_cut_off(answer: &Result<(u16, String), reqwest::Error>) {
    assert!(
        matches!(answer, Err(_) | Ok((503, _))),
        "cut off, unanswered or 503: {answer:?}"
    );
}

/// The demo server on `database_url` with a shutdown bound (and a drain
/// of a second: these tests are about what comes after it).
fn start(dir: &Path, database_url: &str, shutdown_secs: &str) -> Server {
    start_draining(dir, database_url, shutdown_secs, "1")
}

fn start_draining(dir: &Path, database_url: &str, shutdown_secs: &str, drain_secs: &str) -> Server {
    let env = [
        ("HOOKLEDGER_DATABASE_URL", database_url),
        ("HOOKLEDGER_SHUTDOWN_TIMEOUT_SECS", shutdown_secs),
        ("HOOKLEDGER_DRAIN_SECS", drain_secs),
        ("HOOKLEDGER_DATABASE_BUSY_TIMEOUT_MS", "20000"),
    ];
    Server::start(dir, &env, "note")
}

async fn database(backend: &Backend, dir: &Path) -> (String, Option<TestDatabase>) {
    match backend {
        Backend::Postgres(url) => {
            let database = TestDatabase::create(url).await;
            (database.url.clone(), Some(database))
        }
        Backend::Sqlite => {
            std::fs::create_dir_all(dir.join("data")).unwrap();
            (
                format!("sqlite://{}/data/hookledger.db", dir.display()),
                None,
            )
        }
    }
}

/// The event's balance after a restart on the same database: the event
/// applied once, and a redelivery of it is a duplicate.
async fn applied_once(dir: &Path, database_url: &str, event_id: &str) {
    let server = start(dir, database_url, "25");
    let again = post(&server.base(), &delivery(dir, event_id))
        .await
        .unwrap();
    assert_eq!(again.0, 200, "{again:?}");
    assert!(again.1.contains(r#""duplicate":true"#), "{again:?}");
    let token = server.value("admin token");
    let account = server.admin(&token, "/admin/api/accounts/acct_1").await;
    assert_eq!(account["balances"][0]["balance_minor"], 1500);
    assert_eq!(server.admin(&token, "/admin/api/check").await["ok"], true);
}

/// Ctrl-C (SIGINT) stops as gracefully as SIGTERM (actix's own handling
/// would stop at once on it).
async fn a_delivery_in_flight_at_ctrl_c_is_committed_and_answered(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = database(&backend, dir.path()).await;
    let mut server = start(dir.path(), &url, "20");
    let base = server.base();
    let mut hold = Hold::take(&url).await;
    let request = delivery(dir.path(), "msg_inflight");
    let in_flight = tokio::spawn({
        let base = base.clone();
        async move { post(&base, &request).await }
    });
    hold.until_held().await;
    server.signal("INT");
    // Stopped accepting: a new connection is refused while the delivery
    // is still in flight.
    let mut refused = false;
    for _ in 0..40 {
        if hookledger::tls::client()
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused, "still accepting after Ctrl-C");
    hold.release().await;
    let answer = in_flight.await.unwrap().expect("answered");
    assert_eq!(answer.0, 200, "{answer:?}");
    assert!(answer.1.contains(r#""status":"applied""#), "{answer:?}");
    let status = server.exit_status(Duration::from_secs(20)).expect("exited");
    assert!(status.success(), "exit {status:?}");
    assert!(server.log().contains("shutting down"), "{}", server.log());
    applied_once(dir.path(), &url, "msg_inflight").await;
}

/// Past the bound, the process exits with the delivery unanswered (or
/// answered 503); its transaction rolls back, and the provider's
/// redelivery applies it once.
async fn past_the_bound_a_delivery_is_rolled_back_and_redelivered(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = database(&backend, dir.path()).await;
    let mut server = start(dir.path(), &url, "1");
    let base = server.base();
    let mut hold = Hold::take(&url).await;
    let request = delivery(dir.path(), "msg_cut");
    let in_flight = tokio::spawn({
        let base = base.clone();
        async move { post(&base, &request).await }
    });
    hold.until_held().await;
    server.signal("TERM");
    let status = server.exit_status(Duration::from_secs(20)).expect("exited");
    assert!(status.success(), "exit {status:?}");
    let answer = in_flight.await.unwrap();
    assert_cut_off(&answer);
    hold.release().await;
    let server = start(dir.path(), &url, "25");
    let redelivered = post(&server.base(), &delivery(dir.path(), "msg_cut"))
        .await
        .unwrap();
    assert!(
        redelivered.1.contains(r#""duplicate":false"#) && redelivered.1.contains("applied"),
        "rolled back, so the redelivery applies: {redelivered:?}"
    );
    drop(server);
    applied_once(dir.path(), &url, "msg_cut").await;
}

/// A second Ctrl-C stops at once (exit 130), whatever the bound; what was
/// in flight is cut off unanswered and rolls back.
async fn a_second_ctrl_c_stops_at_once(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = database(&backend, dir.path()).await;
    let mut server = start(dir.path(), &url, "600");
    let base = server.base();
    let mut hold = Hold::take(&url).await;
    let request = delivery(dir.path(), "msg_twice");
    let in_flight = tokio::spawn(async move { post(&base, &request).await });
    hold.until_held().await;
    server.signal("INT");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.exit_status(Duration::ZERO).is_none(),
        "the first waits"
    );
    server.signal("INT");
    let status = server.exit_status(Duration::from_secs(10));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(130),
        "the second stops it at once (the bound is 600 s, the database 20 s)"
    );
    assert_cut_off(&in_flight.await.unwrap());
    hold.release().await;
    assert!(server.log().contains("stopping now"), "{}", server.log());
}

/// SIGTERM, as a load balancer would see it from outside: `/readyz`
/// answers 503 (`draining`, with Retry-After) at once, while `/healthz` and
/// deliveries are still answered on new connections, each answer closing
/// its connection; a delivery held in flight across the drain is committed
/// and answered; after the drain new connections are refused, and the
/// process exits 0 within the drain and the shutdown bound.
async fn sigterm_drains_first_then_stops(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = database(&backend, dir.path()).await;
    let (drain_secs, shutdown_secs) = (4, 10);
    let mut server = start_draining(
        dir.path(),
        &url,
        &shutdown_secs.to_string(),
        &drain_secs.to_string(),
    );
    let base = server.base();
    let get = |path: &str| {
        hookledger::tls::client()
            .get(format!("{base}{path}"))
            .send()
    };
    assert_eq!(get("/readyz").await.unwrap().status(), 200);
    let mut hold = Hold::take(&url).await;
    let held = delivery(dir.path(), "msg_held");
    let in_flight = tokio::spawn({
        let base = base.clone();
        async move { post(&base, &held).await }
    });
    hold.until_held().await;
    let signalled = std::time::Instant::now();
    server.signal("TERM");
    let ready = loop {
        let ready = get("/readyz").await.expect("still accepting");
        if ready.status() == 503 {
            break ready;
        }
        assert!(signalled.elapsed() < Duration::from_secs(1), "not draining");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(ready.headers()["retry-after"], "5");
    assert_eq!(ready.headers()["connection"], "close");
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["error"], "draining", "{body}");
    assert_eq!(
        get("/healthz").await.expect("still accepting").status(),
        200
    );
    hold.release().await;
    let answer = in_flight.await.unwrap().expect("answered");
    assert_eq!(answer.0, 200, "{answer:?}");
    // A new delivery, on a new connection, during the drain.
    let during = post(&base, &delivery(dir.path(), "msg_during"))
        .await
        .expect("served while draining");
    assert_eq!(during.0, 200, "{during:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(drain_secs),
        "the checks above ran within the drain"
    );
    let mut refused_at = None;
    while signalled.elapsed() < Duration::from_secs(drain_secs + shutdown_secs) {
        if get("/healthz").await.is_err() {
            refused_at = Some(signalled.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused_at = refused_at.expect("refused after the drain");
    assert!(
        refused_at >= Duration::from_secs(drain_secs),
        "accepting for the whole drain, refused at {refused_at:?}"
    );
    let status = server
        .exit_status(Duration::from_secs(shutdown_secs))
        .expect("exited within the bound");
    assert!(status.success(), "exit {status:?}");
    eprintln!(
        "drain of {drain_secs} s: refused from {refused_at:?}, exited {:?} after SIGTERM",
        signalled.elapsed()
    );
    assert!(server.log().contains("draining"), "{}", server.log());
    drop(server);
    let server = start(dir.path(), &url, "25");
    let token = server.value("admin token");
    let account = server.admin(&token, "/admin/api/accounts/acct_1").await;
    assert_eq!(account["balances"][0]["balance_minor"], 3000, "{account}");
    assert_eq!(server.admin(&token, "/admin/api/check").await["ok"], true);
}

crate::both_backends!(
    sigterm_drains_first_then_stops,
    a_second_ctrl_c_stops_at_once,
    a_delivery_in_flight_at_ctrl_c_is_committed_and_answered,
    past_the_bound_a_delivery_is_rolled_back_and_redelivered,
);
