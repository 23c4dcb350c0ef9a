//! Two instances on one database under a steady load, with operators
//! acting on held events while deliveries to the same accounts go on:
//! nothing lost, nothing applied twice, and on PostgreSQL no deadlock.
//!
//! Each round, for every account at once: a `demo` (high-water) credit,
//! then a debit numbered below it (late: held `stale`), which an operator
//! applies or dismisses on either instance while the next rounds run; and
//! three `ledger` (contiguous) numbers sent out of order (the last first:
//! parked, then released by the gap-filler). Every delivery goes to one
//! instance or the other, every fifth to both at once. An apply posts to
//! the account under the same keys as the deliveries (`store::WriteKeys`).
//!
//! Short by default (a few seconds); `HOOKLEDGER_SOAK_SECONDS=600` runs
//! the ten-minute one (run it alone, PostgreSQL:
//! `cargo test --test api -- operators_racing::postgres`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use futures::future::join_all;
use hookledger::providers::Sample;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Backend, TestApp, credit_seq};
use crate::samples::debit_seq;
use crate::two_writers::sent;

const ACCOUNTS: usize = 6;
const CREDIT: i64 = 10;
const NUMBERED: i64 = 5;
const DEBIT: i64 = 3;

fn seconds() -> u64 {
    std::env::var("HOOKLEDGER_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

/// To `apps[first]`, and every fifth time to the other as well, at once:
/// the answer that was not a duplicate's, if one was (else the first).
async fn send(
    apps: [&TestApp; 2],
    first: usize,
    twice: bool,
    source: &str,
    sample: &Sample,
) -> Value {
    if !twice {
        return sent(apps[first], source, sample).await;
    }
    let (a, b) = tokio::join!(
        sent(apps[first], source, sample),
        sent(apps[1 - first], source, sample)
    );
    assert!(
        a["duplicate"] == true || b["duplicate"] == true,
        "one of two is a duplicate: {a} {b}"
    );
    if a["duplicate"] == true { b } else { a }
}

/// One account's rounds until `until`; the debits an operator applied.
async fn rounds(
    apps: [&TestApp; 2],
    account: usize,
    until: Instant,
    applied: Arc<AtomicI64>,
) -> i64 {
    let name = format!("acct_{account}");
    let mut operators = Vec::new();
    let mut round: i64 = 0;
    while Instant::now() < until {
        let pick = |n: i64| ((round + n + account as i64) % 2) as usize;
        let twice = |n: i64| (round * 5 + n) % 5 == account as i64 % 5;
        let credit = credit_seq(
            &format!("c{account}_{round}"),
            &name,
            CREDIT,
            100 * round + 2,
        );
        let debit = debit_seq(
            &format!("d{account}_{round}"),
            &name,
            DEBIT,
            100 * round + 1,
        );
        let answer = send(apps, pick(0), twice(0), "demo", &credit).await;
        assert_eq!(answer["status"], "applied", "{answer}");
        let answer = send(apps, pick(1), twice(1), "demo", &debit).await;
        assert_eq!(answer["status"], "stale", "{answer}");
        // The operator acts while the next rounds' deliveries run.
        let apply = (round + account as i64) % 3 != 0;
        let operator = apps[pick(2)];
        let event = debit.event_id.clone();
        let applied = applied.clone();
        operators.push(async move {
            let action = if apply { "apply" } else { "dismiss" };
            let response = operator
                .admin_post(
                    &format!("/admin/api/events/demo/{event}/{action}"),
                    r#"{"note": "soak"}"#,
                )
                .await;
            assert_eq!(response.status(), StatusCode::OK, "{action} {event}");
            if apply {
                applied.fetch_add(1, Ordering::Relaxed);
            }
        });
        if operators.len() >= 4 {
            join_all(operators.drain(..2)).await;
        }
        let number = |n: i64| credit_seq(&format!("n{account}_{n}"), &name, NUMBERED, n);
        let last = send(apps, pick(3), twice(3), "ledger", &number(3 * round + 3)).await;
        assert_eq!(last["status"], "waiting", "{last}");
        for n in [1, 2] {
            let answer = send(
                apps,
                pick(3 + n),
                twice(3 + n),
                "ledger",
                &number(3 * round + n),
            )
            .await;
            assert_eq!(answer["status"], "applied", "{answer}");
        }
        round += 1;
    }
    join_all(operators).await;
    round
}

async fn operators_racing_deliveries(backend: Backend) {
    let first = TestApp::spawn(backend).await;
    let second = first.another_instance().await;
    let apps = [&first, &second];
    let until = Instant::now() + Duration::from_secs(seconds());
    let applied: Vec<Arc<AtomicI64>> = (0..ACCOUNTS).map(|_| Arc::new(AtomicI64::new(0))).collect();
    let rounds = join_all(
        (0..ACCOUNTS).map(|account| rounds(apps, account, until, applied[account].clone())),
    )
    .await;
    for account in 0..ACCOUNTS {
        let name = format!("acct_{account}");
        let (done, applied) = (rounds[account], applied[account].load(Ordering::Relaxed));
        assert!(done > 0, "{name} ran no round");
        assert_eq!(
            first.balance(&name, "USD").await,
            done * (CREDIT + 3 * NUMBERED) - applied * DEBIT,
            "{name}: {done} rounds, {applied} debits applied"
        );
        let last = second
            .event("ledger", &format!("n{account}_{}", 3 * done))
            .await;
        assert_eq!(last["status"], "applied", "the stream ends released");
    }
    eprintln!("operators_racing: rounds per account {rounds:?}");
    first.assert_invariants().await;
    if matches!(first.store(), hookledger::store::Store::Postgres(..)) {
        assert_eq!(crate::postgres::deadlocks(&first).await, 0);
    }
}

crate::both_backends!(operators_racing_deliveries);
