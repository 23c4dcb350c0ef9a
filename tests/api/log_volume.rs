//! What any client can make hookledger log is bounded: failed verifications,
//! malformed requests and wrong admin tokens are logged a few times per kind
//! and window, then summarised ("40 failed verifications for source demo in
//! the last 2 s (10 logged)"), while the metrics count every one. The real
//! binary, so the real log subscriber and its filter are what is checked.

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::helpers::Backend;
use crate::process::{Server, demo_on};

/// Lines a kind may log per window (`startup::LOG_LINES_PER_WINDOW`).
const BUDGET: usize = 10;

async fn send_garbage(base: &str) {
    let mut stream = TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap();
    stream.write_all(b"GARBAGE\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut answer).await;
}

/// Every failure of each kind, logged or summarised.
const KINDS: [(&str, &str); 2] = [
    (
        "failed verifications for source demo",
        "webhook-id header is missing",
    ),
    (
        "connection errors of kind malformed_request",
        "connection ended: request parse error",
    ),
];

/// The log once every failure has been logged or summarised (summaries
/// come on the server's own timer), or as it is after 20 s.
fn settled_log(server: &Server, failures: usize) -> String {
    let started = Instant::now();
    loop {
        let log = server.log();
        let settled = KINDS
            .iter()
            .all(|(kind, line)| count(&log, line) + suppressed(&log, kind) == failures);
        if settled || started.elapsed() > Duration::from_secs(20) {
            return log;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

/// The occurrences of `kind` the summaries say were not logged: each reads
/// "<total> <kind> in the last 2 s (<logged> logged)".
fn suppressed(log: &str, kind: &str) -> usize {
    let marker = format!(" {kind} in the last 2 s (");
    log.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(&marker)?;
            let total: usize = head.rsplit(' ').next()?.parse().ok()?;
            let logged: usize = tail.split(' ').next()?.parse().ok()?;
            Some(total - logged)
        })
        .sum()
}

async fn a_flood_of_failures_logs_a_bounded_number_of_lines(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let env = [("HOOKLEDGER_LIMITS_LOG_SUMMARY_SECS", "2")];
    let (server, _database) = demo_on(&backend, dir.path(), &env).await;
    let base = server.base();
    let client = hookledger::tls::client();
    for _ in 0..40 {
        let response = client
            .post(format!("{base}/webhooks/demo"))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::UNAUTHORIZED);
        send_garbage(&base).await;
    }
    let log = settled_log(&server, 40);
    assert_eq!(
        count(&log, "ERROR"),
        0,
        "no client can cause an ERROR line: {log}"
    );
    for (kind, line) in KINDS {
        // The flood takes well under a window but may straddle the
        // boundary of two: each logs at most its budget, and every
        // occurrence is either logged or counted in a summary.
        let logged = count(&log, line);
        assert!((BUDGET..=2 * BUDGET).contains(&logged), "{kind}: {log}");
        assert_eq!(logged + suppressed(&log, kind), 40, "{kind}: {log}");
    }
    let token = server.value("admin token");
    let metrics = server.admin(&token, "/admin/api/metrics").await;
    assert_eq!(
        metrics["verification_failures"]["demo"]["missing_signature_header"],
        40
    );
    assert_eq!(metrics["connections"]["malformed_request"], 40);
}

both_backends!(a_flood_of_failures_logs_a_bounded_number_of_lines);
