//! A relay wakes when a commit writes messages, not only at its poll: in
//! process on both backends, and on PostgreSQL across instances by
//! `LISTEN/NOTIFY`. The relays here poll once an hour, so a message sent
//! within seconds was sent because of a wake. Run on stores and relays of
//! the test's own, for a destination the app does not have.

use std::time::Duration;

use hookledger::outbox::{Relays, Timing};
use hookledger::telemetry::OutboxInstruments;

use crate::helpers::*;
use crate::outbox::{http_destination, side_store_routing};
use crate::outbox_postgres::posting;
use crate::receiver::{Answer, Receiver};

/// Relays that look only once an hour when nothing wakes them.
fn hourly() -> Timing {
    Timing {
        poll: Duration::from_secs(3600),
        ..Timing::default()
    }
}

/// Waits until `receiver` acknowledged `count` messages; panics after
/// 10 s, far inside the relays' poll.
async fn acknowledged(receiver: &Receiver, count: usize) {
    let started = std::time::Instant::now();
    while receiver.accepted().len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "message {count} was not sent: no wake"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each commit wakes the relays of the process that made it. The second
/// message is committed while the relay waits (its first claim and the
/// first message's record long done).
async fn a_commit_wakes_the_relays_of_its_process(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = TestApp::spawn(backend).await;
    let woken = http_destination("woken", &receiver.url(), "");
    let (store, destinations) = side_store_routing(&app, &woken).await;
    let instruments = OutboxInstruments::default();
    let grace = Duration::from_secs(5);
    let relays = Relays::spawn_with(&store, &destinations, grace, instruments, hourly());
    for (n, event_id) in ["evt_1", "evt_2"].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(500)).await;
        posting(&store, event_id).await.commit().await.unwrap();
        acknowledged(&receiver, n + 1).await;
    }
    relays.stop().await;
    assert_eq!(receiver.received().len(), 2);
}

both_backends!(a_commit_wakes_the_relays_of_its_process);

/// PostgreSQL: a commit in another instance (a store of its own, with no
/// relay: only its notifier) wakes this instance's relays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_in_another_instance_wakes_the_relays() {
    let test = "a_commit_in_another_instance_wakes_the_relays";
    let Some(backend) = Backend::postgres_or_skip(test) else {
        return;
    };
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let app = TestApp::spawn(backend).await;
    let woken = http_destination("woken", &receiver.url(), "");
    let (relaying, destinations) = side_store_routing(&app, &woken).await;
    let (writing, _) = side_store_routing(&app, &woken).await;
    let grace = Duration::from_secs(5);
    let instruments = OutboxInstruments::default();
    let relays = Relays::spawn_with(
        &relaying,
        &destinations,
        grace,
        instruments.clone(),
        hourly(),
    );
    let notifier = Relays::spawn(&writing, &[], grace, instruments);
    for (n, event_id) in ["evt_1", "evt_2"].into_iter().enumerate() {
        // Time for the listener to listen, and then for the relay to wait.
        tokio::time::sleep(Duration::from_millis(500)).await;
        posting(&writing, event_id).await.commit().await.unwrap();
        acknowledged(&receiver, n + 1).await;
    }
    notifier.stop().await;
    relays.stop().await;
    assert_eq!(receiver.received().len(), 2);
}
