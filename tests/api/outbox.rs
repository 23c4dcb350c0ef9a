//! The outbox end to end: instance A posts and tells instance B, a second
//! hookledger whose `standard-webhooks` source verifies A's signature and
//! whose ledger shows the effect downstream happened exactly once.

use std::time::{Duration, Instant};

use chrono::Utc;
use hookledger::store::{OutboxEntry, Replay, Store};

use crate::helpers::*;

/// The secret A signs with and B's `upstream` source verifies.
pub const FORWARD_SECRET: &str = "whsec_aG9va2xlZGdlci1vdXRib3gtdGVzdC1rZXk=";

/// B's source for A's `ledger.posted` messages: credits read from the
/// message's own fields, numbered by `account_seq`.
fn upstream_source() -> String {
    format!(
        r#"
[[sources]]
name = "upstream"
kind = "standard-webhooks"
secrets = ["{FORWARD_SECRET}"]
credit_types = ["ledger.posted"]
account_path = "account_id"
amount_path = "amount_minor"
currency_path = "currency"
sequence_path = "account_seq"
"#
    )
}

/// An http destination `name` at `url`, with `extra` lines.
pub fn http_destination(name: &str, url: &str, extra: &str) -> String {
    format!(
        r#"
[[destinations]]
name = "{name}"
kind = "http"
url = "{url}"
secret = "{FORWARD_SECRET}"
{extra}
"#
    )
}

/// A store of `app`'s database, of the test's own, that routes postings to
/// `destinations` (config text) the app itself does not have: only relays
/// the test starts on it send their messages. With the destinations, to
/// start those relays with.
pub async fn side_store_routing(
    app: &TestApp,
    destinations: &str,
) -> (Store, Vec<hookledger::config::Destination>) {
    let text = format!("[admin]\ntoken = \"{ADMIN_TOKEN}\"\n{destinations}");
    crate::helpers::keep_config_copy(&text);
    let config = hookledger::config::from_toml(&text, &|_| None).unwrap();
    let store = crate::postgres::side_store(&app.database_url)
        .await
        .with_routes(hookledger::config::routes(&config.destinations));
    (store, config.destinations)
}

/// A test app with `destinations` (config text) after its sources.
pub async fn app_with(backend: Backend, destinations: &str) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options {
            extra_sources: destinations,
            ..Options::default()
        },
    )
    .await
}

/// A test app with `destinations` that writes their messages and sends
/// none (as `serve --no-relay`).
pub async fn writer_with(backend: Backend, destinations: &str) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options {
            extra_sources: destinations,
            no_relay: true,
            ..Options::default()
        },
    )
    .await
}

/// The rows `sql` selects from the app's database, on either backend.
pub async fn selected<T>(app: &TestApp, sql: &'static str) -> Vec<T>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
        + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
        + Send
        + Unpin,
{
    match app.store() {
        hookledger::store::Store::Sqlite(pool, ..) => sqlx::query_as(sql).fetch_all(pool).await,
        hookledger::store::Store::Postgres(pool, ..) => sqlx::query_as(sql).fetch_all(pool).await,
    }
    .unwrap()
}

/// Waits until `destination` has nothing pending; its messages.
pub async fn drained(app: &TestApp, destination: &str, within: Duration) -> Vec<OutboxEntry> {
    drained_in(app.store(), destination, within).await
}

/// The same for any store (a real binary's database, read from the side).
pub async fn drained_in(store: &Store, destination: &str, within: Duration) -> Vec<OutboxEntry> {
    let started = Instant::now();
    loop {
        let stats = store.outbox_stats(destination).await.unwrap();
        if stats.pending == 0 {
            return store
                .outbox_messages(destination, 0, 100_000)
                .await
                .unwrap();
        }
        assert!(
            started.elapsed() < within,
            "{destination} still has {} pending after {within:?}",
            stats.pending
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first of `destination`'s rows whose attempt failed, once one has
/// (the claim counts the attempt before the send; its outcome is recorded
/// after): not delivered, with its reason.
pub async fn first_failure(store: &Store, destination: &str) -> (OutboxEntry, String) {
    let started = Instant::now();
    let row = loop {
        let rows = store.outbox_messages(destination, 0, 10).await.unwrap();
        if let Some(row) = rows.into_iter().find(|r| r.last_error.is_some()) {
            break row;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never tried");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_ne!(row.state, "delivered");
    let error = row.last_error.clone().unwrap_or_default();
    (row, error)
}

/// A config for the real binary: `database_url`, the `demo` source, and
/// one destination `name` with `keys` (its kind's and any other).
pub fn binary_config(database_url: &str, name: &str, keys: &str) -> String {
    format!(
        r#"database_url = "{database_url}"
[admin]
token = "{ADMIN_TOKEN}"
[[sources]]
name = "demo"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
[[destinations]]
name = "{name}"
{keys}"#
    )
}

/// Instance B: its `upstream` source receives A's messages.
async fn downstream_instance(backend: &Backend) -> TestApp {
    let b = TestApp::spawn_with(
        backend.clone(),
        Options {
            extra_sources: &upstream_source(),
            ..Options::default()
        },
    )
    .await;
    // B checks A's fresh signature timestamps against its own clock.
    b.clock.set(Utc::now());
    b
}

async fn a_posting_reaches_a_second_instance_once(backend: Backend) {
    let b = downstream_instance(&backend).await;
    let destination = http_destination(
        "downstream",
        &b.url("/webhooks/upstream"),
        "events = [\"ledger.posted\"]\nordered_by_account = true",
    );
    let a = app_with(backend, &destination).await;
    let mut expected = std::collections::BTreeMap::new();
    for i in 0..30 {
        let account = format!("cus_{}", i % 4);
        let amount = 100 + i;
        a.send_ok(&credit(&format!("evt_{i}"), &account, amount))
            .await;
        // Every third one redelivered: no second message.
        if i % 3 == 0 {
            a.send_ok(&credit(&format!("evt_{i}"), &account, amount))
                .await;
        }
        *expected.entry(account).or_insert(0) += amount;
    }
    let messages = drained(&a, "downstream", Duration::from_secs(30)).await;
    assert_eq!(messages.len(), 30, "one message per posting");
    assert!(messages.iter().all(|m| m.state == "delivered"));
    for (account, sum) in &expected {
        assert_eq!(a.balance(account, "USD").await, *sum);
        assert_eq!(b.balance(account, "USD").await, *sum, "B's {account}");
    }
    // Every message again (a consumer that lost its copy asks for a
    // replay): the ids are the same, so B counts duplicates, not money.
    let replay = Replay {
        destination: "downstream".into(),
        state: "delivered".into(),
        since: None,
        account_id: None,
    };
    assert_eq!(a.store().replay_outbox(&replay).await.unwrap(), 30);
    let again = drained(&a, "downstream", Duration::from_secs(30)).await;
    assert!(again.iter().all(|m| m.state == "delivered"));
    for (account, sum) in &expected {
        assert_eq!(
            b.balance(account, "USD").await,
            *sum,
            "B's {account} after replay"
        );
    }
    let downstream = b.events().await;
    assert_eq!(downstream.len(), 30);
    assert!(downstream.iter().all(|e| e["status"] == "applied"));
    assert!(downstream.iter().all(|e| e["deliveries"] == 2));
    a.assert_invariants().await;
    b.assert_invariants().await;
}

/// While the destination's secret is rotated (the new one listed first,
/// the old one still there), every message carries a signature by each: a
/// consumer still holding only the old secret verifies it, so the two
/// sides need not switch at the same moment.
async fn a_consumer_with_only_the_older_secret_verifies_during_rotation(backend: Backend) {
    let b = downstream_instance(&backend).await;
    let destination = format!(
        r#"
[[destinations]]
name = "downstream"
kind = "http"
url = "{}"
secret = ["{ROTATED_IN}", "{FORWARD_SECRET}"]
events = ["ledger.posted"]
timeout_secs = 2
"#,
        b.url("/webhooks/upstream")
    );
    let a = app_with(backend, &destination).await;
    a.send_ok(&credit("evt_1", "cus_1", 250)).await;
    let messages = drained(&a, "downstream", Duration::from_secs(20)).await;
    assert_eq!(
        (messages[0].state.as_str(), messages[0].attempts),
        ("delivered", 1),
        "{messages:?}"
    );
    assert_eq!(b.balance("cus_1", "USD").await, 250);
}

/// The secret a rotation brings in, which B does not know yet.
const ROTATED_IN: &str = "whsec_aG9va2xlZGdlci1vdXRib3gtcm90YXRlZC1pbi1rZXk=";

both_backends!(
    a_posting_reaches_a_second_instance_once,
    a_consumer_with_only_the_older_secret_verifies_during_rotation,
);
