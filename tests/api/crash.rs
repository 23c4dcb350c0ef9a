//! SIGKILL in the middle of a release cascade, then a restart: the real
//! binary parks a long contiguous backlog, the number that closes the gap
//! arrives, and the process is killed while the drain task is applying the
//! backlog in bounded transactions. After the restart every event is applied
//! exactly once, in sequence order, and nothing that should have been
//! released is left waiting.

use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use futures::stream;
use hookledger::cli::signed_sample;
use hookledger::providers::Sample;
use hookledger::secret::Secret;
use hookledger::store::Store;
use serde_json::Value;

use crate::helpers::{ADMIN_TOKEN, Backend, DEMO_SECRET};
use crate::process::Server;

/// Parked before the gap closes; released 2 per transaction.
const BACKLOG: i64 = 1000;

fn config(database_url: &str) -> String {
    format!(
        r#"database_url = "{database_url}"
[admin]
token = "{ADMIN_TOKEN}"
[[sources]]
name = "ledger"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
ordering = "contiguous"
release_batch = 2
"#
    )
}

/// Signs event `sequence` now (the binary runs on the real clock) and
/// delivers it; returns the JSON answer.
async fn deliver(client: &reqwest::Client, server: &Server, sequence: i64) -> Value {
    let sample = Sample {
        event_id: format!("e{sequence}"),
        event_type: None,
        account_id: "acct_1".into(),
        amount_minor: 100 + sequence,
        currency: "USD".into(),
        sequence: Some(sequence),
        timestamp: Utc::now().timestamp(),
        payment: None,
    };
    let signed = signed_sample("standard-webhooks", &Secret::new(DEMO_SECRET), &sample).unwrap();
    let mut request = client
        .post(format!("{}/webhooks/ledger", server.base()))
        .body(signed.body);
    for (name, value) in &signed.headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    response.json().await.unwrap()
}

/// A count, read straight from the database while the binary runs.
async fn count(database: &Store, sql: &'static str) -> i64 {
    match database {
        Store::Sqlite(pool, ..) => sqlx::query_scalar(sql).fetch_one(pool).await,
        Store::Postgres(pool, ..) => sqlx::query_scalar(sql).fetch_one(pool).await,
    }
    .unwrap()
}

/// Every ledger entry's event id, oldest entry first.
async fn event_ids_in_entry_order(database: &Store) -> Vec<String> {
    const SQL: &str = "select event_id from ledger_entries order by entry_id";
    match database {
        Store::Sqlite(pool, ..) => sqlx::query_scalar(SQL).fetch_all(pool).await,
        Store::Postgres(pool, ..) => sqlx::query_scalar(SQL).fetch_all(pool).await,
    }
    .unwrap()
}

async fn waiting(database: &Store) -> i64 {
    count(
        database,
        "select count(*) from intents where status = 'waiting'",
    )
    .await
}

async fn a_killed_release_cascade_finishes_after_a_restart(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (database_url, _postgres) =
        crate::postgres::database_for(&backend, &dir.path().join("hookledger.db")).await;
    crate::helpers::write_config(dir.path().join("hookledger.toml"), config(&database_url))
        .unwrap();
    let mut server = Server::start(dir.path(), &[], "admin page");
    let client = hookledger::tls::client();
    let parked: Vec<Value> = stream::iter(2..=BACKLOG + 1)
        .map(|sequence| deliver(&client, &server, sequence))
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(parked.iter().all(|a| a["status"] == "waiting"));

    let closing = deliver(&client, &server, 1).await;
    assert_eq!(closing["released"], 2);
    // Kill once the drain task has committed at least one step of its own.
    let database = crate::postgres::side_store(&database_url).await;
    let mut left = BACKLOG - 2;
    for _ in 0..2000 {
        left = waiting(&database).await;
        if left < BACKLOG - 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    server.kill();
    let at_kill = waiting(&database).await;
    assert!(
        at_kill > 0 && at_kill < BACKLOG - 2,
        "killed mid-cascade ({left} then {at_kill} waiting)"
    );

    let restarted = Server::start(dir.path(), &[], "admin page");
    for _ in 0..600 {
        if waiting(&database).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(waiting(&database).await, 0, "the restart released the rest");
    let account = restarted
        .admin(ADMIN_TOKEN, "/admin/api/accounts/acct_1")
        .await;
    let expected_sum: i64 = (1..=BACKLOG + 1).map(|s| 100 + s).sum();
    assert_eq!(account["balances"][0]["balance_minor"], expected_sum);
    let entries = count(&database, "select count(*) from ledger_entries").await;
    assert_eq!(entries, BACKLOG + 1, "each event applied once");
    // Entry order is sequence order, over the whole ledger.
    let applied = event_ids_in_entry_order(&database).await;
    let expected: Vec<String> = (1..=BACKLOG + 1).map(|s| format!("e{s}")).collect();
    assert!(applied == expected, "ledger entries out of sequence order");
    let check = restarted.admin(ADMIN_TOKEN, "/admin/api/check").await;
    assert_eq!(check["ok"], true, "{check}");
    // A provider's redelivery after the restart changes nothing.
    let again = deliver(&client, &restarted, 7).await;
    assert_eq!(again["duplicate"], true);
}

both_backends!(a_killed_release_cascade_finishes_after_a_restart);
