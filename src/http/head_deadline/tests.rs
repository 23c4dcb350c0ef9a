//! The wrapper on an in-memory socket, in paused time, with the
//! middleware's part played by the test.

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, duplex};

use super::*;

const LIMIT: Duration = Duration::from_secs(5);

fn pair() -> (HeadDeadline<DuplexStream>, DuplexStream) {
    let (server, client) = duplex(4096);
    (
        HeadDeadline::new(server, ConnectionPhase::new(LIMIT)),
        client,
    )
}

async fn read_some(server: &mut HeadDeadline<DuplexStream>) -> io::Result<Vec<u8>> {
    let mut buf = [0u8; 1024];
    let n = server.read(&mut buf).await?;
    Ok(buf[..n].to_vec())
}

/// A request: its head read, the app reached, an answer written.
async fn one_exchange(server: &mut HeadDeadline<DuplexStream>, client: &mut DuplexStream) {
    client.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
    read_some(server).await.unwrap();
    server.phase().serving();
    server.phase().answered();
    let answer = b"HTTP/1.1 200 OK\r\n\r\n";
    server.write_all(answer).await.unwrap();
    server.flush().await.unwrap();
    let mut read = vec![0u8; answer.len()];
    client.read_exact(&mut read).await.unwrap();
}

async fn assert_408(client: &mut DuplexStream) {
    let mut answer = vec![0u8; TIMED_OUT.len()];
    client.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer, TIMED_OUT);
}

/// What the client reads until the server side is dropped.
async fn rest(server: HeadDeadline<DuplexStream>, client: &mut DuplexStream) -> Vec<u8> {
    drop(server);
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).await.unwrap();
    rest
}

#[tokio::test(start_paused = true)]
async fn the_first_head_is_timed_from_the_opening_and_answered_408() {
    let started = Instant::now();
    let (mut server, mut client) = pair();
    let error = read_some(&mut server).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    assert_eq!(started.elapsed(), LIMIT);
    assert_408(&mut client).await;
}

#[tokio::test(start_paused = true)]
async fn a_later_head_that_stalls_fails_without_a_word() {
    // An answer of ours could still be in flight ahead of a 408.
    let (mut server, mut client) = pair();
    one_exchange(&mut server, &mut client).await;
    tokio::time::sleep(LIMIT).await;
    client.write_all(b"POST / HTTP/1.1\r\nA:").await.unwrap();
    read_some(&mut server).await.unwrap();
    let began = Instant::now();
    let error = read_some(&mut server).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    assert_eq!(began.elapsed(), LIMIT);
    assert_eq!(rest(server, &mut client).await, b"");
}

#[tokio::test(start_paused = true)]
async fn blank_lines_do_not_end_a_head() {
    // httparse skips empty lines before a request line: only the app being
    // reached ends a head.
    let (mut server, mut client) = pair();
    client.write_all(b"\r\n\r\n\n\n").await.unwrap();
    read_some(&mut server).await.unwrap();
    let error = read_some(&mut server).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    assert_408(&mut client).await;
}

#[tokio::test(start_paused = true)]
async fn a_head_dribbled_byte_by_byte_is_cut_at_the_deadline() {
    let (mut server, mut client) = pair();
    one_exchange(&mut server, &mut client).await;
    let mut sent = 0;
    let failed = loop {
        client.write_all(b"x").await.unwrap();
        sent += 1;
        match read_some(&mut server).await {
            Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(error) => break error,
        }
    };
    assert_eq!(failed.kind(), io::ErrorKind::TimedOut);
    assert_eq!(sent, 11, "cut at the first byte past 5 s");
}

#[tokio::test(start_paused = true)]
async fn a_request_being_served_is_not_timed_here() {
    // A slow body after `100 Continue`, and a slow handler: their deadlines
    // are the body reader's and the database's.
    let (mut server, mut client) = pair();
    client
        .write_all(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n")
        .await
        .unwrap();
    read_some(&mut server).await.unwrap();
    server
        .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
        .await
        .unwrap();
    server.flush().await.unwrap();
    server.phase().serving();
    tokio::time::sleep(LIMIT * 3).await;
    client.write_all(b"{\"a\": 1}").await.unwrap();
    assert_eq!(read_some(&mut server).await.unwrap().len(), 8);
    tokio::time::sleep(LIMIT * 3).await;
    server.phase().answered();
    server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
    // The connection goes on: a next request in time is served.
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert!(!read_some(&mut server).await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn heads_in_time_keep_the_connection_going() {
    let (mut server, mut client) = pair();
    for _ in 0..4 {
        one_exchange(&mut server, &mut client).await;
        tokio::time::sleep(LIMIT - Duration::from_millis(1)).await;
    }
    let started = Instant::now();
    one_exchange(&mut server, &mut client).await;
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn the_connection_task_sees_each_phase_overdue() {
    // It acts where actix no longer reads: a client that does not read its
    // answers, a drain stalled after an early answer.
    let phase = ConnectionPhase::new(LIMIT);
    let started = Instant::now();
    assert_eq!(phase.overdue().await, "head_timeout");
    assert_eq!(started.elapsed(), LIMIT + GRACE);

    let phase = ConnectionPhase::new(LIMIT);
    phase.serving();
    let serving = tokio::time::timeout(LIMIT * 20, phase.overdue()).await;
    assert!(serving.is_err(), "a request being served is never overdue");
    phase.answered();
    let answered = Instant::now();
    assert_eq!(phase.overdue().await, "stalled_after_answer");
    assert_eq!(answered.elapsed(), LIMIT * 2);

    // Each answer moves the deadline on (two answered in one go).
    let phase = ConnectionPhase::new(LIMIT);
    phase.answered();
    tokio::time::sleep(LIMIT).await;
    phase.serving();
    phase.answered();
    let second = Instant::now();
    assert_eq!(phase.overdue().await, "stalled_after_answer");
    assert_eq!(second.elapsed(), LIMIT * 2);
}

#[tokio::test(start_paused = true)]
async fn a_late_head_from_a_client_that_does_not_read_is_a_stall() {
    // Its pipelined heads are read, but none is parsed while its answers
    // cannot be written: the head is late because of the stall.
    let (mut server, mut client) = pair();
    one_exchange(&mut server, &mut client).await;
    let answers = vec![b'a'; 64 * 1024];
    let blocked = tokio::time::timeout(LIMIT, server.write_all(&answers)).await;
    assert!(
        blocked.is_err(),
        "the client reads nothing: the write blocks"
    );
    client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    read_some(&mut server).await.unwrap();
    let error = read_some(&mut server).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    assert_eq!(server.phase().late_head(), "stalled_after_answer");
    assert!(server.phase().stalled());
    assert_eq!(server.phase().overdue().await, "stalled_after_answer");

    // Once a write goes through again, a late head is a late head.
    let mut drained = vec![0u8; 4096];
    client.read_exact(&mut drained).await.unwrap();
    server.write_all(b"x").await.unwrap();
    assert_eq!(server.phase().late_head(), "head_timeout");
    assert!(!server.phase().stalled());
}
