//! The relay's bounds against a destination: a name that does not resolve
//! is retried like any failure; a `Retry-After` sets the next attempt; and
//! a destination that never answers holds at most one claim's sends (64)
//! at once.

use std::time::Duration;

use chrono::Utc;
use hookledger::outbox::Relays;
use hookledger::telemetry::OutboxInstruments;

use crate::helpers::*;
use crate::outbox::{app_with, http_destination, selected, side_store_routing};
use crate::outbox_faults::wait_for;
use crate::outbox_postgres::posting;
use crate::receiver::{Answer, Receiver};

/// DNS failure: retried with backoff, the reason kept.
async fn a_host_that_does_not_resolve_is_retried(backend: Backend) {
    let destination = http_destination("flaky", "http://hookledger-test.invalid/hooks", "");
    let app = app_with(backend, &destination).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    let message = wait_for(&app, |m| m.attempts >= 2).await;
    assert_eq!(message.state, "pending");
    let error = message.last_error.unwrap_or_default();
    assert!(error.starts_with("could not connect"), "{error}");
}

/// A 503 with `Retry-After: 120`: the next attempt is two minutes away,
/// where the first backoff alone would be at most a second.
async fn a_retry_after_sets_the_next_attempt(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::RetryAfter(503, 120)).await;
    let destination = http_destination("flaky", &receiver.url(), "");
    let app = app_with(backend, &destination).await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    // Recorded: the failure's reason is there once its row is.
    wait_for(&app, |m| m.last_error.is_some()).await;
    let due: Vec<(i64,)> = selected(
        &app,
        "select next_attempt_ms from outbox where destination = 'flaky'",
    )
    .await;
    let wait_ms = due[0].0 - Utc::now().timestamp_millis();
    assert!(
        (100_000..=121_000).contains(&wait_ms),
        "next attempt in {wait_ms} ms"
    );
    assert_eq!(receiver.received().len(), 1);
}

/// A destination that never answers: one claim's 64 sends are in flight,
/// and no more, however many messages wait.
async fn a_destination_that_never_answers_holds_at_most_one_claim(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Hang).await;
    let app = TestApp::spawn(backend).await;
    let hanging = http_destination("hanging", &receiver.url(), "timeout_secs = 60");
    let (store, destinations) = side_store_routing(&app, &hanging).await;
    // All committed before the relay starts: its first claim is full.
    for i in 0..100 {
        posting(&store, &format!("evt_{i}"))
            .await
            .commit()
            .await
            .unwrap();
    }
    let grace = Duration::from_millis(100);
    let relays = Relays::spawn(&store, &destinations, grace, OutboxInstruments::default());
    receiver.wait_for_requests(64).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.received().len(), 64, "sends beyond one claim");
    relays.stop().await;
}

both_backends!(
    a_host_that_does_not_resolve_is_retried,
    a_retry_after_sets_the_next_attempt,
    a_destination_that_never_answers_holds_at_most_one_claim,
);
