//! Retention of the outbox: the purge deletes delivered rows older than
//! `retention.outbox_days`, and never a dead letter or a pending row,
//! however old.

use std::time::{Duration, Instant};

use hookledger::store::OutboxEntry;

use crate::helpers::*;
use crate::outbox::{drained, http_destination};
use crate::receiver::{Answer, Receiver};

const RETENTION: &str = "retention = { outbox_days = 1, purge_interval_secs = 1 }";

/// `destination`'s rows, once the purge has deleted `event_id`'s.
async fn purged(app: &TestApp, destination: &str, event_id: &str) -> Vec<OutboxEntry> {
    let started = Instant::now();
    loop {
        let rows = app
            .store()
            .outbox_messages(destination, 0, 100)
            .await
            .unwrap();
        if rows.iter().all(|m| m.event_id != event_id) {
            return rows;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{event_id} was never purged: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A row delivered two days ago goes; one delivered twelve hours ago, a
/// dead letter written years ago and pending rows as old all stay.
async fn old_delivered_rows_go_and_dead_and_pending_ones_stay(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    // `stuck` is never reached (nothing listens on port 9): its rows stay
    // pending, retried on their backoff.
    let destinations = format!(
        "{}{}",
        http_destination("billing", &receiver.url(), "max_attempts = 1"),
        http_destination("stuck", "http://127.0.0.1:9/hooks", ""),
    );
    let app = TestApp::spawn_with(
        backend,
        Options {
            top_level: RETENTION,
            extra_sources: &destinations,
            ..Options::default()
        },
    )
    .await;
    app.send_ok(&credit("evt_old", "cus_1", 100)).await;
    app.send_ok(&credit("evt_recent", "cus_1", 200)).await;
    drained(&app, "billing", Duration::from_secs(20)).await;
    receiver.answer_all(Answer::Status(500));
    app.send_ok(&credit("evt_dead", "cus_1", 300)).await;
    let before = drained(&app, "billing", Duration::from_secs(20)).await;
    let states: Vec<_> = before
        .iter()
        .map(|m| (m.event_id.as_str(), m.state.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            ("evt_old", "delivered"),
            ("evt_recent", "delivered"),
            ("evt_dead", "dead")
        ]
    );

    // Aged in every time column each row has. The dead and pending rows
    // first: the run that deletes evt_old has seen them old.
    app.execute_sql(
        "update outbox set created_at = '2000-01-01T00:00:00+00:00', \
            next_attempt_ms = next_attempt_ms - 864000000000 \
         where event_id = 'evt_dead';
         update outbox set created_at = '2000-01-01T00:00:00+00:00' \
         where destination = 'stuck';",
    )
    .await
    .unwrap();
    app.execute_sql(
        "update outbox set delivered_ms = delivered_ms - 43200000 \
         where event_id = 'evt_recent';",
    )
    .await
    .unwrap();
    app.execute_sql(
        "update outbox set delivered_ms = delivered_ms - 172800000 \
         where event_id = 'evt_old';",
    )
    .await
    .unwrap();

    let billing = purged(&app, "billing", "evt_old").await;
    let states: Vec<_> = billing
        .iter()
        .map(|m| (m.event_id.as_str(), m.state.as_str()))
        .collect();
    assert_eq!(states, [("evt_recent", "delivered"), ("evt_dead", "dead")]);
    let stuck = app.store().outbox_messages("stuck", 0, 100).await.unwrap();
    assert_eq!(stuck.len(), 3, "{stuck:?}");
    assert!(stuck.iter().all(|m| m.state == "pending"), "{stuck:?}");
    app.assert_invariants().await;
}

both_backends!(old_delivered_rows_go_and_dead_and_pending_ones_stay);
