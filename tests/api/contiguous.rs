//! `ordering = "contiguous"`: each account's events apply in exact sequence
//! order without a person. Later numbers park (`waiting`) and are released in
//! the transaction that closes their gap; used numbers are rejected; a gap
//! past its timeout is held, and an operator can skip it.

use std::time::Duration;

use chrono::TimeDelta;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{
    Backend, TestApp, assert_error, credit, credit_seq, debit_seq, json_with_status,
};

const LEDGER: &str = "ledger";

/// The event ids of an account's ledger entries, oldest first.
async fn applied_order(app: &TestApp, account: &str) -> Vec<String> {
    let mut entries = app.entries(account).await;
    entries.reverse();
    entries
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn gap(app: &TestApp, source: &str, account: &str) -> Value {
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

async fn a_gap_past_its_timeout_is_held_and_an_operator_skips_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for (id, sequence) in [("m1", 1), ("m3", 3), ("m4", 4), ("m7", 7)] {
        app.send_to(LEDGER, &credit_seq(id, "acct_1", sequence, sequence))
            .await;
    }
    let open = gap(&app, LEDGER, "acct_1").await;
    let waiting: Vec<&Value> = open["waiting_events"].as_array().unwrap().iter().collect();
    assert_eq!(waiting.len(), 3);
    assert_eq!(waiting[0]["event_id"], "m3", "in the order they will apply");
    let open = &open["gap"];
    assert_eq!(open["next_expected"], 2);
    assert_eq!(open["waiting"], 3);
    assert_eq!(open["missing_text"], "2, 5-6");
    assert_eq!(open["held"], false);
    app.clock.advance(TimeDelta::seconds(600));
    let listed = json_with_status(app.admin_get("/admin/api/gaps").await, StatusCode::OK).await;
    assert_eq!(listed["gaps"][0]["held"], true, "past gap_timeout_secs");
    assert_eq!(listed["gaps"][0]["missing"][1]["first"], 5);

    assert_eq!(listed["gaps"][0]["skip_through"], 6);
    let skip = "/admin/api/gaps/ledger/acct_1/skip";
    for incomplete in ["", r#"{"through": 6}"#, r#"{"note": "no through"}"#] {
        assert_error(
            app.admin_post(skip, incomplete).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        )
        .await;
    }
    let done = json_with_status(
        app.admin_post(
            skip,
            r#"{"note": "sender confirmed 2, 5 and 6 were never issued", "through": 6}"#,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["released"], 3);
    assert_eq!(done["guard"], 7);
    assert_eq!(
        done["skipped"],
        serde_json::json!([{"first": 2, "last": 2}, {"first": 5, "last": 6}])
    );
    assert_eq!(
        applied_order(&app, "acct_1").await,
        ["m1", "m3", "m4", "m7"]
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1 + 3 + 4 + 7);
    assert_eq!(
        app.event(LEDGER, "m7").await["reason"],
        "released in order after an operator skipped 5-6"
    );
    let account = gap(&app, LEDGER, "acct_1").await;
    assert!(account["gap"].is_null(), "nothing waits: {account}");
    assert_eq!(account["audit"][0]["action"], "skip_gap");
    assert_eq!(
        account["audit"][0]["note"],
        "sender confirmed 2, 5 and 6 were never issued"
    );
    assert_eq!(
        account["audit"][0]["detail"],
        "skipped 2, 5-6; applied 3 parked event(s) in order through sequence 7"
    );
    assert_error(
        app.admin_post(skip, r#"{"note": "again", "through": 6}"#)
            .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;

    // A skipped number that arrives after all is late: a credit applies,
    // a debit is held.
    let late_credit = app.send_to(LEDGER, &credit_seq("m2", "acct_1", 2, 2)).await;
    assert_eq!(late_credit["status"], "applied");
    let m2 = app.event(LEDGER, "m2").await;
    assert_eq!(m2["late"], true);
    let reason = m2["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "applied out of order: sequence 2 below 7 (an operator skipped sequence 2"
        ),
        "{reason}"
    );
    let late_debit = app.send_to(LEDGER, &debit_seq("m5", "acct_1", 5, 5)).await;
    assert_eq!(late_debit["status"], "stale");
    // The stream goes on from 8.
    let next = app.send_to(LEDGER, &credit_seq("m8", "acct_1", 8, 8)).await;
    assert_eq!(next["status"], "applied");
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

async fn a_dismissed_parked_event_leaves_its_number_open(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m2", "acct_1", 2, 2)).await;
    app.send_to(LEDGER, &credit_seq("m3", "acct_1", 3, 3)).await;
    let dismissed = json_with_status(
        app.admin_post(
            "/admin/api/events/ledger/m2/dismiss",
            r#"{"note": "sent by mistake"}"#,
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(dismissed["previous_status"], "waiting");
    let first = app.send_to(LEDGER, &credit_seq("m1", "acct_1", 1, 1)).await;
    assert!(first["released"].is_null(), "3 still waits for 2: {first}");
    assert_eq!(
        gap(&app, LEDGER, "acct_1").await["gap"]["missing_text"],
        "2"
    );
    // A corrected event for 2 takes the free number and releases 3.
    let corrected = app
        .send_to(LEDGER, &credit_seq("m2b", "acct_1", 20, 2))
        .await;
    assert_eq!(corrected["released"], 1);
    assert_eq!(applied_order(&app, "acct_1").await, ["m1", "m2b", "m3"]);
    app.assert_invariants().await;
}

async fn a_skip_passes_only_the_numbers_the_operator_confirmed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m1", "acct_1", 1, 1)).await;
    app.send_to(LEDGER, &credit_seq("m3", "acct_1", 3, 3)).await;
    let seen = gap(&app, LEDGER, "acct_1").await;
    assert_eq!(seen["gap"]["skip_through"], 2);
    // While the operator reads the page, 9 parks behind a new gap 4-8.
    app.send_to(LEDGER, &credit_seq("m9", "acct_1", 9, 9)).await;
    let skip = "/admin/api/gaps/ledger/acct_1/skip";
    let confirmed = r#"{"note": "2 was voided", "through": 2}"#;
    let done = json_with_status(app.admin_post(skip, confirmed).await, StatusCode::OK).await;
    assert_eq!(
        done["skipped"],
        serde_json::json!([{"first": 2, "last": 2}])
    );
    assert_eq!(done["guard"], 3);
    assert_eq!(app.event(LEDGER, "m9").await["status"], "waiting");
    // Sent again (a double click), it skips nothing.
    let body = assert_error(
        app.admin_post(skip, confirmed).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("waits for sequence 4"),
        "{body}"
    );
    assert_eq!(
        gap(&app, LEDGER, "acct_1").await["gap"]["missing_text"],
        "4-8"
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
    assert_eq!(app.balance("acct_1", "USD").await, 1, "999 never applied");
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

/// The first number, skipped and then arriving after all, is late like any
/// skipped number (not "below first_sequence").
async fn a_skipped_first_number_that_arrives_is_late(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to(LEDGER, &credit_seq("m2", "acct_1", 20, 2))
        .await;
    let skip = r#"{"note": "1 was lost upstream", "through": 1}"#;
    json_with_status(
        app.admin_post("/admin/api/gaps/ledger/acct_1/skip", skip)
            .await,
        StatusCode::OK,
    )
    .await;
    let late = app
        .send_to(LEDGER, &credit_seq("m1", "acct_1", 10, 1))
        .await;
    assert_eq!(late["status"], "applied", "{late}");
    assert_eq!(app.event(LEDGER, "m1").await["late"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 30);
    app.assert_invariants().await;
}

both_backends!(
    the_next_number_is_refused_while_its_holder_still_waits,
    a_number_held_as_stale_is_not_used_twice,
    a_skipped_first_number_that_arrives_is_late,
    the_next_number_applies_and_releases_what_waited,
    a_redelivered_parked_event_is_a_duplicate,
    a_used_number_is_rejected_naming_its_holder,
    events_without_their_own_number_are_rejected,
    a_gap_past_its_timeout_is_held_and_an_operator_skips_it,
    a_long_backlog_drains_beyond_the_release_bound,
    a_dismissed_parked_event_leaves_its_number_open,
    a_skip_passes_only_the_numbers_the_operator_confirmed,
    parked_events_the_guard_passed_are_settled_as_late,
    a_parked_event_out_of_balance_range_is_held_not_stranded,
);
