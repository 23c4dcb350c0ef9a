//! The `ordered` flag (migration 0010): only the postings of ordered
//! destinations sit in the index the order check reads, and a destination
//! made ordered after its messages were written still sends them in order,
//! because its relay flags them before its first claim.

use std::time::Duration;

use chrono::Utc;
use hookledger::domain::MessageType;

use crate::helpers::*;
use crate::outbox::{drained, http_destination, selected, writer_with};
use crate::receiver::{Answer, Receiver};

/// (destination, event, ordered) of every outbox row, oldest first.
async fn flags(app: &TestApp) -> Vec<(String, String, bool)> {
    selected(
        app,
        "select destination, event_id, ordered from outbox order by outbox_id",
    )
    .await
}

fn row(destination: &str, event_id: &str, ordered: bool) -> (String, String, bool) {
    (destination.into(), event_id.into(), ordered)
}

async fn only_an_ordered_destinations_postings_take_part_in_the_order(backend: Backend) {
    let destinations = format!(
        "{}{}",
        http_destination("ledger", "http://127.0.0.1:9/", "ordered_by_account = true"),
        http_destination("crm", "http://127.0.0.1:9/", "")
    );
    let app = writer_with(backend, &destinations).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    app.send_ok(&credit_seq("evt_2", "cus_2", 100, 5)).await;
    // A late debit is held: its message has no place in its account's
    // order.
    app.send_ok(&debit_seq("evt_3", "cus_2", 50, 2)).await;
    assert_eq!(
        flags(&app).await,
        [
            row("ledger", "evt_1", true),
            row("crm", "evt_1", false),
            row("ledger", "evt_2", true),
            row("crm", "evt_2", false),
            row("ledger", "evt_3", false),
            row("crm", "evt_3", false),
        ]
    );
}

async fn a_destination_made_ordered_sends_earlier_messages_in_order(backend: Backend) {
    // The first request is answered 500, every later one 200.
    let receiver = Receiver::start(&[Answer::Status(500)], Answer::Status(200)).await;
    // Written while the destination was not ordered, by an instance that
    // does not send.
    let unordered = http_destination("billing", &receiver.url(), "");
    let writer = writer_with(backend, &unordered).await;
    writer.send_ok(&credit("evt_1", "cus_1", 100)).await;
    writer.send_ok(&credit("evt_2", "cus_1", 200)).await;
    assert_eq!(
        flags(&writer).await,
        [
            row("billing", "evt_1", false),
            row("billing", "evt_2", false)
        ]
    );
    // Its relay now runs with the destination ordered: evt_1's first
    // attempt fails, and evt_2 waits for evt_1's retry. Unflagged, both
    // would be claimed at once.
    let ordered = http_destination("billing", &receiver.url(), "ordered_by_account = true");
    let relay = writer
        .another_instance_with(&Options {
            extra_sources: &ordered,
            ..Options::default()
        })
        .await;
    let messages = drained(&relay, "billing", Duration::from_secs(30)).await;
    assert!(
        messages.iter().all(|m| m.state == "delivered"),
        "{messages:?}"
    );
    let id = |event_id| MessageType::LedgerPosted.message_id("demo", event_id);
    let received: Vec<(String, bool)> = receiver
        .received()
        .into_iter()
        .map(|r| (r.id, matches!(r.answered, Answer::Status(200))))
        .collect();
    assert_eq!(
        received,
        [
            (id("evt_1"), false),
            (id("evt_1"), true),
            (id("evt_2"), true)
        ]
    );
}

/// A dead letter written while the destination was not ordered blocks its
/// account once it is (the sync flags dead rows too), and frees it again
/// when the destination is no longer ordered.
async fn a_dead_letter_from_before_blocks_its_account_once_ordered(backend: Backend) {
    let unordered = http_destination("billing", "http://127.0.0.1:9/", "");
    let app = writer_with(backend, &unordered).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    app.send_ok(&credit("evt_2", "cus_1", 200)).await;
    app.execute_sql(
        "update outbox set state = 'dead', attempts = 25, last_error = 'answered HTTP 500' \
         where event_id = 'evt_1'",
    )
    .await
    .unwrap();
    let store = app.store();
    let claim = |ordered: bool| async move {
        let now = Utc::now().timestamp_millis();
        let rows = store
            .claim_outbox("billing", ordered, "relay", now, now + 60_000, 64)
            .await
            .unwrap();
        rows.into_iter().map(|row| row.event_id).collect::<Vec<_>>()
    };
    assert_eq!(store.sync_ordered("billing", true).await.unwrap(), 2);
    assert_eq!(claim(true).await, Vec::<String>::new(), "evt_2 waits");
    assert_eq!(store.sync_ordered("billing", true).await.unwrap(), 0);
    assert_eq!(store.sync_ordered("billing", false).await.unwrap(), 2);
    assert_eq!(claim(false).await, ["evt_2"]);
}

both_backends!(
    only_an_ordered_destinations_postings_take_part_in_the_order,
    a_destination_made_ordered_sends_earlier_messages_in_order,
    a_dead_letter_from_before_blocks_its_account_once_ordered
);
