//! A relay stopping (the server's graceful shutdown): a send in flight
//! finishes within the grace period and is recorded; one that does not is
//! cut off and its lease handed back, never marked delivered. Run on a
//! store and relays of the test's own, for a destination the app does not
//! have, so that the test decides when the relays stop.

use std::time::Duration;

use hookledger::config::Destination;
use hookledger::outbox::Relays;
use hookledger::store::{OutboxEntry, Store};
use hookledger::telemetry::OutboxInstruments;

use crate::helpers::*;
use crate::outbox::{http_destination, side_store_routing};
use crate::outbox_postgres::posting;
use crate::receiver::{Answer, Receiver};

const DESTINATION: &str = "leaving";

/// A store routing postings to [`DESTINATION`] at `receiver`, and relays
/// on it that wait `grace` for sends in flight at their stop; a posting
/// committed, and its send under way.
async fn sending(
    app: &TestApp,
    receiver: &Receiver,
    grace: Duration,
) -> (Store, Relays, Vec<Destination>) {
    let leaving = http_destination(DESTINATION, &receiver.url(), "");
    let (store, destinations) = side_store_routing(app, &leaving).await;
    let instruments = OutboxInstruments::default();
    let relays = Relays::spawn(&store, &destinations, grace, instruments);
    posting(&store, "evt_1").await.commit().await.unwrap();
    receiver.wait_for_requests(1).await;
    (store, relays, destinations)
}

async fn the_message(store: &Store) -> OutboxEntry {
    let messages = store.outbox_messages(DESTINATION, 0, 10).await.unwrap();
    assert_eq!(messages.len(), 1, "{messages:?}");
    messages.into_iter().next().unwrap()
}

/// The destination answers while the relays stop: the stop waits for the
/// answer, and the message is delivered, on its first attempt.
async fn a_send_in_flight_at_shutdown_finishes(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Held(200)).await;
    let app = TestApp::spawn(backend).await;
    let (store, relays, _) = sending(&app, &receiver, Duration::from_secs(10)).await;
    let stopping = tokio::spawn(relays.stop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !stopping.is_finished(),
        "the stop did not wait for the send"
    );
    receiver.release_held();
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the stop ends once the send did")
        .unwrap();
    let message = the_message(&store).await;
    assert_eq!((message.state.as_str(), message.attempts), ("delivered", 1));
    assert_eq!(receiver.received().len(), 1);
}

/// The destination does not answer within the grace period: the send is
/// cut off, the message stays pending with its attempt not counted and
/// due at once, and the next relay sends it (the same id) and records it.
async fn a_send_cut_off_at_shutdown_hands_its_lease_back(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Held(200)).await;
    let app = TestApp::spawn(backend).await;
    let (store, relays, destinations) = sending(&app, &receiver, Duration::from_millis(300)).await;
    tokio::time::timeout(Duration::from_secs(10), relays.stop())
        .await
        .expect("the stop ends after its grace period");
    let message = the_message(&store).await;
    assert_eq!((message.state.as_str(), message.attempts), ("pending", 0));

    receiver.release_held();
    let instruments = OutboxInstruments::default();
    let relays = Relays::spawn(&store, &destinations, Duration::from_secs(5), instruments);
    let started = std::time::Instant::now();
    while the_message(&store).await.state != "delivered" {
        // Well inside the cut-off claim's lease (timeout + 10 s): only a
        // handed-back lease is claimed this soon.
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "never sent again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relays.stop().await;
    assert_eq!(the_message(&store).await.attempts, 1);
    let received = receiver.received();
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(received[0].id, received[1].id);
}

both_backends!(
    a_send_in_flight_at_shutdown_finishes,
    a_send_cut_off_at_shutdown_hands_its_lease_back,
);
