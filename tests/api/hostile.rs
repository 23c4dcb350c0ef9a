//! Clients of the public endpoint that do not play fair: bodies that never
//! finish, floods of connections from one address, more connections than the
//! instance admits. Raw TCP, so each client sends exactly what it means to,
//! from a loopback address of its own (127.0.0.2, 127.0.0.3, ...), which is
//! how the per-address bound tells them apart.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hookledger::cli::signed_sample;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::helpers::{Backend, DEMO_SECRET, Options, TestApp, credit, json_with_status};

const ATTACKER: &str = "127.0.0.3";
const SENDER: &str = "127.0.0.2";

fn limits(read_timeout_secs: u64, total: u64, per_address: u64) -> String {
    format!(
        "[limits]\nread_timeout_secs = {read_timeout_secs}\nmax_connections = {total}\n\
         max_connections_per_address = {per_address}\n"
    )
}

pub(crate) async fn spawn(backend: Backend, limits: &str) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options {
            top_level: limits,
            ..Options::default()
        },
    )
    .await
}

pub(crate) async fn connect_from(app: &TestApp, local: &str) -> TcpStream {
    let server: SocketAddr = app.address.trim_start_matches("http://").parse().unwrap();
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    socket.connect(server).await.unwrap()
}

/// Complete headers announcing 1000 bytes, then ten of them and silence.
async fn stall_body(app: &TestApp, local: &str, path: &str, content_type: &str) -> TcpStream {
    let mut stream = connect_from(app, local).await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: hookledger\r\nContent-Type: {content_type}\r\n\
         Content-Length: 1000\r\n\r\n0123456789"
    );
    // A connection the gate closed may already refuse the write.
    let _ = stream.write_all(head.as_bytes()).await;
    stream
}

/// Headers for a chunked body, one chunk, then silence: a body actix drains
/// after the handler dropped it, with no deadline of its own.
async fn stall_chunked(app: &TestApp, path: &str) -> TcpStream {
    let mut stream = connect_from(app, ATTACKER).await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: hookledger\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"
    );
    let _ = stream.write_all(head.as_bytes()).await;
    stream
}

/// What the server sent before closing the connection: `Some("")` when it
/// closed without a word, `None` if it was still open after `wait`.
async fn until_closed(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(wait, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    read.ok()
        .map(|()| String::from_utf8_lossy(&received).into_owned())
}

/// Waits for every stream to close: how many were served (answered 408 at
/// the deadline) and how many were closed without a word.
async fn tally(streams: &mut [TcpStream]) -> (usize, usize) {
    let (mut timed_out, mut refused) = (0, 0);
    for stream in streams {
        let answer = until_closed(stream, Duration::from_secs(10))
            .await
            .expect("every connection is closed within the deadline");
        if answer.is_empty() {
            refused += 1;
        } else {
            assert_eq!(status_line(&answer), "HTTP/1.1 408 Request Timeout");
            timed_out += 1;
        }
    }
    (timed_out, refused)
}

fn status_line(answer: &str) -> &str {
    answer.lines().next().unwrap_or("")
}

fn client_from(local: &str) -> reqwest::Client {
    hookledger::tls::client_builder()
        .local_address(Some(local.parse().unwrap()))
        .build()
        .unwrap()
}

async fn metrics(app: &TestApp) -> Value {
    json_with_status(app.admin_get("/admin/api/metrics").await, StatusCode::OK).await
}

async fn deliver_from(app: &TestApp, local: &str, event_id: &str) -> Value {
    let signed = signed_sample(
        "standard-webhooks",
        &Secret::new(DEMO_SECRET),
        &credit(event_id, "acct_edge", 500),
    )
    .unwrap();
    let response = app
        .post_signed_with(&client_from(local), "demo", &signed)
        .await;
    json_with_status(response, StatusCode::OK).await
}

async fn a_stalled_body_is_answered_408_and_closed(backend: Backend) {
    let app = spawn(backend, &limits(1, 100, 10)).await;
    let started = Instant::now();
    let mut webhook = stall_body(&app, ATTACKER, "/webhooks/demo", "application/json").await;
    let mut login = stall_body(
        &app,
        ATTACKER,
        "/admin/login",
        "application/x-www-form-urlencoded",
    )
    .await;
    for stream in [&mut webhook, &mut login] {
        let answer = until_closed(stream, Duration::from_secs(10))
            .await
            .expect("the connection was closed");
        assert_eq!(status_line(&answer), "HTTP/1.1 408 Request Timeout");
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    // Routes that never read the body answer at once and close: the rest of
    // the body can never hold the connection.
    let mut unknown = stall_body(&app, ATTACKER, "/webhooks/nope", "application/json").await;
    let answer = until_closed(&mut unknown, Duration::from_secs(5)).await;
    assert_eq!(
        answer.as_deref().map(status_line),
        Some("HTTP/1.1 404 Not Found")
    );
    let events = json_with_status(app.admin_get("/admin/api/events").await, StatusCode::OK).await;
    assert_eq!(
        events["events"],
        serde_json::json!([]),
        "nothing was written"
    );
}

/// A stalled body ends with the body reader's deadline (1 s here) where a
/// handler reads it, and after an early answer (an unknown source) within
/// twice the read deadline of that answer (`HeadDeadline`): 2 s here, under
/// one request's worst case (2 x 1 + 1 + 1 = 4 s) and far under a
/// connection's hard lifetime (8 s).
async fn a_stalled_chunked_body_cannot_hold_a_connection(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Options {
            top_level: &limits(1, 100, 10),
            database: "acquire_timeout_secs = 1\nstatement_timeout_ms = 1000\nbusy_timeout_ms = 1000",
            ..Options::default()
        },
    )
    .await;
    let started = Instant::now();
    let mut streams = vec![
        stall_chunked(&app, "/webhooks/nope").await,
        stall_chunked(&app, "/webhooks/demo").await,
    ];
    for stream in &mut streams {
        let answer = until_closed(stream, Duration::from_secs(15)).await;
        assert!(answer.is_some(), "the connection was closed");
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let events = json_with_status(app.admin_get("/admin/api/events").await, StatusCode::OK).await;
    assert_eq!(
        events["events"],
        serde_json::json!([]),
        "nothing was written"
    );
}

async fn a_flood_from_one_address_leaves_room_for_everyone_else(backend: Backend) {
    // 40 places: one address may take 20 (half) while the instance is not
    // busy, and no more once it is.
    let app = spawn(backend, &limits(2, 40, 8)).await;
    let mut flood = Vec::new();
    for _ in 0..30 {
        flood.push(stall_body(&app, ATTACKER, "/webhooks/demo", "application/json").await);
    }
    // While the flood holds its places, another sender is served.
    let served = deliver_from(&app, SENDER, "evt_during_flood").await;
    assert_eq!(served["status"], "applied");

    let (timed_out, refused) = tally(&mut flood).await;
    // At most half the places; the test's own sender and admin client
    // count too, so the flood may have got one or two fewer.
    assert_eq!(timed_out + refused, 30);
    assert!((18..=20).contains(&timed_out), "{timed_out} served");
    assert_eq!(
        metrics(&app).await["connections"]["refused_per_address"],
        refused
    );
    // The places came back: the same address is served again.
    let again = deliver_from(&app, ATTACKER, "evt_after_flood").await;
    assert_eq!(again["status"], "applied");
}

async fn connections_beyond_the_total_bound_are_closed_unserved(backend: Backend) {
    let app = spawn(backend, &limits(2, 3, 0)).await;
    let mut streams = Vec::new();
    for local in [ATTACKER, ATTACKER, ATTACKER, SENDER] {
        streams.push(stall_body(&app, local, "/webhooks/demo", "application/json").await);
    }
    // Which one is refused depends on which worker admits first; exactly
    // one is, at once, and the others are served (408 at the deadline).
    let (timed_out, refused) = tally(&mut streams).await;
    assert_eq!((timed_out, refused), (3, 1));
    assert_eq!(metrics(&app).await["connections"]["refused_full"], 1);
}

both_backends!(
    a_stalled_body_is_answered_408_and_closed,
    a_stalled_chunked_body_cannot_hold_a_connection,
    a_flood_from_one_address_leaves_room_for_everyone_else,
    connections_beyond_the_total_bound_are_closed_unserved,
);
