//! A posting (balance, ledger entry, a `ledger.posted` message per
//! destination) is written as one statement on PostgreSQL and in one call
//! of three statements on SQLite; `post_in_steps` writes it one statement at a time. On each
//! backend, both ways must write the same rows.

use chrono::{TimeZone, Utc};
use hookledger::domain::{MessageType, Origin, Status};
use hookledger::store::{IntentUpsert, NewIntent, NewPosting, Store};
use serde_json::Value;

use crate::helpers::*;
use crate::outbox::{app_with, http_destination};

/// An applied intent of the `demo` source (what a posting needs first).
pub(crate) fn applied_intent<'a>(
    event_id: &'a str,
    account: &'a str,
    amount: i64,
    sequence: i64,
) -> NewIntent<'a> {
    NewIntent {
        source: "demo",
        scope: "demo",
        event_id,
        event_type: "balance.credit",
        status: Status::Applied,
        reason: None,
        account_id: Some(account),
        currency: Some("USD"),
        amount_minor: Some(amount),
        object_id: None,
        sequence: Some(sequence),
        occurred_at: Some(Utc.with_ymd_and_hms(2026, 5, 1, 9, 30, 0).unwrap()),
        payload_sha256: "00",
        payload: b"{}",
        received_at: now(),
        signature_headers: None,
        signed_at: None,
        signed_event_id: None,
        origin: Origin::Webhook,
        payment_ref: None,
        reversal: None,
        reversal_total: None,
        undoes: None,
        partial: false,
    }
}

/// A new applied intent for `event_id`, in its own committed transaction.
async fn intent(store: &Store, event_id: &str, account: &str, amount: i64, sequence: i64) -> i64 {
    let mut tx = store.begin().await.unwrap();
    let intent = applied_intent(event_id, account, amount, sequence);
    let IntentUpsert::Inserted { intent_id } = tx.insert_intent(&intent).await.unwrap() else {
        panic!("a new event");
    };
    tx.commit().await.unwrap();
    intent_id
}

/// The rows a posting wrote for `account`, without what names it (ids,
/// the account, the event) or what a relay changes afterwards.
async fn rows(app: &TestApp, table: &'static str, account: &str) -> Vec<Value> {
    let texts = crate::table_rows::table_json(app, table, Some(account)).await;
    let mut rows: Vec<Value> = texts
        .into_iter()
        .map(|mut row| {
            names_its_posting(&row, account);
            let object = row.as_object_mut().unwrap();
            for volatile in [
                "entry_id",
                "outbox_id",
                "intent_id",
                "event_id",
                "account_id",
                "message_id",
                "state",
                "attempts",
                "next_attempt_ms",
                "leased_by",
                "last_error",
                "delivered_ms",
                "behind",
                // Over the ids and the account: each chain is verified.
                "prev_hash",
                "entry_hash",
            ] {
                object.remove(volatile);
            }
            row
        })
        .collect();
    rows.sort_by_key(|row| row.to_string());
    rows
}

/// What the comparison leaves out, checked on its own: the event the row
/// tells of is one of this account's, and a message's id is the one
/// downstream deduplicates on.
fn names_its_posting(row: &Value, account: &str) {
    if let Some(event_id) = row.get("event_id").and_then(Value::as_str) {
        assert!(event_id.starts_with(&format!("{account}_")), "{row}");
        if let Some(message_id) = row.get("message_id").and_then(Value::as_str) {
            let expected = MessageType::LedgerPosted.message_id("demo", event_id);
            assert_eq!(message_id, expected, "{row}");
        }
    }
    if let Some(id) = row.get("account_id").and_then(Value::as_str) {
        assert_eq!(id, account, "{row}");
    }
}

crate::both_backends!(both_ways_write_the_same_rows);

async fn both_ways_write_the_same_rows(backend: Backend) {
    // Two destinations, one ordered (a destination that takes only held
    // events writes nothing).
    let destinations = format!(
        "{}{}{}",
        http_destination("billing", "http://127.0.0.1:9", "ordered_by_account = true"),
        http_destination("crm", "http://127.0.0.1:9", ""),
        http_destination(
            "held-only",
            "http://127.0.0.1:9",
            "events = [\"event.held\"]"
        ),
    );
    let app = app_with(backend, &destinations).await;
    let store = app.store();
    let at = Utc.with_ymd_and_hms(2026, 5, 1, 10, 0, 0).unwrap();
    for (n, amount) in [(1, 250), (2, -100)] {
        for (account, one_statement) in [("cus_one", true), ("cus_steps", false)] {
            let event_id = format!("{account}_{n}");
            let intent_id = intent(store, &event_id, account, amount, n).await;
            let posting = NewPosting {
                intent_id,
                credits_payment: None,
                source: "demo",
                event_id: &event_id,
                account_id: account,
                currency: "USD",
                amount_minor: amount,
                object_id: Some("obj_1"),
                operator_applied: n == 2,
                created_at: at,
            };
            let mut tx = store.begin().await.unwrap();
            let balance = if one_statement {
                tx.post(&posting).await.unwrap()
            } else {
                tx.post_in_steps(&posting).await.unwrap()
            };
            tx.commit().await.unwrap();
            assert_eq!(balance, if n == 1 { 250 } else { 150 });
        }
    }
    let chains = store.verify_chains().await.unwrap();
    assert!(chains.is_clean(), "{chains:#?}");
    assert_eq!((chains.entries, chains.chains), (4, 2), "{chains:#?}");
    for table in ["ledger_entries", "outbox", "balances"] {
        let one = rows(&app, table, "cus_one").await;
        let steps = rows(&app, table, "cus_steps").await;
        assert!(!one.is_empty(), "{table}");
        assert_eq!(one, steps, "{table}");
    }
    let messages = rows(&app, "outbox", "cus_one").await;
    assert_eq!(
        messages.len(),
        4,
        "two postings, two destinations: {messages:?}"
    );
    assert!(
        messages.iter().all(|m| m["destination"] != "held-only"),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m["account_seq"] == 2 && m["balance_after_minor"] == 150),
        "{messages:?}"
    );
}
