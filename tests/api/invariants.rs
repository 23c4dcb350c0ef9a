//! The invariant check itself must be able to fail: corrupt the database the
//! way a bug would, and see each violation reported. And the ledger's unique
//! keys (the second, permanent guard against double posting) are in place.

use hookledger::store::Violation;
use reqwest::StatusCode;

use crate::helpers::{Backend, TestApp, credit, credit_seq, json_with_status};

fn violation(source: &str, event_id: &str) -> (String, String) {
    (source.to_owned(), event_id.to_owned())
}

async fn the_check_reports_each_kind_of_corruption(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 100)).await;
    app.send_ok(&credit("msg_2", "acct_2", 200)).await;
    app.assert_invariants().await;
    // An applied event that lost its ledger entry (so its balance no longer
    // adds up), and an entry whose event is no longer applied.
    app.execute_sql("delete from ledger_entries where event_id = 'msg_1'")
        .await
        .unwrap();
    app.execute_sql("update intents set status = 'dismissed' where event_id = 'msg_2'")
        .await
        .unwrap();

    let violations = app.store().check_invariants().await.unwrap();
    assert_eq!(violations.len(), 3, "{violations:#?}");
    assert!(violations.contains(&Violation::BalanceMismatch {
        account_id: "acct_1".into(),
        currency: "USD".into(),
        balance_minor: 100,
        ledger_minor: 0,
    }));
    let (source, event_id) = violation("demo", "msg_2");
    assert!(violations.contains(&Violation::EntryWithoutAppliedIntent { source, event_id }));
    let (source, event_id) = violation("demo", "msg_1");
    assert!(violations.contains(&Violation::AppliedIntentWithoutEntry { source, event_id }));
    let check = json_with_status(app.admin_get("/admin/api/check").await, StatusCode::OK).await;
    assert_eq!(check["ok"], false);
    assert_eq!(check["violations"].as_array().unwrap().len(), 3);
}

async fn an_entry_that_disagrees_with_its_intent_is_reported(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 100)).await;
    app.execute_sql("update intents set amount_minor = 999 where event_id = 'msg_1'")
        .await
        .unwrap();
    let violations = app.store().check_invariants().await.unwrap();
    let (source, event_id) = violation("demo", "msg_1");
    assert_eq!(
        violations,
        [Violation::EntryWithoutAppliedIntent { source, event_id }]
    );
}

async fn the_ledger_refuses_a_second_entry_for_one_event(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 100)).await;
    app.send_ok(&credit("msg_2", "acct_1", 100)).await;
    // Another entry under msg_1's key (through msg_2's intent), and another
    // entry for msg_1's intent under a new key: both refused by the schema.
    let same_event =
        "insert into ledger_entries (intent_id, source, event_id, account_id, currency,
        amount_minor, balance_after_minor, object_id, operator_applied, created_at, account_seq)
        select intent_id, 'demo', 'msg_1', 'acct_1', 'USD', 100, 300, null, false, first_received_at, 3
        from intents where event_id = 'msg_2'";
    let same_intent =
        "insert into ledger_entries (intent_id, source, event_id, account_id, currency,
        amount_minor, balance_after_minor, object_id, operator_applied, created_at, account_seq)
        select intent_id, 'demo', 'msg_9', 'acct_1', 'USD', 100, 300, null, false, first_received_at, 4
        from intents where event_id = 'msg_1'";
    for sql in [same_event, same_intent] {
        let error = app
            .execute_sql(sql)
            .await
            .expect_err("a unique key refuses it");
        let code = error
            .as_database_error()
            .and_then(|e| e.code())
            .map(|c| c.into_owned());
        assert!(
            matches!(code.as_deref(), Some("23505" | "2067" | "1555")),
            "{error}"
        );
    }
    assert_eq!(app.entries("acct_1").await.len(), 2);
    app.assert_invariants().await;
}

/// The ordering checks: a parked event the guard has reached (a lost
/// release) and a guard above anything applied or skipped.
async fn the_check_reports_a_stuck_release_and_a_wrong_guard(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_to("ledger", &credit_seq("m1", "acct_1", 10, 1))
        .await;
    app.send_to("ledger", &credit_seq("m3", "acct_1", 30, 3))
        .await;
    app.assert_invariants().await;
    app.execute_sql(
        "update sequence_guards set last_sequence = 9 where source = 'ledger' and account_id = 'acct_1'",
    )
    .await
    .unwrap();
    let violations = app.store().check_invariants().await.unwrap();
    assert_eq!(violations.len(), 2, "{violations:#?}");
    assert!(violations.iter().any(|v| matches!(
        v,
        Violation::StuckRelease { event_id, sequence: 3, .. } if event_id == "m3"
    )));
    assert!(violations.contains(&Violation::GuardMismatch {
        source: "ledger".into(),
        account_id: "acct_1".into(),
        guard: Some(9),
        highest_applied_or_skipped: 1,
    }));
    // A guard below what was applied is as wrong as one above it.
    app.execute_sql(
        "update sequence_guards set last_sequence = 0 where source = 'ledger' and account_id = 'acct_1'",
    )
    .await
    .unwrap();
    let violations = app.store().check_invariants().await.unwrap();
    assert!(violations.contains(&Violation::GuardMismatch {
        source: "ledger".into(),
        account_id: "acct_1".into(),
        guard: Some(0),
        highest_applied_or_skipped: 1,
    }));
}

/// The ledger chain: each entry's balance after is the running sum in entry
/// order. Two entries whose balances after were swapped keep every sum and
/// the final balance right; only the chain shows it. `hookledger check`
/// reports the same and exits 1.
async fn the_check_follows_the_ledger_chain(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for (n, amount) in [(1, 100), (2, 20), (3, 3)] {
        app.send_ok(&credit(&format!("msg_{n}"), "acct_1", amount))
            .await;
    }
    app.send_ok(&credit("msg_4", "acct_2", 7)).await;
    let dir = tempfile::tempdir().unwrap();
    let run_check = || {
        crate::process::hookledger(dir.path())
            .arg("check")
            .env("HOOKLEDGER_DATABASE_URL", &app.database_url)
            .output()
            .unwrap()
    };
    let clean = run_check();
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&clean.stdout).unwrap();
    assert_eq!(report, serde_json::json!({"ok": true, "violations": []}));

    // msg_1 says 120 after it and msg_2 says 100: the sums still agree.
    app.execute_sql(
        "update ledger_entries set balance_after_minor = case event_id
            when 'msg_1' then 120 when 'msg_2' then 100 end
        where event_id in ('msg_1', 'msg_2')",
    )
    .await
    .unwrap();
    let violations = app.store().check_invariants().await.unwrap();
    let first = app.entries("acct_1").await.last().unwrap()["entry_id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        violations,
        [Violation::BrokenChain {
            account_id: "acct_1".into(),
            currency: "USD".into(),
            entry_id: first,
            balance_after_minor: 120,
            running_minor: 100,
        }]
    );
    let broken = run_check();
    assert_eq!(broken.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&broken.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["violations"][0]["kind"], "broken_chain", "{report}");
    assert_eq!(
        String::from_utf8_lossy(&broken.stderr).lines().last(),
        Some("hookledger: 1 invariant violation(s); see the JSON on stdout")
    );
}

both_backends!(
    the_check_follows_the_ledger_chain,
    the_check_reports_a_stuck_release_and_a_wrong_guard,
    the_check_reports_each_kind_of_corruption,
    an_entry_that_disagrees_with_its_intent_is_reported,
    the_ledger_refuses_a_second_entry_for_one_event,
);
