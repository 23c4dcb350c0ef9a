//! A reconcile run killed with SIGKILL in the middle of applying what it
//! listed: what it committed stays once, the event in flight rolls back,
//! and the next run (once the dead run's lease lapses, within 15 s)
//! finishes the job with nothing applied twice. On PostgreSQL the kill is
//! forced at one event with the pause trigger (`pause`); on both backends
//! a run of 1,000 events is killed wherever it is once some are applied
//! (a SQLite write in flight rolls back by its journal).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::Backend;
use crate::fake_api::{FakeApi, Reply};
use crate::fixtures::stripe_payment;
use crate::pause::{PAUSE, Pause};
use crate::process::{hookledger, run_with_config as cli};
use crate::reconcile::{app, config_dir, list, source};

/// Stops the run's insert of the third event, after the insert.
const PAUSE_THIRD: &str = "
create trigger pause_third after insert on intents
for each row when (new.event_id = 'evt_k2') execute function pause();";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_killed_mid_way_is_finished_by_the_next_with_nothing_twice() {
    let Some(backend) =
        Backend::postgres_or_skip("reconcile_crash::a_run_killed_mid_way_is_finished_by_the_next")
    else {
        return;
    };
    let events: Vec<Value> = (0..5)
        .map(|n| stripe_payment(&format!("evt_k{n}"), &format!("pi_k{n}"), 100))
        .collect();
    let api = FakeApi::start(vec![Reply::ok(list(&events, false))]).await;
    let sources = source(&api.base, 0);
    let app = app(backend, &sources).await;
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_THIRD).await.unwrap();
    let dir = config_dir(&app, &sources);

    let mut pause = Pause::hold(&app).await;
    let mut run = hookledger(dir.path())
        .arg("--config")
        .arg(dir.path().join("hookledger.toml"))
        .args(["reconcile", "--source", "ls"])
        .spawn()
        .unwrap();
    pause.until_waiting_on("advisory").await;
    run.kill().unwrap();
    run.wait().unwrap();
    pause.release().await;
    // The two before it committed; the third rolled back with its client.
    let mut applied = 0;
    for _ in 0..50 {
        applied = app.balance("acct_1", "USD").await;
        if app.entries("acct_1").await.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(applied, 200);
    app.execute_sql("drop trigger pause_third on intents")
        .await
        .unwrap();

    // The dead run's lease lapses; then the next run finishes the job.
    let started = Instant::now();
    let summary = loop {
        let (ok, out) = cli(dir.path(), &["reconcile", "--source", "ls", "--json"]);
        if ok {
            break serde_json::from_str::<Value>(out.trim()).unwrap();
        }
        assert!(
            out.contains("being reconciled by another instance"),
            "{out}"
        );
        assert!(started.elapsed() < Duration::from_secs(40), "{out}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    assert_eq!(summary["recovered"], 3, "{summary}");
    assert_eq!(summary["already_stored"], 2, "{summary}");
    assert_eq!(app.balance("acct_1", "USD").await, 500);
    assert_eq!(app.entries("acct_1").await.len(), 5);
    app.assert_invariants().await;
}

/// Kills the run once part of its 1,000 events are applied, wherever it
/// is; the next run finishes, each event once.
async fn a_run_killed_part_way_is_finished_once(backend: Backend) {
    const COUNT: i64 = 1_000;
    let pages: Vec<Reply> = (0..10)
        .map(|page| {
            let events: Vec<Value> = (0..100)
                .map(|n| {
                    let n = page * 100 + n;
                    stripe_payment(&format!("evt_part{n:05}"), &format!("pi_part{n:05}"), 100)
                })
                .collect();
            Reply::ok(list(&events, page < 9))
        })
        .collect();
    // Each run lists every page before it writes: 10 pages for the first
    // type the source maps, one empty page for each of its four others;
    // then the same for the second run (the scripted API answers in turn).
    let empty = Reply::ok(list(&[], false));
    let one_run = pages.into_iter().chain(vec![empty; 4]);
    let api = FakeApi::start(one_run.clone().chain(one_run).collect()).await;
    let sources = source(&api.base, 0);
    let app = app(backend, &sources).await;
    let dir = config_dir(&app, &sources);
    let mut run = hookledger(dir.path())
        .arg("--config")
        .arg(dir.path().join("hookledger.toml"))
        .args(["reconcile", "--source", "ls"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let part = loop {
        let balance = app.balance("acct_1", "USD").await;
        if balance > 0 {
            run.kill().unwrap();
            break balance;
        }
        assert!(Instant::now() < deadline, "the run applied nothing");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    run.wait().unwrap();
    let killed_at = app.balance("acct_1", "USD").await;
    assert!(
        killed_at < COUNT * 100,
        "killed part way: {part} then {killed_at} of {}",
        COUNT * 100
    );

    let started = Instant::now();
    let summary = loop {
        let (ok, out) = cli(dir.path(), &["reconcile", "--source", "ls", "--json"]);
        if ok {
            break serde_json::from_str::<Value>(out.trim()).unwrap();
        }
        assert!(
            out.contains("being reconciled by another instance"),
            "{out}"
        );
        assert!(started.elapsed() < Duration::from_secs(40), "{out}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let recovered = summary["recovered"].as_i64().unwrap();
    assert_eq!(recovered, COUNT - killed_at / 100, "{summary}");
    assert_eq!(summary["already_stored"], killed_at / 100, "{summary}");
    // Each credit once: one more would pass the sum.
    assert_eq!(app.balance("acct_1", "USD").await, COUNT * 100);
    app.assert_invariants().await;
}

both_backends!(a_run_killed_part_way_is_finished_once);
