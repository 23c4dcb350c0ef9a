//! Reconcile against a real third-party Stripe fake (`localstripe`): the
//! payments made while hookledger never got their webhooks are found in
//! Stripe's record of events by one `hookledger reconcile` run, or by the
//! sweep inside `serve`, and credited once; a second run recovers nothing,
//! and a webhook that arrives later is a duplicate.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::browser::{login, page};
use crate::fake_api::{FakeApi, Reply};
use crate::fixtures::{signed, stripe_payment};
use crate::helpers::*;
use crate::localstripe::{LocalStripe, free_port};
use crate::process::run_with_config as cli;

pub(crate) const SECRET: &str = "whsec_localstripe_secret";

/// A Stripe source reading localstripe (whose PaymentIntents carry `amount`,
/// not `amount_received`); its sweep every `interval` seconds (0: only on
/// demand), its requests 50 ms apart rather than a test key's 500.
pub(crate) fn source(api_base: &str, interval: u64) -> String {
    format!(
        r#"
[[sources]]
name = "ls"
kind = "stripe"
scope = "ls"
secrets = ["{SECRET}"]
amount_path = "data.object.amount"

[sources.reconcile]
api_key = "sk_test_hookledger"
api_base = "{api_base}"
interval_secs = {interval}
request_gap_ms = 50
"#
    )
}

pub(crate) async fn app(backend: Backend, sources: &str) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options {
            extra_sources: sources,
            ..Options::default()
        },
    )
    .await
}

/// A folder with a config for `app`'s database and `sources`.
pub(crate) fn config_dir(app: &TestApp, sources: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::helpers::write_config(
        dir.path().join("hookledger.toml"),
        format!(
            "database_url = \"{}\"\ndata_dir = \"{}\"\n[admin]\ntoken = \"{ADMIN_TOKEN}\"\n{sources}",
            app.database_url,
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    dir
}

/// `hookledger reconcile --source ls --json`: its summary.
pub(crate) fn reconcile(dir: &tempfile::TempDir) -> Value {
    let (ok, out) = cli(dir.path(), &["reconcile", "--source", "ls", "--json"]);
    assert!(ok, "{out}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

async fn payments_missed_during_an_outage_are_credited_once(backend: Backend) {
    let Some(stripe) = LocalStripe::start("reconcile::payments_missed_during_an_outage").await
    else {
        return;
    };
    // The endpoint is down: every webhook fails.
    let down = format!("http://127.0.0.1:{}/webhooks/ls", free_port());
    stripe.send_webhooks_to(&down, SECRET).await;
    let sources = source(&stripe.base, 0);
    let app = app(backend, &sources).await;
    // More than two pages of Stripe's 100.
    let paid = stripe.pay(205, "acct_ls", 1500);
    assert_eq!(paid.len(), 205);
    assert_eq!(app.balance("acct_ls", "USD").await, 0);

    let dir = config_dir(&app, &sources);
    let first = reconcile(&dir);
    assert_eq!(first["source"], "ls");
    assert_eq!(first["recovered"], 205, "{first}");
    assert_eq!(first["statuses"], serde_json::json!({"applied": 205}));
    assert_eq!(first["already_stored"], 0);
    assert!(first["cursor"].is_string(), "{first}");
    assert_eq!(app.balance("acct_ls", "USD").await, 205 * 1500);
    let recovered = json_with_status(
        app.admin_get("/admin/api/events?source=ls&origin=reconcile&limit=500")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(recovered["events"].as_array().unwrap().len(), 205);
    let webhooks = json_with_status(
        app.admin_get("/admin/api/events?source=ls&origin=webhook")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(webhooks["events"], serde_json::json!([]));

    // Again: the overlap is read again, and nothing is applied twice.
    let second = reconcile(&dir);
    assert_eq!(second["recovered"], 0, "{second}");
    assert_eq!(second["already_stored"], 205, "{second}");
    // Stripe's webhook for one of them, late: a duplicate, and no
    // conflict although its bytes are the webhook's, not the API's.
    let event = stripe.events().await.swap_remove(0);
    let request = signed("stripe", SECRET, &event, "");
    let late = json_with_status(app.post_signed("ls", &request).await, StatusCode::OK).await;
    assert_eq!(late["duplicate"], true, "{late}");
    let stored = app.event("ls", event["id"].as_str().unwrap()).await;
    assert_eq!(stored["origin"], "reconcile");
    assert_eq!(stored["conflicts"], 0, "{stored}");
    let cookie = login(&app).await;
    let id = stored["event_id"].as_str().unwrap();
    let html = page(&app, &format!("/admin/event?source=ls&id={id}"), &cookie).await;
    assert!(
        html.contains("Fetched from the provider's API over TLS"),
        "{html}"
    );
    for (origin, lists) in [("reconcile", true), ("webhook", false)] {
        let path = format!("/admin/events?origin={origin}&id={id}");
        let listed = page(&app, &path, &cookie).await;
        assert_eq!(listed.contains(&format!(">{id}</a>")), lists, "{listed}");
    }
    assert_eq!(app.balance("acct_ls", "USD").await, 205 * 1500);
    app.assert_invariants().await;
}

async fn the_sweep_inside_serve_recovers_without_a_command(backend: Backend) {
    let Some(stripe) = LocalStripe::start("reconcile::the_sweep_inside_serve").await else {
        return;
    };
    let app = app(backend, &source(&stripe.base, 1)).await;
    stripe.pay(3, "acct_sweep", 700);
    let mut balance = 0;
    for _ in 0..100 {
        balance = app.balance("acct_sweep", "USD").await;
        if balance == 2100 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(balance, 2100);
    // Webhooks that do arrive are not credited again by the sweep.
    stripe
        .send_webhooks_to(&app.url("/webhooks/ls"), SECRET)
        .await;
    stripe.pay(2, "acct_sweep", 700);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.balance("acct_sweep", "USD").await, 3500);
    app.assert_invariants().await;
    // What the sweep did, in Prometheus: the three it found at least (the
    // last two may have been found before their webhooks came), and the
    // window left of Stripe's 30 days.
    let recovered = scraped(&app, r#"hookledger_reconcile_recovered_total{source="ls"}"#).await;
    assert!((3..=5).contains(&recovered), "{recovered}");
    let now = chrono::Utc::now().timestamp();
    let last = scraped(
        &app,
        r#"hookledger_reconcile_last_success_timestamp_seconds{source="ls"}"#,
    )
    .await;
    assert!((now - 60..=now + 60).contains(&last), "{last}");
    let left = scraped(
        &app,
        r#"hookledger_reconcile_window_left_seconds{source="ls"}"#,
    )
    .await;
    assert!(left > 29 * 24 * 3600, "{left}");
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains("<td>ls</td><td>1 s</td>"),
        "the sweep's row: {dashboard}"
    );
}

async fn a_refused_key_is_said_with_the_source_and_fails_the_command(backend: Backend) {
    // Stripe's answer to a revoked key, which echoes the key masked; this
    // one echoes it whole.
    let refused = Reply {
        status: 401,
        retry_after: None,
        body: r#"{"error": {"message": "Invalid API Key provided: sk_test_hookledger"}}"#.into(),
    };
    let (app, _api, out) = failed_run(backend, vec![refused]).await;
    assert!(
        out.contains(
            "source ls: the provider refused the API key: HTTP 401: Invalid API Key provided: <key>"
        ),
        "{out}"
    );
    assert!(
        !out.contains("sk_test_hookledger"),
        "the key is never shown: {out}"
    );
    let runs = app.store().reconcile_runs().await.unwrap();
    assert!(!runs[0].last_outcome.as_deref().unwrap().contains("sk_test"));
}

/// A recovered event the source could not map (rejected, held) counts the
/// webhook's different bytes as a conflict, for a person to compare: the
/// API may render an event at another API version than the endpoint's.
async fn a_held_recovered_event_counts_a_differing_webhook_as_a_conflict(backend: Backend) {
    let mut unmapped = stripe_payment("evt_h1", "pi_h1", 900);
    unmapped["data"]["object"]["metadata"] = serde_json::json!({});
    let api = FakeApi::start(vec![Reply::ok(list(&[unmapped], false))]).await;
    let sources = source(&api.base, 0);
    let app = app(backend, &sources).await;
    let summary = reconcile(&config_dir(&app, &sources));
    assert_eq!(
        summary["statuses"],
        serde_json::json!({"rejected": 1}),
        "{summary}"
    );
    let webhook = stripe_payment("evt_h1", "pi_h1", 900);
    let request = signed("stripe", SECRET, &webhook, "");
    let late = json_with_status(app.post_signed("ls", &request).await, StatusCode::OK).await;
    assert_eq!(late["duplicate"], true, "{late}");
    let held = app.event("ls", "evt_h1").await;
    assert_eq!(held["status"], "rejected");
    assert_eq!(held["conflicts"], 1, "{held}");
    assert!(held["conflict_sha256"].is_string(), "{held}");
}

/// A run from `--since` later than where the next run reads from leaves
/// the cursor: the stretch before it is read by the next sweep.
async fn a_since_after_the_cursor_keeps_the_cursor(backend: Backend) {
    let api = FakeApi::start(vec![Reply::ok(list(&[], false))]).await;
    let sources = source(&api.base, 0);
    let app = app(backend, &sources).await;
    let dir = config_dir(&app, &sources);
    let first = reconcile(&dir);
    let cursor = first["cursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let (ok, out) = cli(
        dir.path(),
        &["reconcile", "--source", "ls", "--since", "1m", "--json"],
    );
    assert!(ok, "{out}");
    let later: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(later["cursor"], cursor, "{later}");
    let (ok, out) = cli(
        dir.path(),
        &["reconcile", "--source", "ls", "--since", "2d", "--json"],
    );
    assert!(ok, "{out}");
    let earlier: Value = serde_json::from_str(out.trim()).unwrap();
    assert_ne!(
        earlier["cursor"], cursor,
        "a window from before it moves it: {earlier}"
    );
}

/// `name` of the Prometheus text at `app`'s `/metrics` (0 if absent).
async fn scraped(app: &TestApp, series: &str) -> i64 {
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(series))
        .and_then(|rest| rest.trim().parse::<f64>().ok())
        .map_or(0, |v| v as i64)
}

/// Two instances on one database, both sweeping every second: every
/// missed payment is credited once, and between them they recover each
/// once.
async fn two_instances_sweeping_one_source_credit_each_payment_once(backend: Backend) {
    let Some(stripe) = LocalStripe::start("reconcile::two_instances_sweeping").await else {
        return;
    };
    let sources = source(&stripe.base, 1);
    let first = app(backend, &sources).await;
    let second = first
        .another_instance_with(&Options {
            extra_sources: &sources,
            ..Options::default()
        })
        .await;
    stripe.pay(30, "acct_two", 500);
    for _ in 0..100 {
        if first.balance("acct_two", "USD").await == 15_000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A few more sweeps by each: nothing more.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(first.balance("acct_two", "USD").await, 15_000);
    assert_eq!(first.entries("acct_two").await.len(), 30);
    let series = r#"hookledger_reconcile_recovered_total{source="ls"}"#;
    let recovered = scraped(&first, series).await + scraped(&second, series).await;
    assert_eq!(recovered, 30);
    first.assert_invariants().await;
}

/// `hookledger reconcile` against a fake API answering `script`, which
/// must fail: the app, the fake, and what the command said.
async fn failed_run(backend: Backend, script: Vec<Reply>) -> (TestApp, FakeApi, String) {
    let api = FakeApi::start(script).await;
    let sources = source(&api.base, 0);
    let app = app(backend, &sources).await;
    let dir = config_dir(&app, &sources);
    let (ok, out) = cli(dir.path(), &["reconcile", "--source", "ls"]);
    assert!(!ok, "{out}");
    (app, api, out)
}

/// A page of Stripe's list: `events`, and whether more follow.
pub(crate) fn list(events: &[Value], has_more: bool) -> Value {
    serde_json::json!({"object": "list", "data": events, "has_more": has_more})
}

/// A provider whose pages lead back to one already read (A, B, A) is
/// stopped at once, nothing written, not read until the page limit.
async fn pages_that_loop_stop_the_run(backend: Backend) {
    let a = list(&[stripe_payment("evt_la", "pi_la", 100)], true);
    let b = list(&[stripe_payment("evt_lb", "pi_lb", 100)], true);
    let (app, api, out) = failed_run(
        backend,
        vec![
            Reply::ok(a.clone()),
            Reply::ok(b),
            Reply::ok(a),
            Reply::ok(list(&[], false)),
        ],
    )
    .await;
    assert!(out.contains("the next page is one already read"), "{out}");
    assert_eq!(api.asked().len(), 3, "{:?}", api.asked());
    assert_eq!(app.balance("acct_1", "USD").await, 0);
}

async fn a_429_is_waited_out_as_its_retry_after_says(backend: Backend) {
    let api = FakeApi::start(vec![
        Reply::status(429, Some(1)),
        Reply::ok(list(&[stripe_payment("evt_p1", "pi_p1", 900)], false)),
    ])
    .await;
    let sources = source(&api.base, 0);
    let app = app(backend, &sources).await;
    let summary = reconcile(&config_dir(&app, &sources));
    assert_eq!(summary["recovered"], 1, "{summary}");
    // One listing per type the source maps; the first waited a second.
    let asked = api.asked();
    assert!(asked.len() >= 2, "{asked:?}");
    assert!(
        asked[1].1 - asked[0].1 >= Duration::from_millis(950),
        "Retry-After: 1 was waited out"
    );
    assert!(
        asked[0].0.starts_with("/v1/events?limit=100&type="),
        "{asked:?}"
    );
    assert!(asked[0].0.contains("&created%5Bgte%5D="), "{asked:?}");
    assert_eq!(app.balance("acct_1", "USD").await, 900);
}

async fn a_page_not_as_documented_stops_the_run_before_anything_is_written(backend: Backend) {
    let first = list(&[stripe_payment("evt_m1", "pi_m1", 900)], true);
    let broken = serde_json::json!({"object": "list", "data": {"id": "evt_m2"}, "has_more": false});
    let (app, api, out) = failed_run(backend, vec![Reply::ok(first), Reply::ok(broken)]).await;
    assert!(
        out.contains(
            "source ls: the provider's answer is not a page of events: data is not a list"
        ),
        "{out}"
    );
    // The second page asked for the first one's last id.
    assert!(
        api.asked()[1].0.ends_with("&starting_after=evt_m1"),
        "{:?}",
        api.asked()
    );
    // Page one's payment was not applied: nothing is written before every
    // page is read, and the cursor stays where it was.
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    let runs = app.store().reconcile_runs().await.unwrap();
    assert_eq!(runs[0].read_through_ms, None);
    assert!(
        runs[0]
            .last_outcome
            .as_deref()
            .unwrap()
            .contains("not a page of events"),
        "{runs:?}"
    );
    // The dashboard says the source's reconcile stopped, and why.
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    let row = dashboard
        .split("<tr>")
        .find(|row| row.starts_with("<td>ls</td><td>on demand</td>"))
        .unwrap_or_else(|| panic!("{dashboard}"));
    assert!(row.contains("<td class=\"time\">never</td>"), "{row}");
    assert!(
        row.contains("stopped</span> source ls: the provider"),
        "{row}"
    );
}

/// Two instances never run one source's reconcile at once: the lease is
/// taken in one conditional statement, lapses, and only its holder records
/// the run's end and moves the cursor.
async fn the_lease_keeps_two_runs_of_one_source_apart(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let store = app.store();
    let lease = store
        .take_reconcile_lease("ls", "a", 1_000, 500)
        .await
        .unwrap();
    assert_eq!(lease.map(|l| l.read_through_ms), Some(None));
    assert!(
        store
            .take_reconcile_lease("ls", "b", 1_400, 500)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .take_reconcile_lease("ls", "a", 1_400, 500)
            .await
            .unwrap()
            .is_some(),
        "renewed"
    );
    // Lapsed: another instance takes it, and the first records nothing.
    assert!(
        store
            .take_reconcile_lease("ls", "b", 1_900, 500)
            .await
            .unwrap()
            .is_some()
    );
    let end = |owner, outcome| hookledger::store::RunEnd {
        source: "ls",
        owner,
        now_ms: 2_000,
        started_ms: 1_950,
        outcome,
        recovered: 3,
    };
    assert!(
        !store
            .finish_reconcile(&end("a", Ok(Some(1_000))))
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_reconcile(&end("b", Ok(Some(1_900))))
            .await
            .unwrap()
    );
    let runs = store.reconcile_runs().await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].read_through_ms, Some(1_900));
    assert_eq!(runs[0].last_success_ms, Some(1_950), "when it started");
    assert_eq!(runs[0].recovered, 3);
    // A run that stops keeps the cursor and says why.
    let lease = store
        .take_reconcile_lease("ls", "a", 2_100, 500)
        .await
        .unwrap();
    assert_eq!(lease.map(|l| l.read_through_ms), Some(Some(1_900)));
    assert!(
        store
            .finish_reconcile(&end("a", Err("network")))
            .await
            .unwrap()
    );
    let runs = store.reconcile_runs().await.unwrap();
    assert_eq!(runs[0].read_through_ms, Some(1_900));
    assert_eq!(runs[0].last_outcome.as_deref(), Some("network"));
    assert_eq!(runs[0].recovered, 6);
    // Complete, but a --since window after the cursor: the cursor stays.
    store
        .take_reconcile_lease("ls", "a", 2_200, 500)
        .await
        .unwrap();
    assert!(store.finish_reconcile(&end("a", Ok(None))).await.unwrap());
    let runs = store.reconcile_runs().await.unwrap();
    assert_eq!(runs[0].read_through_ms, Some(1_900));
    assert_eq!(runs[0].last_success_ms, Some(1_950));
}

both_backends!(
    pages_that_loop_stop_the_run,
    a_held_recovered_event_counts_a_differing_webhook_as_a_conflict,
    a_since_after_the_cursor_keeps_the_cursor,
    two_instances_sweeping_one_source_credit_each_payment_once,
    a_429_is_waited_out_as_its_retry_after_says,
    a_page_not_as_documented_stops_the_run_before_anything_is_written,
    the_lease_keeps_two_runs_of_one_source_apart,
    payments_missed_during_an_outage_are_credited_once,
    the_sweep_inside_serve_recovers_without_a_command,
    a_refused_key_is_said_with_the_source_and_fails_the_command,
);

/// PostgreSQL: the sweep reads and writes through a pool of its own (two
/// connections), so deliveries never wait for a connection it holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeps_connections_are_apart_from_the_deliveries() {
    let Some(backend) = Backend::postgres_or_skip(
        "reconcile::the_sweeps_connections_are_apart_from_the_deliveries",
    ) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let main = app.store();
    let before = main.pool_usage();
    let side = main.side(2);
    assert_eq!(side.pool_usage().max, 2);
    assert!(before.max > 2, "{}", before.max);
    assert!(side.reconcile_runs().await.unwrap().is_empty());
    assert_eq!(side.pool_usage().open, 1);
    assert_eq!(main.pool_usage().max, before.max);
}
