//! The store's connections to PostgreSQL speak TLS when the URL asks for it
//! (production's default `sslmode=prefer` takes TLS wherever the server
//! offers it). The rest of the suite may run with `sslmode=disable`, which
//! `.ci/run` sets: a TLS handshake in an unoptimised build costs each test
//! most of a second.

use std::str::FromStr;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use crate::helpers::{Backend, TestApp, credit};

/// `url` with its `sslmode` set to `mode` (any other parameter kept).
fn with_sslmode(url: &str, mode: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("sslmode="))
        .collect();
    let wanted = format!("sslmode={mode}");
    params.push(&wanted);
    format!("{base}?{}", params.join("&"))
}

#[test]
fn sslmode_is_replaced_or_added() {
    assert_eq!(
        with_sslmode("postgres://u@h/db?sslmode=disable&x=1", "require"),
        "postgres://u@h/db?x=1&sslmode=require"
    );
    assert_eq!(
        with_sslmode("postgres://u@h/db", "require"),
        "postgres://u@h/db?sslmode=require"
    );
}

async fn plain_connection(url: &str) -> PgConnection {
    let options = PgConnectOptions::from_str(&with_sslmode(url, "disable")).expect("a valid URL");
    PgConnection::connect_with(&options)
        .await
        .expect("the test server answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_connects_over_tls_when_required() {
    let test = "postgres_tls::the_store_connects_over_tls_when_required";
    let Some(Backend::Postgres(url)) = Backend::postgres_or_skip(test) else {
        return;
    };
    let mut admin = plain_connection(&url).await;
    let (ssl,): (String,) = sqlx::query_as("show ssl")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    if ssl != "on" {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but the test PostgreSQL server has TLS off: {test} cannot run"
        );
        eprintln!("SKIPPED {test}: the test PostgreSQL server has TLS off");
        return;
    }
    let app = TestApp::spawn(Backend::Postgres(with_sslmode(&url, "require"))).await;
    app.send_ok(&credit("msg_tls", "acct_1", 1500)).await;
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    let database = app.database_url.rsplit('/').next().unwrap();
    let database = database.split('?').next().unwrap();
    let (tls, all): (i64, i64) = sqlx::query_as(
        "select count(*) filter (where s.ssl), count(*)
         from pg_stat_ssl s join pg_stat_activity a using (pid)
         where a.datname = $1",
    )
    .bind(database)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert!(all > 0, "the app holds connections to {database}");
    assert_eq!(tls, all, "every connection to {database} is TLS");
    app.assert_invariants().await;
}
