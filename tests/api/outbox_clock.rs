//! Where several instances share one PostgreSQL, their relays judge the
//! outbox's leases by the database's clock, not their hosts': a relay on a
//! host whose clock runs an hour ahead takes none of the rows another
//! relay holds; and a reading of that clock is timed without the wait for
//! a pooled connection.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use hookledger::clock::Clock;
use hookledger::outbox::{Relays, Timing};
use hookledger::store::{PoolSettings, Store};
use hookledger::telemetry::OutboxInstruments;

use crate::helpers::*;
use crate::outbox::{http_destination, side_store_routing};
use crate::outbox_postgres::posting_of;
use crate::receiver::{Answer, Receiver};

/// This host's clock, `.0` ahead.
struct Ahead(TimeDelta);

impl Clock for Ahead {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.0
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_whose_host_clock_runs_ahead_takes_no_lease_another_holds() {
    let Some(backend) = Backend::postgres_or_skip("a_relay_whose_host_clock_runs_ahead") else {
        return;
    };
    let receiver = Receiver::start(&[], Answer::Held(200)).await;
    let app = TestApp::spawn(backend).await;
    let sink = http_destination("sink", &receiver.url(), "");
    let (store, destinations) = side_store_routing(&app, &sink).await;
    for i in 0..3 {
        let (event, account) = (format!("evt_{i}"), format!("cus_{i}"));
        let tx = posting_of(&store, &event, &account, None).await;
        tx.commit().await.unwrap();
    }
    let grace = Duration::from_secs(1);
    let on_time = Relays::spawn(&store, &destinations, grace, OutboxInstruments::default());
    // Claimed and sent; the answers are held, so the lease (the send's
    // 10 s timeout and a margin) is still running.
    receiver.wait_for_requests(3).await;
    let ahead = Timing {
        clock: Arc::new(Ahead(TimeDelta::hours(1))),
        ..Timing::default()
    };
    let late = Relays::spawn_with(
        &store,
        &destinations,
        grace,
        OutboxInstruments::default(),
        ahead,
    );
    // It claims at once, then every second: three looks at the rows. By
    // its host's clock their lease ended an hour ago.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = receiver.received().len();
    receiver.release_held();
    let started = std::time::Instant::now();
    let messages = loop {
        let messages = store.outbox_messages("sink", 0, 10).await.unwrap();
        if messages.iter().all(|m| m.state == "delivered") {
            break messages;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{messages:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    late.stop().await;
    on_time.stop().await;
    assert_eq!(sent, 3, "the relay ahead sent rows another relay held");
    let attempts: Vec<i64> = messages.iter().map(|m| m.attempts).collect();
    assert_eq!(attempts, [1, 1, 1]);
    assert_eq!(receiver.received().len(), 3);
}

/// The only connection of the pool is busy for 2 s when the clock is read:
/// the reading stands for when the query ran, not for the middle of the
/// wait (which would put a relay's clock a second ahead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reading_of_the_database_clock_leaves_out_the_wait_for_a_connection() {
    let Some(backend) = Backend::postgres_or_skip("a_reading_of_the_database_clock") else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let settings = PoolSettings {
        max_connections: 1,
        acquire_timeout: Duration::from_secs(30),
        busy_timeout: Duration::from_secs(5),
        statement_timeout: Duration::from_secs(30),
    };
    let store = Store::connect(&app.database_url, &settings).await.unwrap();
    let Store::Postgres(pool, ..) = &store else {
        panic!("a PostgreSQL store");
    };
    let held = pool.acquire().await.unwrap();
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        drop(held);
    });
    let reading = store.database_clock().await.unwrap().unwrap();
    release.await.unwrap();
    let later = store.database_clock().await.unwrap().unwrap();
    // The first reading, counted on to the second's moment.
    let counted = reading.ms + (later.at - reading.at).as_millis() as i64;
    let off = counted - later.ms;
    assert!(off.abs() < 200, "the reading is {off} ms off");
    assert!(
        reading.round_trip < Duration::from_millis(500),
        "{reading:?}"
    );
}
