//! Interleavings on PostgreSQL that ordinary concurrency tests hit only by
//! chance, forced here with a trigger that stops a transaction at one
//! statement on an advisory lock the test holds.
//!
//! No lost wakeup: event 2 parks while event 1 (the number before it) is
//! being applied. If parking did not take the account's guard
//! row lock, 1's release step could run while 2's park is uncommitted, miss
//! it, and 2 would wait forever. The test forces exactly that interleaving:
//! a trigger stops 2's transaction at its park statement on an advisory lock
//! the test holds; then 1 is delivered; the lock is released only once 1's
//! transaction is blocked (correct) or has answered (the bug).
//!
//! No deadlock: two contiguous sources close a gap on one account at once,
//! each posting its own event in one currency and releasing one in the
//! other. Without balance rows locked up front in currency order, each
//! would hold one balance row and wait for the other's.
//!
//! The racing deliveries go to two instances on one database: each
//! instance's deliveries are written by its one group writer, one group
//! after another, so within one instance the second would wait for the
//! first in the writer's queue, not at the row locks these tests are about.
//!
//! PostgreSQL only: SQLite runs one write transaction at a time
//! (`BEGIN IMMEDIATE`), so these interleavings cannot happen there.

use hookledger::providers::Sample;

use std::time::Duration;

use crate::helpers::{Backend, TestApp, credit, credit_seq, json_with_status};
use crate::pause::{PAUSE, Pause};

/// Makes every park (`status` becoming `waiting`) pause.
const PAUSE_PARKS: &str = "
create trigger pause_park before insert or update on intents
for each row when (new.status = 'waiting') execute function pause();";

/// Parks `parked` at `app` while `next` (the number before it) is applied
/// at `other`, a second instance, with the park paused at the critical
/// point; both must end applied.
async fn park_while_the_predecessor_commits(
    app: &TestApp,
    other: &TestApp,
    account: &str,
    next: i64,
) {
    let mut pause = Pause::hold(app).await;

    let parked = credit_seq(&format!("{account}_{}", next + 1), account, 20, next + 1);
    let predecessor = credit_seq(&format!("{account}_{next}"), account, 10, next);
    let park = app.send_to("ledger", &parked);
    let apply_meanwhile = async {
        pause.until_waiting_on("advisory").await;
        // Correct: the predecessor waits for the parked transaction (its
        // guard row lock). With the bug it does not wait, and answers first.
        pause
            .release_once_blocked(other.send_to("ledger", &predecessor))
            .await
    };
    let (parked, applied) = tokio::join!(park, apply_meanwhile);
    assert_eq!(parked["status"], "waiting");
    assert_eq!(applied["status"], "applied");
    assert_eq!(
        applied["released"], 1,
        "the parked event was seen: {applied}"
    );
    let stranded = app
        .event("ledger", &format!("{account}_{}", next + 1))
        .await;
    assert_eq!(
        stranded["status"], "applied",
        "the parked event was released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_park_racing_the_release_is_never_stranded() {
    let Some(backend) =
        Backend::postgres_or_skip("interleavings::a_park_racing_the_release_is_never_stranded")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let other = app.another_instance().await;
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_PARKS).await.unwrap();
    // A new account: the park creates the guard row, the release waits for
    // that insert.
    park_while_the_predecessor_commits(&app, &other, "fresh", 1).await;
    // An account with history: the park locks the existing guard row.
    app.send_to("ledger", &credit_seq("known_1", "known", 5, 1))
        .await;
    park_while_the_predecessor_commits(&app, &other, "known", 2).await;
    assert_eq!(app.balance("fresh", "USD").await, 30);
    assert_eq!(app.balance("known", "USD").await, 35);
    app.assert_invariants().await;
}

/// Pauses every write to one account's balance rows, after the row is
/// locked (PostgreSQL fires the update trigger of `on conflict do update`
/// once it holds the conflicting row).
const PAUSE_BALANCE_WRITES: &str = "
create trigger pause_balance before update on balances
for each row when (new.account_id = 'shared') execute function pause();";

/// Two releases on one account, each paused at its first balance row lock.
/// With the rows locked up front in currency order, both go for EUR first
/// and one waits for the other. Without the up-front locks (each posts its
/// own currency first) or unsorted (each locks its parked currency first),
/// they hold one row each and wait for the other's: a deadlock, answered
/// 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_sources_releasing_on_one_account_do_not_deadlock() {
    let Some(backend) = Backend::postgres_or_skip(
        "interleavings::two_sources_releasing_on_one_account_do_not_deadlock",
    ) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let eur = |sample: Sample| Sample {
        currency: "EUR".into(),
        ..sample
    };
    // Both balance rows exist, so every write to them is an update.
    app.send_ok(&credit("pre_usd", "shared", 1)).await;
    app.send_ok(&eur(credit("pre_eur", "shared", 1))).await;
    // ledger numbers from 1, ledger-small from 0: each has its second event
    // parked, in the other currency than the one that will close its gap.
    app.send_to("ledger", &eur(credit_seq("parked_a", "shared", 7, 2)))
        .await;
    app.send_to("ledger-small", &credit_seq("parked_b", "shared", 11, 1))
        .await;
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_BALANCE_WRITES).await.unwrap();
    let mut pause = Pause::hold(&app).await;
    let (first_a, first_b) = (
        credit_seq("close_a", "shared", 100, 1),
        eur(credit_seq("close_b", "shared", 200, 0)),
    );
    let close_a = app.send_to("ledger", &first_a);
    let other = app.another_instance().await;
    let close_b = other.send_to("ledger-small", &first_b);
    let unpause = async {
        let mut met = false;
        for _ in 0..200 {
            let paused = pause.waiting_on("advisory").await;
            let blocked = pause.blocked().await;
            if paused == 2 || (paused == 1 && blocked == 1) {
                met = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(met, "the two releases never met at the balance rows");
        pause.release().await;
    };
    let (a, b, ()) = tokio::join!(close_a, close_b, unpause);
    assert_eq!(
        (a["status"].as_str(), a["released"].as_u64()),
        (Some("applied"), Some(1))
    );
    assert_eq!(
        (b["status"].as_str(), b["released"].as_u64()),
        (Some("applied"), Some(1))
    );
    assert_eq!(app.balance("shared", "USD").await, 112);
    assert_eq!(app.balance("shared", "EUR").await, 208);
    app.assert_invariants().await;
}

/// Pauses the posting of the event that closes the gap: after the release
/// read the parked events, before it settles them.
const PAUSE_CLOSING_POSTING: &str = "
create trigger pause_closing before insert on ledger_entries
for each row when (new.event_id = 'close') execute function pause();";

/// An operator dismisses a parked event while the release that would apply
/// it is under way: the release stops there, and never applies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dismiss_during_a_release_stops_it_there() {
    let Some(backend) =
        Backend::postgres_or_skip("interleavings::a_dismiss_during_a_release_stops_it_there")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_CLOSING_POSTING).await.unwrap();
    app.send_to("ledger", &credit_seq("d1", "acct", 1, 1)).await;
    app.send_to("ledger", &credit_seq("d3", "acct", 3, 3)).await;
    app.send_to("ledger", &credit_seq("d4", "acct", 4, 4)).await;
    let mut pause = Pause::hold(&app).await;
    let closing = credit_seq("close", "acct", 2, 2);
    let close = app.send_to("ledger", &closing);
    let dismiss = async {
        pause.until_waiting_on("advisory").await;
        let response = app
            .admin_post(
                "/admin/api/events/ledger/d3/dismiss",
                r#"{"note": "voided"}"#,
            )
            .await;
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        pause.release().await;
    };
    let (closed, ()) = tokio::join!(close, dismiss);
    assert_eq!(closed["status"], "applied");
    assert!(closed["released"].is_null(), "nothing released: {closed}");
    assert_eq!(app.event("ledger", "d3").await["status"], "dismissed");
    assert_eq!(app.event("ledger", "d4").await["status"], "waiting");
    assert_eq!(app.balance("acct", "USD").await, 3);
    app.assert_invariants().await;
}

/// Pauses the skip when it applies the first parked event.
const PAUSE_SKIP_SETTLE: &str = "
create trigger pause_settle before update on intents
for each row when (new.status = 'applied' and new.event_id = 'k3')
execute function pause();";

/// The skipped number arrives while the skip runs: it waits for the skip
/// (which holds the guard lock), then finds its number skipped and is late.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_racing_a_skip_waits_for_it() {
    let Some(backend) =
        Backend::postgres_or_skip("interleavings::a_delivery_racing_a_skip_waits_for_it")
    else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    app.execute_sql(PAUSE).await.unwrap();
    app.execute_sql(PAUSE_SKIP_SETTLE).await.unwrap();
    app.send_to("ledger", &credit_seq("k1", "acct", 1, 1)).await;
    app.send_to("ledger", &credit_seq("k3", "acct", 3, 3)).await;
    app.send_to("ledger", &credit_seq("k4", "acct", 4, 4)).await;
    let mut pause = Pause::hold(&app).await;
    let skip = app.admin_post(
        "/admin/api/gaps/ledger/acct/skip",
        r#"{"note": "2 never came", "through": 2}"#,
    );
    let missing = credit_seq("k2", "acct", 2, 2);
    let deliver = async {
        pause.until_waiting_on("advisory").await;
        pause
            .release_once_blocked(app.send_to("ledger", &missing))
            .await
    };
    let (skipped, late) = tokio::join!(skip, deliver);
    let skipped = json_with_status(skipped, reqwest::StatusCode::OK).await;
    assert_eq!(
        (skipped["released"].as_u64(), skipped["guard"].as_i64()),
        (Some(2), Some(4)),
        "{skipped}"
    );
    assert_eq!(late["status"], "applied", "{late}");
    assert_eq!(app.event("ledger", "k2").await["late"], true);
    let next = app.send_to("ledger", &credit_seq("k5", "acct", 5, 5)).await;
    assert_eq!(next["status"], "applied");
    app.assert_invariants().await;
}
