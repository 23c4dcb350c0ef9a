//! The operator's edge cases: an apply that would leave the supported
//! balance range, and one event with an absurd sequence lifting an
//! account's guard so that every later debit is held.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::browser::{csrf_in, login, page, post_form};
use crate::helpers::{Backend, TestApp, assert_error, credit_seq, debit_seq, json_with_status};

/// 2^62: the highest sequence an event may carry.
const ABSURD: i64 = 1 << 62;
const GUARD: &str = "/admin/api/guard?source=demo&account=acct_1";
const RESET: &str = "/admin/api/guard/reset?source=demo&account=acct_1";

async fn applying_beyond_the_balance_range_is_409_held_and_audited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_0", "acct_1", 100, 2)).await;
    // A late debit: held as stale.
    app.send_ok(&debit_seq("msg_1", "acct_1", 50, 1)).await;
    // The balance forced near the floor (-2^62 + 10): the debit would leave
    // the range. (Forced with SQL, so the check reports that one row.)
    app.execute_sql(
        "update balances set balance_minor = -4611686018427387894 where account_id = 'acct_1'",
    )
    .await
    .unwrap();
    let refused = app
        .admin_post(
            "/admin/api/events/demo/msg_1/apply",
            r#"{"note": "customer asked"}"#,
        )
        .await;
    let body = assert_error(refused, StatusCode::CONFLICT, "conflict").await;
    assert_eq!(
        body["message"],
        "cannot apply: the balance would leave the supported range (±2^62 minor units)"
    );
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["status"], "stale", "still held");
    let audit = event["audit"].as_array().unwrap();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["action"], "apply_refused");
    assert_eq!(audit[0]["note"], "customer asked");
    assert_eq!(
        audit[0]["detail"],
        "the balance would leave the supported range (±2^62 minor units)"
    );
    assert_eq!(
        app.balance("acct_1", "USD").await,
        -4_611_686_018_427_387_894
    );
    assert_eq!(app.entries("acct_1").await.len(), 1, "no entry was written");
}

/// An account whose guard an absurd sequence lifted: its later debits are
/// held, the dashboard lists the account, and a reset applies them in
/// order; after it, new events are in order again.
async fn a_guard_reset_releases_what_an_absurd_sequence_held(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_ok", "acct_1", 1000, 10)).await;
    app.send_ok(&credit_seq("msg_absurd", "acct_1", 1, ABSURD))
        .await;
    for n in 11..=15 {
        let answer = app
            .send_ok(&debit_seq(&format!("msg_d{n}"), "acct_1", n, n))
            .await;
        assert_eq!(answer["status"], "stale", "frozen: every debit is late");
    }
    // A late credit still applies, and does not count as the guard's value.
    let late = app.send_ok(&credit_seq("msg_c16", "acct_1", 5, 16)).await;
    assert_eq!(late["status"], "applied");

    let held = json_with_status(
        app.admin_get("/admin/api/held_accounts").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(held["accounts"][0]["account_id"], "acct_1", "{held}");
    assert_eq!(held["accounts"][0]["stale"], 5, "{held}");

    let preview = json_with_status(app.admin_get(GUARD).await, StatusCode::OK).await;
    assert_eq!(preview["guard"], ABSURD);
    assert_eq!(
        preview["suggested_to"], 10,
        "the highest sequence applied in order"
    );
    assert_eq!(preview["to"], 10);
    let ids: Vec<&str> = preview["would_apply"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["msg_d11", "msg_d12", "msg_d13", "msg_d14", "msg_d15"]);
    let narrower = json_with_status(
        app.admin_get(&format!("{GUARD}&to=13")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(narrower["would_apply"].as_array().unwrap().len(), 2);

    // Refused, changing nothing: no note, a guard that is not the one now,
    // a value that does not lower it.
    let body = |to: i64, seen: i64| json!({"to": to, "guard_seen": seen, "note": "sender bug"});
    assert_error(
        app.admin_post(RESET, r#"{"to": 10, "guard_seen": 4611686018427387904}"#)
            .await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    let moved = assert_error(
        app.admin_post(RESET, &body(10, 99).to_string()).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    assert!(
        moved["message"].as_str().unwrap().contains("reload"),
        "{moved}"
    );
    assert_error(
        app.admin_post(RESET, &body(ABSURD, ABSURD).to_string())
            .await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    assert_eq!(app.balance("acct_1", "USD").await, 1006);

    let reset = json_with_status(
        app.admin_post(RESET, &body(10, ABSURD).to_string()).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reset["guard_before"], ABSURD);
    assert_eq!(reset["guard"], 15, "{reset}");
    assert_eq!(reset["applied"].as_array().unwrap().len(), 5, "{reset}");
    assert_eq!(reset["still_held"], json!([]));
    assert_eq!(
        app.balance("acct_1", "USD").await,
        1006 - (11 + 12 + 13 + 14 + 15)
    );
    // Applied in sequence order: the ledger's entries follow 11..15.
    let entries = app.entries("acct_1").await;
    let debits: Vec<&str> = entries
        .iter()
        .rev()
        .filter(|e| e["amount_minor"].as_i64().unwrap() < 0)
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        debits,
        ["msg_d11", "msg_d12", "msg_d13", "msg_d14", "msg_d15"]
    );
    let event = app.event("demo", "msg_d13").await;
    assert_eq!(event["status"], "applied");
    let note = event["audit"][0]["note"].as_str().unwrap();
    assert!(
        note.starts_with("applied by guard reset #") && note.ends_with("sender bug"),
        "{note}"
    );

    // The freeze is gone: the next debit is in order.
    let next = app.send_ok(&debit_seq("msg_d17", "acct_1", 1, 17)).await;
    assert_eq!(next["status"], "applied");
    let gone = json_with_status(
        app.admin_get("/admin/api/held_accounts").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(gone["accounts"], json!([]));
    app.assert_invariants().await;
}

/// The reset applies held events under the source's policy: a debit that
/// would overdraw (`negative_balance = "hold"`, the default) stays held with
/// its reason, as it would have arriving in order.
async fn a_guard_reset_keeps_the_negative_balance_policy(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_ok", "acct_1", 100, 10)).await;
    app.send_ok(&credit_seq("msg_absurd", "acct_1", 1, ABSURD))
        .await;
    app.send_ok(&debit_seq("msg_big", "acct_1", 500, 11)).await;
    app.send_ok(&debit_seq("msg_small", "acct_1", 50, 12)).await;
    let body = json!({"to": 10, "guard_seen": ABSURD, "note": "sender bug"});
    let reset = json_with_status(
        app.admin_post(RESET, &body.to_string()).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(reset["applied"], json!(["msg_small"]), "{reset}");
    assert_eq!(reset["still_held"][0]["event_id"], "msg_big", "{reset}");
    assert_eq!(app.event("demo", "msg_big").await["status"], "stale");
    assert_eq!(app.balance("acct_1", "USD").await, 101 - 50);
    app.assert_invariants().await;
}

/// After a reset, the events it applied moved the guard: a second absurd
/// event's preview suggests the guard they left, not the first absurd one.
async fn a_second_reset_suggests_what_the_first_applied(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_ok", "acct_1", 1000, 10)).await;
    app.send_ok(&credit_seq("msg_absurd", "acct_1", 1, ABSURD - 1))
        .await;
    for n in 11..=15 {
        app.send_ok(&debit_seq(&format!("msg_d{n}"), "acct_1", 1, n))
            .await;
    }
    let body = json!({"to": 10, "guard_seen": ABSURD - 1, "note": "first"});
    json_with_status(
        app.admin_post(RESET, &body.to_string()).await,
        StatusCode::OK,
    )
    .await;
    app.send_ok(&credit_seq("msg_absurd_2", "acct_1", 1, ABSURD))
        .await;
    let preview = json_with_status(app.admin_get(GUARD).await, StatusCode::OK).await;
    assert_eq!(preview["guard"], ABSURD);
    assert_eq!(preview["suggested_to"], 15, "{preview}");
    app.assert_invariants().await;
}

async fn a_guard_that_does_not_exist_is_404(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_error(
        app.admin_get("/admin/api/guard?source=demo&account=nobody")
            .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let reset = json!({"to": 1, "guard_seen": 2, "note": "x"}).to_string();
    assert_error(
        app.admin_post("/admin/api/guard/reset?source=demo&account=nobody", &reset)
            .await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// The same reset from the pages: the dashboard links the account, the
/// guard page previews, and its form resets.
async fn the_guard_page_previews_and_resets(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_ok", "acct_1", 1000, 10)).await;
    app.send_ok(&credit_seq("msg_absurd", "acct_1", 1, ABSURD))
        .await;
    for n in 11..=15 {
        app.send_ok(&debit_seq(&format!("msg_d{n}"), "acct_1", 1, n))
            .await;
    }
    let cookie = login(&app).await;
    let dashboard = page(&app, "/admin", &cookie).await;
    assert!(
        dashboard.contains("Accounts holding 5 or more"),
        "{dashboard}"
    );
    assert!(
        dashboard.contains(r#"href="/admin/guard?source=demo&#38;account=acct_1""#),
        "{dashboard}"
    );
    let guard = page(&app, "/admin/guard?source=demo&account=acct_1", &cookie).await;
    assert!(
        guard.contains("Lower the guard to 10 and apply 5 event(s) in order"),
        "{guard}"
    );
    let csrf = csrf_in(&guard);
    let reset = post_form(
        &app,
        "/admin/guard/reset?source=demo&account=acct_1",
        &cookie,
        Some(&app.address),
        &[
            ("csrf", &csrf),
            ("to", "10"),
            ("guard_seen", &ABSURD.to_string()),
            ("note", "sender bug"),
        ],
    )
    .await;
    assert_eq!(reset.status(), StatusCode::SEE_OTHER);
    let location = reset.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.ends_with("&applied=5&held=0"), "{location}");
    let after = page(&app, &location, &cookie).await;
    assert!(
        after.contains("5 held event(s) applied in order"),
        "{after}"
    );
    assert!(after.contains("reset_guard"), "the audit lists it: {after}");
    assert_eq!(app.balance("acct_1", "USD").await, 1001 - 5);
    let events: Vec<Value> = app.events().await;
    assert!(
        events.iter().all(|e| e["status"] == "applied"),
        "{events:?}"
    );
}

/// With nothing applied below the guard, the page offers the floor by
/// name (every stale event applies), not as -2^62-1.
async fn the_guard_page_names_the_floor(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_absurd", "acct_1", 1000, ABSURD))
        .await;
    app.send_ok(&debit_seq("msg_d1", "acct_1", 1, 1)).await;
    let cookie = login(&app).await;
    let guard = page(&app, "/admin/guard?source=demo&account=acct_1", &cookie).await;
    assert!(
        guard.contains(
            "Lower the guard to the floor (below every sequence) and apply 1 event(s) in order"
        ),
        "{guard}"
    );
    assert!(
        guard.contains(r#"<input name="to" type="number" value="" placeholder="the floor">"#),
        "{guard}"
    );
    assert!(!guard.contains(">-4611686018427387905<"), "{guard}");
}

/// An API action that says which status its caller saw takes the event
/// only from it; a status that is not one is a 400.
async fn an_action_for_another_status_moves_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit_seq("msg_1", "acct_1", 1000, 2)).await;
    app.send_ok(&debit_seq("msg_2", "acct_1", 250, 1)).await;
    let path = "/admin/api/events/demo/msg_2/dismiss";
    assert_error(
        app.admin_post(path, r#"{"note": "x", "status": "rejected"}"#)
            .await,
        StatusCode::CONFLICT,
        "wrong_status",
    )
    .await;
    assert_error(
        app.admin_post(path, r#"{"status": "lost"}"#).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_eq!(app.event("demo", "msg_2").await["status"], "stale");
    let applied = app
        .admin_post(
            "/admin/api/events/demo/msg_2/apply",
            r#"{"note": "checked", "status": "stale"}"#,
        )
        .await;
    assert_eq!(applied.status(), StatusCode::OK);
    assert_eq!(app.balance("acct_1", "USD").await, 750);
}

crate::both_backends!(
    an_action_for_another_status_moves_nothing,
    the_guard_page_names_the_floor,
    applying_beyond_the_balance_range_is_409_held_and_audited,
    a_guard_reset_releases_what_an_absurd_sequence_held,
    a_guard_that_does_not_exist_is_404,
    a_guard_reset_keeps_the_negative_balance_policy,
    a_second_reset_suggests_what_the_first_applied,
    the_guard_page_previews_and_resets,
);
