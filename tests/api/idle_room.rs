//! Idle kept-alive connections do not cost anyone a place: a client that
//! pools connections and never closes them (one new connection per
//! delivery, each kept open after its answer) holds places it does not
//! use, and the gate closes the idle ones, cleanly, to make room, instead
//! of refusing the client's next connection or another sender's. Raw TCP
//! from loopback addresses of their own, as in `hostile`.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::helpers::{Backend, TestApp, json_with_status};
use crate::hostile::{connect_from, spawn};
use crate::keep_alive::{exchange, request};

const POOLER: &str = "127.0.0.5";
const SENDER: &str = "127.0.0.6";

/// The default bounds (1024 places, 64 per address once half are used),
/// with a read timeout long enough that no idle connection is closed by
/// keep-alive's own timer while a test runs.
const DEFAULT_BOUNDS: &str = "[limits]\nread_timeout_secs = 60\n";

/// `count` deliveries from `local`, `in_flight` at a time, each on a new
/// connection kept open after its answer; the open connections. Every
/// delivery must be answered `applied` (a refused connection is closed
/// before an answer, which fails the exchange).
async fn deliver_kept_alive(
    app: &TestApp,
    local: &str,
    prefix: &str,
    count: usize,
    in_flight: usize,
) -> Vec<TcpStream> {
    futures::stream::iter(0..count)
        .map(|n| async move {
            let mut stream = connect_from(app, local).await;
            let answer = exchange(&mut stream, &request(&format!("{prefix}_{n}"), 1)).await;
            assert_eq!(answer.status(), "200", "{prefix}_{n}: {}", answer.body);
            assert_eq!(answer.body["status"], "applied", "{}", answer.body);
            stream
        })
        .buffer_unordered(in_flight)
        .collect()
        .await
}

async fn connection_counts(app: &TestApp) -> Value {
    let metrics = app.admin_get("/admin/api/metrics").await;
    json_with_status(metrics, StatusCode::OK).await["connections"].clone()
}

/// How each kept connection stands: (closed cleanly, reset). One the
/// server closed reads end-of-stream; a reset would read an error.
async fn closed_and_reset(streams: &mut [TcpStream]) -> (usize, usize) {
    let (mut closed, mut reset) = (0, 0);
    for stream in streams {
        let mut byte = [0u8; 1];
        match tokio::time::timeout(Duration::from_millis(20), stream.read(&mut byte)).await {
            Ok(Ok(0)) => closed += 1,
            Ok(Ok(_)) => panic!("nothing was asked on an idle connection"),
            Ok(Err(_)) => reset += 1,
            Err(_) => {}
        }
    }
    (closed, reset)
}

/// The reproduction: one address, 650 deliveries, 8 in flight, every
/// answered connection kept open. Past 512 open connections the address
/// held more than its share, and every new connection was reset.
async fn a_pooling_sender_gets_every_answer(backend: Backend) {
    let app = spawn(backend, DEFAULT_BOUNDS).await;
    let mut kept = deliver_kept_alive(&app, POOLER, "pool", 650, 8).await;
    assert_eq!(app.balance("acct_ka", "USD").await, 650);
    let counts = connection_counts(&app).await;
    assert_eq!(counts["refused_per_address"], Value::Null, "{counts}");
    let reclaimed = counts["closed_idle_for_room"].as_u64().unwrap_or(0);
    // At most 512 of its connections stay open (half the places), and only
    // idle ones were closed: each cleanly, never reset.
    assert!(reclaimed >= 650 - 512, "{counts}");
    let (closed, reset) = closed_and_reset(&mut kept).await;
    assert_eq!(reset, 0);
    assert_eq!(closed as u64, reclaimed, "{counts}");
    // Prometheus says the same.
    let scraped = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = scraped.text().await.unwrap();
    let series = format!(
        "hookledger_connections_refused_total{{reason=\"closed_idle_for_room\"}} {reclaimed}\n"
    );
    assert!(text.contains(&series), "{text}");
    app.assert_invariants().await;
}

/// One address holds 600 idle connections; another's sender, which opens a
/// connection per delivery and keeps them too, is served in full.
async fn idle_connections_of_one_address_do_not_stop_another(backend: Backend) {
    let app = spawn(backend, DEFAULT_BOUNDS).await;
    let _idle = deliver_kept_alive(&app, POOLER, "idle", 600, 8).await;
    let _sender = deliver_kept_alive(&app, SENDER, "sender", 100, 8).await;
    assert_eq!(app.balance("acct_ka", "USD").await, 700);
    let counts = connection_counts(&app).await;
    assert_eq!(counts["refused_per_address"], Value::Null, "{counts}");
    assert_eq!(counts["refused_full"], Value::Null, "{counts}");
}

/// A full instance takes any address's idle connection before refusing:
/// 40 places and no per-address bound, all held idle by one address;
/// another address is served with none left.
async fn a_full_instance_closes_anyones_idle_connection_for_room(backend: Backend) {
    let limits = "[limits]\nread_timeout_secs = 60\nmax_connections = 40\n\
                  max_connections_per_address = 0\n";
    let app = spawn(backend, limits).await;
    let mut idle = deliver_kept_alive(&app, POOLER, "idle", 39, 4).await;
    // The 40th place is the test's own admin client, which pools too.
    let mut sender = deliver_kept_alive(&app, SENDER, "sender", 10, 1).await;
    let before = connection_counts(&app).await;
    assert_eq!(before["refused_full"], Value::Null, "{before}");
    // The first delivery took an idle connection of the other address's;
    // each later one the sender's own idle connection, as its own come
    // first.
    let (pool_closed, pool_reset) = closed_and_reset(&mut idle).await;
    let (own_closed, own_reset) = closed_and_reset(&mut sender).await;
    assert_eq!((pool_reset, own_reset), (0, 0));
    assert!(pool_closed >= 1, "{before}");
    let closed = (pool_closed + own_closed) as u64;
    assert!(closed >= 9, "{closed} closed; {before}");
    // Every connection closed for room is counted. The admin client's own
    // pooled connection is one of the 40 places too: it may be the one a
    // delivery reclaims (counted, not among the test's), and a scrape
    // that then needs a place reclaims one itself, which the count it
    // answers with may not include yet; a later scrape's does.
    let after = connection_counts(&app).await;
    let reclaimed = after["closed_idle_for_room"].as_u64().unwrap_or(0);
    assert!(
        (closed..=closed + 2).contains(&reclaimed),
        "{closed} closed; {before} then {after}"
    );
}

both_backends!(
    a_pooling_sender_gets_every_answer,
    idle_connections_of_one_address_do_not_stop_another,
    a_full_instance_closes_anyones_idle_connection_for_room,
);
