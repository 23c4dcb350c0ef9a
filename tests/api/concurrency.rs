//! Many deliveries at once, with redeliveries interleaved: the invariants hold
//! and balances are exactly the expected sums.

use std::collections::HashMap;

use futures::future::join_all;
use hookledger::providers::Sample;
use reqwest::StatusCode;

use crate::helpers::{Backend, TestApp, credit, credit_seq, debit_seq, json_with_status};

const ACCOUNTS: usize = 5;

fn account(i: usize) -> String {
    format!("acct_{}", i % ACCOUNTS)
}

/// Event i: every 7th is a debit, amounts all different.
fn event(i: usize) -> Sample {
    let event_type = (i % 7 == 3).then(|| "balance.debit".to_owned());
    Sample {
        event_type,
        ..credit(&format!("msg_{i}"), &account(i), 100 + i as i64)
    }
}

/// What every account holds before a test's debits, so that none of them is
/// held for `negative_balance` (not what these tests are about).
const OPENING: i64 = 1_000_000;

/// Credits each of the first `accounts` accounts with [`OPENING`] at
/// `sequence`, below every sequence the test sends.
async fn open_accounts(app: &TestApp, accounts: usize, sequence: Option<i64>) {
    for a in 0..accounts {
        let opening = match sequence {
            Some(sequence) => credit_seq(&format!("open_{a}"), &account(a), OPENING, sequence),
            None => credit(&format!("open_{a}"), &account(a), OPENING),
        };
        assert_eq!(app.send_ok(&opening).await["status"], "applied");
    }
}

/// A fixed shuffle (xorshift), so a failure reproduces.
fn shuffled(mut order: Vec<usize>) -> Vec<usize> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order
}

async fn two_hundred_concurrent_deliveries_sum_exactly(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    open_accounts(&app, ACCOUNTS, None).await;
    let events: Vec<Sample> = (0..100).map(event).collect();
    let answers = join_all(
        shuffled((0..100).chain(0..100).collect())
            .into_iter()
            .map(|i| app.send_ok(&events[i])),
    )
    .await;
    assert_eq!(answers.len(), 200);
    assert_eq!(
        answers.iter().filter(|a| a["duplicate"] == false).count(),
        100
    );
    assert!(
        answers.iter().all(|a| a["status"] == "applied"),
        "equal sequences all apply"
    );

    let mut expected: HashMap<String, i64> = (0..ACCOUNTS).map(|a| (account(a), OPENING)).collect();
    for (i, sample) in events.iter().enumerate() {
        let sign = if sample.event_type.is_some() { -1 } else { 1 };
        *expected.entry(account(i)).or_default() += sign * sample.amount_minor;
    }
    for (account, sum) in expected {
        assert_eq!(app.balance(&account, "USD").await, sum, "{account}");
        assert_eq!(app.entries(&account).await.len(), 100 / ACCOUNTS + 1);
    }
    app.assert_invariants().await;
}

async fn concurrent_late_debits_are_held_and_everything_else_applies(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    open_accounts(&app, 3, Some(-1)).await;
    // 60 events with distinct sequences across 3 accounts, every 4th a
    // debit, delivered at once in a scrambled order: late credits apply, late
    // debits are held, nothing is lost.
    let events: Vec<Sample> = (0..60)
        .map(|i| {
            let sample = credit_seq(
                &format!("msg_{i}"),
                &account(i % 3),
                10 + i as i64,
                i as i64,
            );
            if i % 4 == 1 {
                debit_seq(
                    &sample.event_id,
                    &sample.account_id,
                    sample.amount_minor,
                    i as i64,
                )
            } else {
                sample
            }
        })
        .collect();
    let order = shuffled((0..60).collect());
    let answers = join_all(order.iter().map(|&i| app.send_ok(&events[i]))).await;
    let stale: Vec<String> = answers
        .iter()
        .filter(|a| a["status"] == "stale")
        .map(|a| a["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        answers.iter().filter(|a| a["status"] == "applied").count() + stale.len(),
        60
    );
    for id in &stale {
        let i: usize = id["msg_".len()..].parse().unwrap();
        assert_eq!(i % 4, 1, "only debits are held, not {id}");
    }
    for newest in ["msg_57", "msg_58", "msg_59"] {
        assert_eq!(
            app.event("demo", newest).await["status"],
            "applied",
            "nothing is newer than {newest}"
        );
    }
    // However the deliveries interleaved, each guard ended at its account's
    // highest sequence (57, 58, 59): a debit one below it is late.
    for (a, below_newest) in [(0, 56), (1, 57), (2, 58)] {
        let probe = debit_seq(&format!("probe_{a}"), &account(a), 1, below_newest);
        assert_eq!(
            app.send_ok(&probe).await["status"],
            "stale",
            "guard of {}",
            account(a)
        );
        let dismiss = format!("/admin/api/events/demo/probe_{a}/dismiss");
        json_with_status(app.admin_post(&dismiss, "").await, StatusCode::OK).await;
    }
    app.assert_invariants().await;
    // Every held event can be applied once; then every event is in.
    for id in &stale {
        let response = app
            .admin_post(&format!("/admin/api/events/demo/{id}/apply"), "")
            .await;
        json_with_status(response, StatusCode::OK).await;
    }
    for a in 0..3 {
        let sum: i64 = events
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 == a)
            .map(|(i, s)| {
                if i % 4 == 1 {
                    -s.amount_minor
                } else {
                    s.amount_minor
                }
            })
            .sum::<i64>();
        assert_eq!(app.balance(&account(a), "USD").await, OPENING + sum);
    }
    app.assert_invariants().await;
}

/// Two instances on one database, the same events delivered to both at once:
/// every event is applied exactly once.
async fn two_instances_share_one_database(backend: Backend) {
    let first = TestApp::spawn(backend).await;
    let second = first.another_instance().await;
    open_accounts(&first, ACCOUNTS, None).await;
    let events: Vec<Sample> = (0..40).map(event).collect();
    let deliveries = events
        .iter()
        .flat_map(|e| [first.send_ok(e), second.send_ok(e)]);
    let answers = join_all(deliveries).await;
    assert_eq!(
        answers.iter().filter(|a| a["duplicate"] == false).count(),
        40
    );
    for a in 0..ACCOUNTS {
        let expected: i64 = events
            .iter()
            .enumerate()
            .filter(|(i, _)| i % ACCOUNTS == a)
            .map(|(_, s)| {
                if s.event_type.is_some() {
                    -s.amount_minor
                } else {
                    s.amount_minor
                }
            })
            .sum::<i64>();
        assert_eq!(second.balance(&account(a), "USD").await, OPENING + expected);
    }
    first.assert_invariants().await;
}

/// The same new event delivered several times at once (a provider's retry
/// racing its first attempt, on two connections): exactly one delivery
/// applies it, every other one is answered 200 as a duplicate, none fails.
/// On PostgreSQL the losers of the insert race wait for the winner's row
/// and must then count as duplicates, not fail on the intent's second key.
async fn simultaneous_first_deliveries_apply_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let events: Vec<Sample> = (0..30)
        .map(|i| credit(&format!("race_{i}"), "acct_race", 10 + i as i64))
        .collect();
    let deliveries = events
        .iter()
        .flat_map(|e| std::iter::repeat_n(e, 4))
        .map(|e| app.send(e));
    let mut applied = HashMap::new();
    for answer in join_all(deliveries).await {
        let body = json_with_status(answer, StatusCode::OK).await;
        if body["duplicate"] == false {
            *applied.entry(body["event_id"].to_string()).or_insert(0) += 1;
        }
    }
    assert_eq!(applied.len(), 30, "{applied:?}");
    assert!(applied.values().all(|&n| n == 1), "{applied:?}");
    let expected: i64 = events.iter().map(|e| e.amount_minor).sum();
    assert_eq!(app.balance("acct_race", "USD").await, expected);
    app.assert_invariants().await;
}

both_backends!(
    simultaneous_first_deliveries_apply_once,
    two_instances_share_one_database,
    two_hundred_concurrent_deliveries_sum_exactly,
    concurrent_late_debits_are_held_and_everything_else_applies,
);

/// The insert race above cannot be forced from outside PostgreSQL (both
/// inserts must pass the `on conflict` pre-check at the same moment), so
/// its recognition is pinned here: a second row with the same (source,
/// event_id) in another scope violates exactly the key a lost race
/// violates, and that error, and only it, is the one retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_recognises_the_key_a_lost_insert_race_violates() {
    let test = "concurrency::postgres_recognises_the_key_a_lost_insert_race_violates";
    let Some(backend) = Backend::postgres_or_skip(test) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("evt_k", "acct_k", 5)).await;
    let error = app
        .execute_sql(
            "create temp table twin as select * from intents where event_id = 'evt_k';
             update twin set scope = 'another scope', intent_id = intent_id + 1000000;
             insert into intents overriding system value select * from twin;",
        )
        .await
        .unwrap_err();
    let error = hookledger::store::StoreError::from(error);
    assert!(error.lost_first_delivery_race(), "{error:?}");
    // Any other unique violation is not retried.
    let other = app
        .execute_sql(
            "insert into ledger_entries overriding system value select * from ledger_entries",
        )
        .await
        .unwrap_err();
    let code = other.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("23505"), "{other:?}");
    let other = hookledger::store::StoreError::from(other);
    assert!(!other.lost_first_delivery_race(), "{other:?}");
}
