//! An operator and a contiguous gap: a gap past its timeout is held and can
//! be skipped (only through the number the operator confirmed), a parked
//! event can be dismissed, and a skipped number that arrives after all is
//! late.

use chrono::TimeDelta;
use reqwest::StatusCode;
use serde_json::Value;

use crate::contiguous::{LEDGER, applied_order, gap};
use crate::helpers::{Backend, TestApp, assert_error, credit_seq, debit_seq, json_with_status};

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
    a_gap_past_its_timeout_is_held_and_an_operator_skips_it,
    a_dismissed_parked_event_leaves_its_number_open,
    a_skip_passes_only_the_numbers_the_operator_confirmed,
    a_skipped_first_number_that_arrives_is_late,
);
