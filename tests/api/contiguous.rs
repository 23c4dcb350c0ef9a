//! `ordering = "contiguous"`: each account's events apply in exact sequence
//! order without a person. Later numbers park (`waiting`) and are released in
//! the transaction that closes their gap; used numbers are rejected. What an
//! operator does about a gap (skip, dismiss) is in `gap_skip.rs`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Backend, TestApp, credit, credit_seq, debit_seq, json_with_status};

pub(crate) const LEDGER: &str = "ledger";

/// The event ids of an account's ledger entries, oldest first.
pub(crate) async fn applied_order(app: &TestApp, account: &str) -> Vec<String> {
    let mut entries = app.entries(account).await;
    entries.reverse();
    entries
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) async fn gap(app: &TestApp, source: &str, account: &str) -> Value {
    let path = format!("/admin/api/gaps/{source}/{account}");
    json_with_status(app.admin_get(&path).await, StatusCode::OK).await
}

/// Polls until no event is waiting (the drain task runs in the background),
/// failing after 30 s. Test apps never sweep periodically
/// (`release_sweep_secs` is a day), so only a woken or start-up drain
/// passes.
async fn until_nothing_waits(app: &TestApp) {
    for _ in 0..300 {
        let path = "/admin/api/events?status=waiting&limit=1";
        let body = json_with_status(app.admin_get(path).await, StatusCode::OK).await;
        if body["events"].as_array().unwrap().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("parked events were never released");
}

async fn the_next_number_applies_and_releases_what_waited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let first = app
        .send_to(LEDGER, &credit_seq("m1", "acct_1", 100, 1))
        .await;
    assert_eq!(first["status"], "applied");
    for (id, sequence) in [("m4", 4), ("m3", 3)] {
        let answer = app
            .send_to(LEDGER, &credit_seq(id, "acct_1", 100 * sequence, sequence))
            .await;
        assert_eq!(answer["status"], "waiting", "{id}");
    }
    assert_eq!(app.balance("acct_1", "USD").await, 100, "parked: no effect");
    let waiting = app.event(LEDGER, "m3").await;
    assert_eq!(waiting["status"], "waiting");
    assert_eq!(
        waiting["reason"],
        "parked until every number below 3 is applied or skipped"
    );

    // A debit at 2 closes the gap: it applies before 3 and 4, in one go.
    let closing = app.send_to(LEDGER, &debit_seq("m2", "acct_1", 50, 2)).await;
    assert_eq!(closing["status"], "applied");
    assert_eq!(closing["released"], 2);
    assert_eq!(app.balance("acct_1", "USD").await, 100 - 50 + 300 + 400);
    assert_eq!(
        applied_order(&app, "acct_1").await,
        ["m1", "m2", "m3", "m4"]
    );
    let entries = app.entries("acct_1").await;
    let balances: Vec<i64> = entries
        .iter()
        .rev()
        .map(|e| e["balance_after_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(
        balances,
        [100, 50, 350, 750],
        "each entry after the one before"
    );
    let released = app.event(LEDGER, "m4").await;
    assert_eq!(released["status"], "applied");
    assert_eq!(released["reason"], "released in order after sequence 3");
    assert_eq!(released["late"], false);
    let metrics = json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await;
    assert_eq!(metrics["ordering"][LEDGER]["parked"], 2);
    assert_eq!(metrics["ordering"][LEDGER]["released"], 2);
    // Accounts are independent streams.
    let other = app.send_to(LEDGER, &credit_seq("n1", "acct_2", 5, 1)).await;
    assert_eq!(other["status"], "applied");
    app.assert_invariants().await;
}

async fn a_redelivered_parked_event_is_a_duplicate(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let parked = credit_seq("m2", "acct_1", 20, 2);
    app.send_to(LEDGER, &parked).await;
    let again = app.send_to(LEDGER, &parked).await;
    assert_eq!(
        (again["status"].as_str(), again["duplicate"].as_bool()),
        (Some("waiting"), Some(true))
    );
    app.send_to(LEDGER, &credit_seq("m1", "acct_1", 10, 1))
        .await;
    let after = app.send_to(LEDGER, &parked).await;
    assert_eq!(
        (after["status"].as_str(), after["duplicate"].as_bool()),
        (Some("applied"), Some(true))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 30);
    assert_eq!(app.event(LEDGER, "m2").await["deliveries"], 3);
    app.assert_invariants().await;
}

async fn a_used_number_is_rejected_naming_its_holder(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m1", "acct_1", 10, 1))
        .await;
    app.send_to(LEDGER, &credit_seq("m3", "acct_1", 30, 3))
        .await;
    for (id, sequence, holder) in [("x1", 1, "m1"), ("x3", 3, "m3")] {
        let answer = app
            .send_to(LEDGER, &credit_seq(id, "acct_1", 999, sequence))
            .await;
        assert_eq!(answer["status"], "rejected", "{id}");
        assert_eq!(
            app.event(LEDGER, id).await["reason"],
            format!("sequence {sequence} is already used by event {holder}")
        );
    }
    app.send_to(LEDGER, &credit_seq("m2", "acct_1", 20, 2))
        .await;
    assert_eq!(app.balance("acct_1", "USD").await, 60, "999 never applied");
    assert_eq!(applied_order(&app, "acct_1").await, ["m1", "m2", "m3"]);
    app.assert_invariants().await;
}

async fn events_without_their_own_number_are_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // No data.sequence: Standard Webhooks would fall back to a timestamp.
    let answer = app.send_to(LEDGER, &credit("m1", "acct_1", 10)).await;
    assert_eq!(answer["status"], "rejected");
    let reason = app.event(LEDGER, "m1").await["reason"].clone();
    assert!(
        reason
            .as_str()
            .unwrap()
            .contains("contiguous ordering needs"),
        "{reason}"
    );
    // ledger-small numbers from 0: -1 is below the first number.
    let below = app
        .send_to("ledger-small", &credit_seq("s-1", "acct_1", 10, -1))
        .await;
    assert_eq!(below["status"], "rejected");
    assert_eq!(
        app.event("ledger-small", "s-1").await["reason"],
        "sequence -1 is below first_sequence 0"
    );
    let zero = app
        .send_to("ledger-small", &credit_seq("s0", "acct_1", 10, 0))
        .await;
    assert_eq!(zero["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 10);
    app.assert_invariants().await;
}

async fn a_long_backlog_drains_beyond_the_release_bound(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // ledger-small: numbers from 0, at most 3 released per transaction.
    for sequence in 1..=20 {
        let answer = app
            .send_to(
                "ledger-small",
                &credit_seq(&format!("s{sequence}"), "acct_1", sequence, sequence),
            )
            .await;
        assert_eq!(answer["status"], "waiting");
    }
    let closing = app
        .send_to("ledger-small", &credit_seq("s0", "acct_1", 1000, 0))
        .await;
    assert_eq!(closing["released"], 3, "bounded per transaction");
    until_nothing_waits(&app).await;
    let expected: Vec<String> = (0..=20).map(|s| format!("s{s}")).collect();
    assert_eq!(applied_order(&app, "acct_1").await, expected);
    assert_eq!(
        app.balance("acct_1", "USD").await,
        1000 + (1..=20).sum::<i64>()
    );
    app.assert_invariants().await;
}

/// A source switched away from contiguous (or an instance that disagrees
/// about its mode) moves the guard past parked events; they are late, and
/// the drain settles them by `on_stale` instead of leaving them waiting.
async fn parked_events_the_guard_passed_are_settled_as_late(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m3", "acct_1", 30, 3))
        .await;
    app.send_to(LEDGER, &debit_seq("m4", "acct_1", 4, 4)).await;
    // What a high-water instance applying sequence 10 does to the guard.
    app.execute_sql(
        "update sequence_guards set last_sequence = 10 where source = 'ledger' and account_id = 'acct_1'",
    )
    .await
    .unwrap();
    let stuck = app.store().check_invariants().await.unwrap();
    assert!(
        stuck
            .iter()
            .filter(|v| matches!(v, hookledger::store::Violation::StuckRelease { .. }))
            .count()
            == 2,
        "{stuck:#?}"
    );
    // A restart's first sweep finds them (so would the periodic one).
    let restarted = app.another_instance().await;
    until_nothing_waits(&restarted).await;
    let credit = restarted.event(LEDGER, "m3").await;
    assert_eq!(
        (credit["status"].as_str(), credit["late"].as_bool()),
        (Some("applied"), Some(true))
    );
    assert!(
        credit["reason"]
            .as_str()
            .unwrap()
            .contains("was waiting when the guard passed it"),
        "{credit}"
    );
    let debit = restarted.event(LEDGER, "m4").await;
    assert_eq!(
        (debit["status"].as_str(), debit["late"].as_bool()),
        (Some("stale"), Some(true))
    );
    assert_eq!(restarted.balance("acct_1", "USD").await, 30);
    restarted
        .send_to(LEDGER, &credit_seq("m11", "acct_1", 11, 11))
        .await;
    restarted.assert_invariants().await;
}

async fn a_parked_event_out_of_balance_range_is_held_not_stranded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m1", "acct_1", 1, 1)).await;
    app.send_to(
        LEDGER,
        &credit_seq("m3", "acct_1", 1_000_000_000_000_000, 3),
    )
    .await;
    app.send_to(LEDGER, &credit_seq("m4", "acct_1", 4, 4)).await;
    // A balance at the edge of the supported range (no API gets there in a
    // test's lifetime); the ledger is rigged with it so the check holds.
    app.execute_sql(
        "update balances set balance_minor = 4611686018427387000 where account_id = 'acct_1';
         update ledger_entries set amount_minor = 4611686018427387000,
             balance_after_minor = 4611686018427387000 where event_id = 'm1';
         update intents set amount_minor = 4611686018427387000 where event_id = 'm1'",
    )
    .await
    .unwrap();
    let done = json_with_status(
        app.admin_post(
            "/admin/api/gaps/ledger/acct_1/skip",
            r#"{"note": "2 never came", "through": 2}"#,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["held"], "m3");
    assert_eq!(done["released"], 0);
    assert_eq!(done["guard"], 2, "the skip stands");
    let m3 = app.event(LEDGER, "m3").await;
    assert_eq!(m3["status"], "rejected");
    assert_eq!(app.event(LEDGER, "m4").await["status"], "waiting");
    app.assert_invariants().await;
    // Not stranded: the gap shows 3 (held by the rejected event), and a
    // skip through 3 releases m4.
    let open = gap(&app, LEDGER, "acct_1").await;
    assert_eq!(open["gap"]["missing_text"], "3");
    let done = json_with_status(
        app.admin_post(
            "/admin/api/gaps/ledger/acct_1/skip",
            r#"{"note": "3 held for review", "through": 3}"#,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (done["released"].as_u64(), done["guard"].as_i64()),
        (Some(1), Some(4))
    );
    assert_eq!(app.event(LEDGER, "m4").await["status"], "applied");
    app.assert_invariants().await;
}

/// While a long backlog drains, the parked event at guard + 1 holds that
/// number: another event with it is rejected, not applied as "next".
async fn the_next_number_is_refused_while_its_holder_still_waits(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m1", "acct_1", 1, 1)).await;
    for sequence in [3, 4] {
        app.send_to(
            LEDGER,
            &credit_seq(&format!("m{sequence}"), "acct_1", sequence, sequence),
        )
        .await;
    }
    // The state between two drain transactions: m3 is next and still waits
    // (as if 2 had been applied and the drain had not reached 3 yet).
    app.execute_sql("update intents set event_sequence = 2 where event_id = 'm3'")
        .await
        .unwrap();
    let other = app
        .send_to(LEDGER, &credit_seq("x2", "acct_1", 999, 2))
        .await;
    assert_eq!(other["status"], "rejected", "{other}");
    assert_eq!(
        app.event(LEDGER, "x2").await["reason"],
        "sequence 2 is already used by event m3"
    );
    // The drain task (its start-up sweep may run after the rigging) may
    // have released m3 meanwhile, which is right; x2's 999 never applies.
    let balance = app.balance("acct_1", "USD").await;
    assert!(
        balance == 1 || balance == 1 + 3,
        "999 never applied: {balance}"
    );
}

/// A number held by a late event waiting for a person (stale) is used too.
async fn a_number_held_as_stale_is_not_used_twice(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m1", "acct_1", 10, 1))
        .await;
    app.send_to(LEDGER, &credit_seq("m3", "acct_1", 30, 3))
        .await;
    let skip = r#"{"note": "2 voided", "through": 2}"#;
    json_with_status(
        app.admin_post("/admin/api/gaps/ledger/acct_1/skip", skip)
            .await,
        StatusCode::OK,
    )
    .await;
    let late = app.send_to(LEDGER, &debit_seq("m2", "acct_1", 5, 2)).await;
    assert_eq!(late["status"], "stale");
    let again = app.send_to(LEDGER, &debit_seq("x2", "acct_1", 7, 2)).await;
    assert_eq!(again["status"], "rejected");
    assert_eq!(
        app.event(LEDGER, "x2").await["reason"],
        "sequence 2 is already used by event m2"
    );
    app.assert_invariants().await;
}

both_backends!(
    the_next_number_is_refused_while_its_holder_still_waits,
    a_number_held_as_stale_is_not_used_twice,
    the_next_number_applies_and_releases_what_waited,
    a_redelivered_parked_event_is_a_duplicate,
    a_used_number_is_rejected_naming_its_holder,
    events_without_their_own_number_are_rejected,
    a_long_backlog_drains_beyond_the_release_bound,
    parked_events_the_guard_passed_are_settled_as_late,
    a_parked_event_out_of_balance_range_is_held_not_stranded,
);
