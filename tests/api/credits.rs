//! Events that move money, and events that do not.

use hookledger::providers::Sample;
use hookledger::store::Violation;
use reqwest::StatusCode;

use sha2::{Digest, Sha256};

use crate::helpers::{Backend, DEMO_SECRET, Options, TestApp, body_of, credit, json_with_status};

async fn a_credit_is_applied(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let answer = app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    assert_eq!(
        answer,
        serde_json::json!({"status": "applied", "duplicate": false, "event_id": "msg_1"})
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    let entries = app.entries("acct_1").await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["source"], "demo");
    assert_eq!(entries[0]["event_id"], "msg_1");
    assert_eq!(entries[0]["amount_minor"], 1500);
    assert_eq!(entries[0]["balance_after_minor"], 1500);
    assert_eq!(entries[0]["operator_applied"], false);
    let event = app.event("demo", "msg_1").await;
    for key in [
        "source",
        "event_id",
        "event_type",
        "status",
        "reason",
        "account_id",
        "currency",
        "amount_minor",
        "sequence",
        "deliveries",
        "conflicts",
        "first_received_at",
        "last_received_at",
        "payload_sha256",
        "payload",
    ] {
        assert!(
            event.get(key).is_some(),
            "event detail lacks {key}: {event}"
        );
    }
    assert_eq!(event["source"], "demo");
    assert_eq!(event["event_type"], "balance.credit");
    assert!(event["reason"].is_null());
    assert_eq!(event["status"], "applied");
    assert_eq!(event["deliveries"], 1);
    assert_eq!(event["conflicts"], 0);
    assert_eq!(event["account_id"], "acct_1");
    assert_eq!(event["currency"], "USD");
    assert_eq!(event["amount_minor"], 1500);
    assert_eq!(event["sequence"], crate::helpers::now().timestamp());
    let body = body_of(&credit("msg_1", "acct_1", 1500));
    assert_eq!(
        event["payload"].as_str().unwrap().as_bytes(),
        body.as_slice(),
        "stored as received"
    );
    assert_eq!(event["payload_sha256"], hex::encode(Sha256::digest(&body)));
    app.assert_invariants().await;
}

async fn a_debit_lowers_the_balance(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    let debit = Sample {
        event_type: Some("balance.debit".into()),
        ..credit("msg_2", "acct_1", 400)
    };
    let answer = app.send_ok(&debit).await;
    assert_eq!(answer["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 1100);
    let entries = app.entries("acct_1").await;
    assert_eq!(entries[0]["amount_minor"], -400, "newest first, signed");
    assert_eq!(entries[0]["balance_after_minor"], 1100);
    assert_eq!(app.event("demo", "msg_2").await["amount_minor"], -400);
    app.assert_invariants().await;
}

async fn currencies_are_separate_balances(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    app.send_ok(&Sample {
        currency: "jpy".into(),
        ..credit("msg_2", "acct_1", 700)
    })
    .await;
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    assert_eq!(app.balance("acct_1", "JPY").await, 700);
    app.assert_invariants().await;
}

async fn other_types_are_ignored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sample = Sample {
        event_type: Some("customer.updated".into()),
        ..credit("msg_1", "acct_1", 1500)
    };
    let answer = app.send_ok(&sample).await;
    assert_eq!(answer["status"], "ignored");
    assert_eq!(answer["duplicate"], false);
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["status"], "ignored");
    assert_eq!(event["event_type"], "customer.updated");
    assert!(event["account_id"].is_null());
    app.assert_invariants().await;
}

async fn an_inapplicable_credit_is_rejected_and_held(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let answer = app
        .send_ok(&Sample {
            currency: "XXX".into(),
            ..credit("msg_1", "acct_1", 1500)
        })
        .await;
    assert_eq!(answer["status"], "rejected");
    let event = app.event("demo", "msg_1").await;
    assert_eq!(
        event["reason"],
        "currency \"XXX\" has no minor unit (it is not money)"
    );
    assert_eq!(
        event["account_id"], "acct_1",
        "the valid parts are kept for the operator"
    );
    assert_eq!(event["amount_minor"], 1500);
    assert!(event["currency"].is_null());
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    let held = json_with_status(
        app.admin_get("/admin/api/events?status=rejected").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(held["events"].as_array().unwrap().len(), 1);
    app.assert_invariants().await;
}

async fn the_account_path_is_configurable(backend: Backend) {
    let custom = r#"
[[sources]]
name = "custom"
kind = "standard-webhooks"
secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
account_path = "data.customer.reference"
"#;
    let options = Options {
        extra_sources: custom,
        ..Default::default()
    };
    let app = TestApp::spawn_with(backend, options).await;
    let body = r#"{"type":"balance.credit","data":{"customer":{"reference":"acct_9"},"amount_minor":250,"currency":"EUR"}}"#;
    let answer = json_with_status(
        app.deliver_body("custom", "msg_1", body.as_bytes()).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(answer["status"], "applied");
    assert_eq!(app.balance("acct_9", "EUR").await, 250);
    // The standard sample puts the account at data.account_id, not here.
    let response = app
        .deliver(
            "custom",
            "standard-webhooks",
            DEMO_SECRET,
            &credit("msg_2", "acct_1", 5),
        )
        .await;
    assert_eq!(
        json_with_status(response, StatusCode::OK).await["status"],
        "rejected"
    );
    let reason = app.event("custom", "msg_2").await["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(reason, "no account id at data.customer.reference");
    app.assert_invariants().await;
}

/// A posting that would take a balance past ±2^62 is held as rejected (one
/// transaction rolled back, then the event recorded), not answered 500
/// forever. The balance is forced near the limit with SQL, which is the one
/// invariant violation the check must then report.
async fn a_balance_at_its_limit_holds_the_event(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 100)).await;
    let near_limit =
        "update balances set balance_minor = 4611686018427387854 where account_id = 'acct_1'";
    app.execute_sql(near_limit).await.unwrap();
    let answer = app.send_ok(&credit("msg_2", "acct_1", 100)).await;
    assert_eq!(answer["status"], "rejected");
    let event = app.event("demo", "msg_2").await;
    assert_eq!(
        event["reason"],
        "the balance would leave the supported range (±2^62 minor units)"
    );
    assert_eq!(event["amount_minor"], 100);
    assert_eq!(app.balance("acct_1", "USD").await, (1i64 << 62) - 50);
    let violations = app.store().check_invariants().await.unwrap();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        matches!(&violations[0], Violation::BalanceMismatch { account_id, .. } if account_id == "acct_1")
    );
}

both_backends!(
    a_credit_is_applied,
    a_debit_lowers_the_balance,
    currencies_are_separate_balances,
    other_types_are_ignored,
    an_inapplicable_credit_is_rejected_and_held,
    the_account_path_is_configurable,
    a_balance_at_its_limit_holds_the_event,
);
