//! The outbox's status messages: an event an operator dismisses is told
//! by `event.dismissed` (with the reason it had been held), one that cannot
//! be applied by `event.rejected`, each with its event's source, id and
//! account.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::*;
use crate::outbox::{app_with, drained, http_destination};
use crate::receiver::{Answer, Receiver};

/// The one message of `message_type` the receiver accepted for `event_id`.
fn told(accepted: &[Value], event_id: &str, message_type: &str) -> Value {
    let found: Vec<_> = accepted
        .iter()
        .filter(|m| m["event_id"] == event_id && m["type"] == message_type)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{message_type} of {event_id}: {accepted:#?}"
    );
    found[0].clone()
}

/// A stale debit, then dismissed by an operator: `event.held`, then
/// `event.dismissed` with the held reason; a credit of a negative amount:
/// `event.rejected` with its reason. Each names its event and account,
/// and each event is told once per type.
async fn dismissed_and_rejected_events_are_told(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = app_with(backend, &http_destination("crm", &receiver.url(), "")).await;
    app.send_ok(&credit_seq("evt_paid", "cus_42", 1500, 2))
        .await;
    let late = app.send_ok(&debit_seq("evt_late", "cus_42", 400, 1)).await;
    assert_eq!(late["status"], "stale", "{late}");
    let negative = serde_json::json!({
        "type": "balance.credit",
        "data": {"account_id": "cus_7", "amount_minor": -5, "currency": "USD"},
    });
    let bad = app
        .deliver_body("demo", "evt_bad", negative.to_string().as_bytes())
        .await;
    assert_eq!(
        json_with_status(bad, StatusCode::OK).await["status"],
        "rejected"
    );
    let dismissed = app
        .admin_post(
            "/admin/api/events/demo/evt_late/dismiss",
            r#"{"note": "refunded by hand"}"#,
        )
        .await;
    assert_eq!(
        json_with_status(dismissed, StatusCode::OK).await["status"],
        "dismissed"
    );

    let rows = drained(&app, "crm", Duration::from_secs(20)).await;
    assert!(rows.iter().all(|m| m.state == "delivered"), "{rows:?}");
    let received = receiver.accepted();
    let accepted: Vec<Value> = received.iter().map(|r| r.body.clone()).collect();
    assert_eq!(accepted.len(), 4, "{accepted:#?}");
    told(&accepted, "evt_paid", "ledger.posted");

    let held = told(&accepted, "evt_late", "event.held");
    let gone = told(&accepted, "evt_late", "event.dismissed");
    assert_eq!(gone["source"], "demo");
    assert_eq!(gone["account_id"], "cus_42");
    assert_eq!(gone["currency"], "USD");
    assert_eq!(gone["status"], "dismissed");
    let reason = held["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("out of order"), "{held}");
    assert_eq!(gone["reason"], held["reason"], "the reason it was held");
    assert_eq!(gone["operator_applied"], false);
    assert_eq!(gone["account_seq"], Value::Null);
    assert_eq!(gone["balance_after_minor"], Value::Null);
    assert_ne!(gone["id"], held["id"], "a message of its own");

    let rejected = told(&accepted, "evt_bad", "event.rejected");
    assert_eq!(rejected["source"], "demo");
    assert_eq!(rejected["account_id"], "cus_7");
    assert_eq!(rejected["status"], "rejected");
    let reason = rejected["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("amount must be positive"), "{rejected}");
    assert_eq!(rejected["account_seq"], Value::Null);
    // Each went under the id its body carries.
    for r in &received {
        assert_eq!(r.body["id"], r.id.as_str(), "{r:?}");
    }
    assert_eq!(app.balance("cus_42", "USD").await, 1500);
    assert_eq!(app.balance("cus_7", "USD").await, 0);
    app.assert_invariants().await;
}

both_backends!(dismissed_and_rejected_events_are_told);
