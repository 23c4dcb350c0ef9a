//! Two instances on one database, each with its own group writer, under a
//! mixed load on the same accounts: contiguous streams (each event decided
//! alone, parked and released) and high-water credits (runs, decided in
//! memory and written set-based), shuffled, every delivery to one instance
//! or the other and a tenth of them to both at once. The two writers'
//! groups name the same accounts in the orders their arrivals give; each
//! takes its write keys (`store::WriteKeys`) before any row, so on
//! PostgreSQL one waits for the other and none deadlocks (before the keys,
//! this load made some 30 deadlocks, each ended by PostgreSQL and run
//! again). A 503 (a transient error) is retried as a provider would. So
//! every delivery ends answered 200, every contiguous stream ends applied
//! in exact order, every balance is exactly its events' sum, and
//! PostgreSQL counted no deadlock.

use futures::StreamExt;
use futures::stream;
use hookledger::providers::Sample;

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Backend, DEMO_SECRET, TestApp, credit_seq, json_with_status};
use crate::ordering_load::{account, event, shuffle, signed};

const ACCOUNTS: i64 = 4;
const EACH: i64 = 60;
const SENDERS: usize = 32;

/// A `demo` (high-water) credit of account `a`.
fn plain(a: i64, n: i64) -> Sample {
    credit_seq(&format!("D{a}_{n}"), &account(a), 7 + n, 1_000 + n)
}

/// Delivers `sample` until it is answered 200, retrying a 503 as a
/// provider would (a handful of times); its answer.
pub async fn sent(app: &TestApp, source: &str, sample: &Sample) -> Value {
    for _ in 0..20 {
        let response = app
            .deliver(source, "standard-webhooks", DEMO_SECRET, sample)
            .await;
        if response.status() != StatusCode::SERVICE_UNAVAILABLE {
            return json_with_status(response, StatusCode::OK).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{} answered 503 twenty times", sample.event_id);
}

async fn two_writers_on_one_database(backend: Backend) {
    let first = TestApp::spawn(backend).await;
    let second = first.another_instance().await;
    let numbered: Vec<(&str, Sample)> = (0..ACCOUNTS)
        .flat_map(|a| (1..=EACH).map(move |s| ("ledger", event(a, s))))
        .collect();
    let plain: Vec<(&str, Sample)> = (0..ACCOUNTS)
        .flat_map(|a| (0..EACH).map(move |n| ("demo", plain(a, n))))
        .collect();
    let all: Vec<(&str, Sample)> = numbered.iter().chain(&plain).cloned().collect();
    // (instance, source, sample): each once, a tenth also to the other.
    let mut sends: Vec<(usize, &str, &Sample)> = all
        .iter()
        .enumerate()
        .map(|(i, (source, sample))| (i % 2, *source, sample))
        .collect();
    sends.extend(
        all.iter()
            .enumerate()
            .step_by(10)
            .map(|(i, (source, sample))| (1 - i % 2, *source, sample)),
    );
    let apps = [&first, &second];
    shuffle(&mut sends, 0x2_0001);
    let answers: Vec<_> = stream::iter(sends)
        .map(|(instance, source, sample)| sent(apps[instance], source, sample))
        .buffer_unordered(SENDERS)
        .collect()
        .await;
    let first_deliveries = answers.iter().filter(|a| a["duplicate"] == false).count();
    assert_eq!(first_deliveries, all.len(), "each event new exactly once");
    for a in 0..ACCOUNTS {
        // The stream's entries, in ledger order, are its numbers in order.
        let mut entries = second.entries(&account(a)).await;
        entries.reverse();
        let streamed: Vec<String> = entries
            .iter()
            .filter_map(|e| e["event_id"].as_str())
            .filter(|id| id.starts_with('e'))
            .map(str::to_owned)
            .collect();
        let wanted: Vec<String> = (1..=EACH).map(|s| event(a, s).event_id).collect();
        assert_eq!(streamed, wanted, "entry order of {}", account(a));
        let sum: i64 = all
            .iter()
            .filter(|(_, s)| s.account_id == account(a))
            .map(|(_, s)| signed(s))
            .sum();
        assert_eq!(
            first.balance(&account(a), "USD").await,
            sum,
            "{}",
            account(a)
        );
    }
    first.assert_invariants().await;
    if matches!(first.store(), hookledger::store::Store::Postgres(..)) {
        // Every group took its keys before its rows: none waited for
        // another in a cycle (`store::write::keys`).
        assert_eq!(crate::postgres::deadlocks(&first).await, 0);
    }
}

crate::both_backends!(two_writers_on_one_database);
