//! Kept-alive connections: a sender that reuses its connection gets every
//! delivery answered on it, while every later head keeps the read deadline
//! of the first, an idle connection is closed, and an old one is closed
//! after an answer, never in the middle of a request. Raw TCP, so each test
//! sees exactly what the server sends on the one connection.

use std::time::{Duration, Instant};

use hookledger::cli::signed_sample;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{Backend, DEMO_SECRET, Options, TestApp, credit, json_with_status};

/// Read deadline 1 s; with 1 s for a pooled connection and 1 s statements,
/// one request's worst case (and a connection's keep-alive age) is 4 s.
const LIMITS: &str = "[limits]\nread_timeout_secs = 1\n";
const DATABASE: &str =
    "acquire_timeout_secs = 1\nstatement_timeout_ms = 1000\nbusy_timeout_ms = 1000\n";

async fn spawn(backend: Backend) -> TestApp {
    let options = Options {
        top_level: LIMITS,
        database: DATABASE,
        ..Options::default()
    };
    TestApp::spawn_with(backend, options).await
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.address.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// One signed delivery, as a provider's HTTP/1.1 client writes it.
pub(crate) fn request(event_id: &str, amount: i64) -> Vec<u8> {
    let signed = signed_sample(
        "standard-webhooks",
        &Secret::new(DEMO_SECRET),
        &credit(event_id, "acct_ka", amount),
    )
    .unwrap();
    let mut head = format!(
        "POST /webhooks/demo HTTP/1.1\r\nHost: hookledger\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        signed.body.len()
    );
    for (name, value) in &signed.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    [head.into_bytes(), signed.body].concat()
}

/// An answer read off the connection: its head (lower case) and body.
pub(crate) struct Answer {
    head: String,
    pub(crate) body: Value,
}

impl Answer {
    pub(crate) fn status(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }

    fn closes(&self) -> bool {
        self.head.contains("\r\nconnection: close")
    }
}

pub(crate) async fn exchange(stream: &mut TcpStream, bytes: &[u8]) -> Answer {
    stream.write_all(bytes).await.unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before an answer");
        received.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&received[..end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while received.len() < end + length {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed inside an answer");
        received.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&received[end..end + length]).unwrap_or(Value::Null);
    Answer { head, body }
}

/// What the server sent before it closed the connection, and when; `None`
/// if it was still open after `wait`.
async fn until_closed(stream: &mut TcpStream, wait: Duration) -> Option<(String, Instant)> {
    let mut received = Vec::new();
    let closed = tokio::time::timeout(wait, async {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = stream.read(&mut chunk).await {
            received.extend_from_slice(&chunk[..n]);
        }
        Instant::now()
    })
    .await
    .ok()?;
    Some((String::from_utf8_lossy(&received).into_owned(), closed))
}

async fn connection_counts(app: &TestApp) -> Value {
    let metrics = app.admin_get("/admin/api/metrics").await;
    json_with_status(metrics, StatusCode::OK).await["connections"].clone()
}

/// The count of connections ended as `kind`, once it is 1: a connection
/// the dispatcher ended is counted just after its socket closes.
async fn counted_once(app: &TestApp, kind: &str) {
    for _ in 0..100 {
        if connection_counts(app).await[kind] == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{kind} not counted once: {}", connection_counts(app).await);
}

async fn one_connection_serves_delivery_after_delivery(backend: Backend) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    for (n, amount) in [(1, 100), (2, 250), (3, 400)] {
        let answer = exchange(&mut stream, &request(&format!("ka_{n}"), amount)).await;
        assert_eq!(answer.status(), "200", "{}", answer.head);
        assert_eq!(answer.body["status"], "applied");
        assert!(!answer.closes(), "{}", answer.head);
    }
    // A redelivery on the same connection is a duplicate.
    let again = exchange(&mut stream, &request("ka_2", 250)).await;
    assert_eq!(again.body["duplicate"], true);
    assert_eq!(app.balance("acct_ka", "USD").await, 750);
    app.assert_invariants().await;
}

async fn a_later_head_that_stalls_is_closed(backend: Backend) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    let first = exchange(&mut stream, &request("ka_1", 100)).await;
    assert_eq!(first.status(), "200");
    let started = Instant::now();
    stream
        .write_all(b"POST /webhooks/demo HTTP/1.1\r\nHost: hook")
        .await
        .unwrap();
    let (answer, closed) = until_closed(&mut stream, Duration::from_secs(5))
        .await
        .expect("the stalled head is cut within its deadline");
    // No 408 after a first answer: an answer could still be in flight.
    assert_eq!(answer, "");
    let waited = closed - started;
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    counted_once(&app, "head_timeout").await;
    assert_eq!(app.balance("acct_ka", "USD").await, 100);
}

async fn a_client_that_does_not_read_its_answers_is_cut_off(backend: Backend) {
    // Pipelined requests whose answers (30 MB) fill the client's receive
    // buffer and the server's send buffer: actix stops writing, then
    // reading, and only the connection's own task can end it, two read
    // deadlines after the last answer. The hard lifetime here is 8 s.
    let app = spawn(backend).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let server = app.address.trim_start_matches("http://").parse().unwrap();
    let mut stream = socket.connect(server).await.unwrap();
    let opened = Instant::now();
    let requests = b"GET /healthz HTTP/1.1\r\nHost: hookledger\r\n\r\n".repeat(200_000);
    // The write stalls once the server stops reading, and fails once the
    // server closes the connection with requests unread.
    let written = tokio::time::timeout(Duration::from_secs(15), stream.write_all(&requests)).await;
    let closed = opened.elapsed();
    let counts = connection_counts(&app).await;
    assert!(matches!(written, Ok(Err(_))), "{written:?}: {counts}");
    assert!(closed < Duration::from_secs(6), "{closed:?}: {counts}");
    // Counted just after the close where the dispatcher ended it (a late
    // head's read failing), before it where the connection's task did.
    counted_once(&app, "stalled_after_answer").await;
}

async fn an_idle_connection_is_closed_without_a_word(backend: Backend) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    exchange(&mut stream, &request("ka_1", 100)).await;
    let (answer, _) = until_closed(&mut stream, Duration::from_secs(5))
        .await
        .expect("an idle connection is closed after the read deadline");
    assert_eq!(answer, "", "nothing is sent to an idle connection");
}

async fn an_old_connection_is_closed_after_an_answer(backend: Backend) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    let opened = Instant::now();
    let mut answers = 0;
    let closing = loop {
        let answer = exchange(&mut stream, &request(&format!("ka_{answers}"), 100)).await;
        assert_eq!(answer.status(), "200", "{}", answer.head);
        answers += 1;
        if answer.closes() {
            break opened.elapsed();
        }
        assert!(opened.elapsed() < Duration::from_secs(8), "never closed");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    // One request's worst case is 4 s: an answer given past 4 - 2 x 1 s
    // closes.
    assert!(closing > Duration::from_secs(2), "{closing:?}");
    assert!(answers > 1, "kept alive until then");
    let (rest, _) = until_closed(&mut stream, Duration::from_secs(2))
        .await
        .expect("closed after the answer that said so");
    assert_eq!(rest, "");
    assert_eq!(app.balance("acct_ka", "USD").await, 100 * answers);
    app.assert_invariants().await;
}

async fn blank_lines_before_a_head_do_not_stop_its_clock(backend: Backend) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    let started = Instant::now();
    stream
        .write_all(b"\r\n\r\nPOST /webhooks/demo HTTP/1.1\r\n")
        .await
        .unwrap();
    let (answer, closed) = until_closed(&mut stream, Duration::from_secs(5))
        .await
        .expect("the head is cut within its deadline");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    assert!(closed - started < Duration::from_secs(3));
}

async fn a_body_announced_with_expect_100_continue_is_served_on_a_kept_alive_connection(
    backend: Backend,
) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    let full = request("ka_1", 100);
    let split = full.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 2;
    let (head, body) = full.split_at(split);
    let mut expecting = head.to_vec();
    expecting.extend_from_slice(b"Expect: 100-continue\r\n");
    stream.write_all(&expecting).await.unwrap();
    let continued = exchange(&mut stream, b"\r\n").await;
    assert_eq!(continued.status(), "100", "{}", continued.head);
    // The body after a pause that a head could not take: it is the body
    // reader's deadline (1 s from the head) that bounds it.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let answer = exchange(&mut stream, &body[2..]).await;
    assert_eq!(answer.status(), "200", "{}", answer.head);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let next = exchange(&mut stream, &request("ka_2", 250)).await;
    assert_eq!(next.status(), "200", "{}", next.head);
    assert_eq!(app.balance("acct_ka", "USD").await, 350);
}

async fn a_stalled_body_after_an_early_answer_is_cut_within_twice_the_read_deadline(
    backend: Backend,
) {
    let app = spawn(backend).await;
    let mut stream = connect(&app).await;
    // Refused at once (no such source); actix then drains the body.
    let started = Instant::now();
    stream
        .write_all(
            b"POST /webhooks/nope HTTP/1.1\r\nHost: hookledger\r\n\
              Transfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n",
        )
        .await
        .unwrap();
    let (answer, closed) = until_closed(&mut stream, Duration::from_secs(6))
        .await
        .expect("the drain is cut well before the connection's hard lifetime (8 s)");
    assert!(answer.starts_with("HTTP/1.1 404 "), "{answer:?}");
    assert!(
        closed - started < Duration::from_secs(4),
        "{:?}",
        closed - started
    );
}

both_backends!(
    blank_lines_before_a_head_do_not_stop_its_clock,
    a_body_announced_with_expect_100_continue_is_served_on_a_kept_alive_connection,
    a_stalled_body_after_an_early_answer_is_cut_within_twice_the_read_deadline,
    one_connection_serves_delivery_after_delivery,
    a_later_head_that_stalls_is_closed,
    a_client_that_does_not_read_its_answers_is_cut_off,
    an_idle_connection_is_closed_without_a_word,
    an_old_connection_is_closed_after_an_answer,
);
