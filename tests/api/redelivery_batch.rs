//! The batched redelivery count (`Store::count_redeliveries`) on its own:
//! it counts only events stored with the body it names, returns their
//! status, keeps the latest receipt time, and on PostgreSQL skips a row
//! another transaction holds instead of waiting for it.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use hookledger::store::{RedeliveryCount, received_at_text};
use sqlx::Connection;

use crate::helpers::*;

async fn stored_sha(app: &TestApp, event_id: &str) -> String {
    let event = app.event("demo", event_id).await;
    event["payload_sha256"].as_str().unwrap().to_owned()
}

fn count<'a>(
    event_id: &'a str,
    sha: &'a str,
    n: i64,
    at: chrono::DateTime<Utc>,
) -> RedeliveryCount<'a> {
    RedeliveryCount {
        scope: "demo",
        event_id,
        payload_sha256: sha,
        deliveries: n,
        received_at: received_at_text(at),
    }
}

crate::both_backends!(only_stored_events_with_their_body_are_counted);

async fn only_stored_events_with_their_body_are_counted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    let sha = stored_sha(&app, "msg_1").await;
    let before = app.event("demo", "msg_1").await["last_received_at"].clone();
    let later = now() + TimeDelta::hours(2);
    let other = "ab".repeat(32);
    let batch = [
        count("msg_1", &sha, 3, later),
        count("msg_2", &sha, 1, later),
        // msg_1 again with another body: not this row.
        count("msg_1", &other, 5, later),
    ];
    let counted = app.store().count_redeliveries(&batch).await.unwrap();
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(counted[0].event_id, "msg_1");
    assert_eq!(counted[0].payload_sha256, sha);
    assert_eq!(counted[0].status.as_str(), "applied");
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["deliveries"], 4);
    assert_eq!(event["conflicts"], 0);
    assert_ne!(event["last_received_at"], before);
    // An older receipt never moves the time back.
    let moved = event["last_received_at"].clone();
    let earlier = [count("msg_1", &sha, 1, now())];
    app.store().count_redeliveries(&earlier).await.unwrap();
    let event = app.event("demo", "msg_1").await;
    assert_eq!(event["deliveries"], 5);
    assert_eq!(event["last_received_at"], moved);
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_another_transaction_holds_is_skipped_not_waited_for() {
    let test = "redelivery_batch::a_row_another_transaction_holds_is_skipped_not_waited_for";
    let Some(backend) = Backend::postgres_or_skip(test) else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    app.send_ok(&credit("msg_1", "acct_1", 1500)).await;
    let sha = stored_sha(&app, "msg_1").await;
    let mut holder = sqlx::PgConnection::connect(&app.database_url)
        .await
        .unwrap();
    let mut held = holder.begin().await.unwrap();
    sqlx::query("select 1 from intents where event_id = 'msg_1' for update")
        .execute(&mut *held)
        .await
        .unwrap();
    let batch = [count("msg_1", &sha, 1, now())];
    let counting = app.store().count_redeliveries(&batch);
    let counted = tokio::time::timeout(Duration::from_secs(5), counting)
        .await
        .expect("the batch does not wait for the row's lock")
        .unwrap();
    assert!(counted.is_empty(), "{counted:?}");
    held.rollback().await.unwrap();
    let counted = app.store().count_redeliveries(&batch).await.unwrap();
    assert_eq!(counted.len(), 1);
    assert_eq!(app.event("demo", "msg_1").await["deliveries"], 2);
}
