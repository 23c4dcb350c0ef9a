//! The outbox where several relays meet one database: on PostgreSQL, ids
//! assigned before commit, two relays, a pool of one; on both backends, a
//! dead relay's lease taken over, and a message whose every attempt died
//! with its relay made a dead letter.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use hookledger::store::{IntentUpsert, NewLedgerEntry, Store};

use crate::helpers::*;
use crate::outbox::{app_with, drained, http_destination, side_store_routing};
use crate::receiver::{Answer, Receiver};
use hookledger::outbox::Relays;

async fn app_sending_to(backend: Backend, receiver: &Receiver) -> TestApp {
    app_with(backend, &http_destination("sink", &receiver.url(), "")).await
}

/// A posting's intent and its message, written in `tx` but not committed.
pub(crate) async fn posting(store: &Store, event_id: &str) -> hookledger::store::WriteTx {
    posting_of(store, event_id, "cus_1", None).await
}

/// The same for `account`, numbered `seq` (default: the intent's id).
pub(crate) async fn posting_of(
    store: &Store,
    event_id: &str,
    account: &str,
    seq: Option<i64>,
) -> hookledger::store::WriteTx {
    let mut tx = store.begin().await.unwrap();
    let intent = crate::posting_statement::applied_intent(event_id, account, 100, seq.unwrap_or(1));
    let IntentUpsert::Inserted { intent_id } = tx.insert_intent(&intent).await.unwrap() else {
        panic!("a new event");
    };
    let entry = entry_of(intent_id, event_id, account, seq.unwrap_or(intent_id));
    tx.enqueue_posting(&entry).await.unwrap();
    tx
}

/// A credit of 100 USD to `account`, its `seq`th posting: what a message
/// of `intent_id` tells.
pub(crate) fn entry_of<'a>(
    intent_id: i64,
    event_id: &'a str,
    account: &'a str,
    seq: i64,
) -> NewLedgerEntry<'a> {
    NewLedgerEntry {
        intent_id,
        credits_payment: None,
        source: "demo",
        event_id,
        account_id: account,
        currency: "USD",
        amount_minor: 100,
        balance_after_minor: 100,
        account_seq: seq,
        object_id: None,
        operator_applied: false,
        created_at: Utc::now(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_committed_after_a_later_id_is_delivered() {
    let Some(backend) = Backend::postgres_or_skip("a_row_committed_after_a_later_id_is_delivered")
    else {
        return;
    };
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = app_sending_to(backend, &receiver).await;
    // The smaller id first, committed last: a cursor over ids would have
    // moved past it when the larger one was delivered.
    let first = posting(app.store(), "evt_smaller_id").await;
    let second = posting(app.store(), "evt_larger_id").await;
    second.commit().await.unwrap();
    drained(&app, "sink", Duration::from_secs(20)).await;
    assert_eq!(receiver.accepted().len(), 1);
    first.commit().await.unwrap();
    let messages = drained(&app, "sink", Duration::from_secs(20)).await;
    assert_eq!(messages.len(), 2);
    assert!(messages[0].outbox_id < messages[1].outbox_id);
    assert!(messages.iter().all(|m| m.state == "delivered"));
    let events: Vec<_> = receiver
        .accepted()
        .iter()
        .map(|r| r.body["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(events, ["evt_larger_id", "evt_smaller_id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_on_one_database_send_each_row_once() {
    let Some(backend) = Backend::postgres_or_skip("two_relays_on_one_database_send_each_row_once")
    else {
        return;
    };
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = app_sending_to(backend, &receiver).await;
    let destination = http_destination("sink", &receiver.url(), "");
    let other = app
        .another_instance_with(&Options {
            extra_sources: &destination,
            ..Options::default()
        })
        .await;
    let samples: Vec<_> = (0..200)
        .map(|i| credit(&format!("evt_{i}"), &format!("cus_{}", i % 7), 10))
        .collect();
    let sends = samples.iter().enumerate().map(|(i, sample)| {
        let target = if i % 2 == 0 { &app } else { &other };
        target.send(sample)
    });
    for response in futures::future::join_all(sends).await {
        assert_eq!(response.status(), reqwest::StatusCode::OK);
    }
    let messages = drained(&app, "sink", Duration::from_secs(30)).await;
    assert_eq!(messages.len(), 200);
    // No failures, so every row was claimed once and sent once.
    assert!(
        messages
            .iter()
            .all(|m| m.state == "delivered" && m.attempts == 1)
    );
    let mut sent: HashMap<String, usize> = HashMap::new();
    for received in receiver.received() {
        *sent.entry(received.id).or_default() += 1;
    }
    assert_eq!(sent.len(), 200);
    assert!(sent.values().all(|n| *n == 1), "a row was sent twice");
}

/// The relays' wake-up listener has a connection of its own: a pool of one
/// still serves requests, claims and records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_one_connection_still_serves_with_a_destination() {
    let Some(backend) = Backend::postgres_or_skip("a_pool_of_one_connection") else {
        return;
    };
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let destination = http_destination("sink", &receiver.url(), "");
    let app = TestApp::spawn_with(
        backend,
        Options {
            database: "max_connections = 1",
            extra_sources: &destination,
            ..Options::default()
        },
    )
    .await;
    for i in 0..5 {
        app.send_ok(&credit(&format!("evt_{i}"), "cus_1", 10)).await;
    }
    let messages = drained(&app, "sink", Duration::from_secs(20)).await;
    assert_eq!(messages.len(), 5);
    assert_eq!(receiver.accepted().len(), 5);
}

/// A relay that claims `destination`'s one due row at `now`, leased until
/// `until`, and dies: no outcome recorded. The row as claimed.
async fn died_holding(
    store: &Store,
    destination: &str,
    relay: &str,
    (now, until): (i64, i64),
) -> hookledger::store::OutboxRow {
    let claimed = store
        .claim_outbox(destination, false, relay, now, until, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    claimed.into_iter().next().unwrap()
}

/// This test's relays on `store`, with a second of grace at shutdown.
fn relays_on(store: &Store, destinations: &[hookledger::config::Destination]) -> Relays {
    let instruments = hookledger::telemetry::OutboxInstruments::default();
    Relays::spawn(store, destinations, Duration::from_secs(1), instruments)
}

/// A relay that claimed a row and died: the row waits out its lease, then
/// another relay's sweep sends it (a second attempt, the same id). Run on a
/// store and a relay of the test's own, for a destination the app does not
/// have, so that nothing else claims the row.
async fn an_expired_lease_is_taken_over(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = TestApp::spawn(backend).await;
    let orphans = http_destination("orphans", &receiver.url(), "");
    let (store, destinations) = side_store_routing(&app, &orphans).await;
    posting(&store, "evt_orphan").await.commit().await.unwrap();
    let now = Utc::now().timestamp_millis();
    let claimed = died_holding(&store, "orphans", "a-relay-that-died", (now, now + 1_500)).await;
    let relays = relays_on(&store, &destinations);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        receiver.received().is_empty(),
        "sent inside another's lease"
    );
    let started = std::time::Instant::now();
    while receiver.accepted().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never taken over"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relays.stop().await;
    let messages = store.outbox_messages("orphans", 0, 10).await.unwrap();
    assert_eq!(
        (messages[0].state.as_str(), messages[0].attempts),
        ("delivered", 2)
    );
    assert_eq!(receiver.accepted()[0].id, claimed.message_id);
}

/// A message whose every attempt ended with its relay gone (two claims, no
/// outcome recorded, as when each send stops the process): claimed again
/// past `max_attempts`, it is not sent but made a dead letter that says
/// why. Without the guard it would be tried for ever.
async fn a_message_whose_attempts_all_died_becomes_a_dead_letter(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = TestApp::spawn(backend).await;
    let twice = http_destination("twice", &receiver.url(), "max_attempts = 2");
    let (store, destinations) = side_store_routing(&app, &twice).await;
    posting(&store, "evt_poison").await.commit().await.unwrap();
    let past = Utc::now().timestamp_millis() - 60_000;
    for (n, died) in ["a-relay-that-died", "another-that-died"]
        .iter()
        .enumerate()
    {
        let at = past + n as i64 * 10;
        died_holding(&store, "twice", died, (at, at + 1)).await;
    }
    let relays = relays_on(&store, &destinations);
    let started = std::time::Instant::now();
    let message = loop {
        let messages = store.outbox_messages("twice", 0, 10).await.unwrap();
        if messages[0].state != "pending" {
            break messages[0].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{messages:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    relays.stop().await;
    assert_eq!((message.state.as_str(), message.attempts), ("dead", 3));
    let error = message.last_error.unwrap_or_default();
    assert!(error.contains("its attempts are used up"), "{error}");
    assert!(receiver.received().is_empty(), "sent past its last attempt");
}

both_backends!(
    an_expired_lease_is_taken_over,
    a_message_whose_attempts_all_died_becomes_a_dead_letter
);
