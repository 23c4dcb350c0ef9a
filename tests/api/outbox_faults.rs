//! The relay against a destination that fails: errors, timeouts, refused
//! connections, dead letters and the per-account block of an ordered
//! destination.

use std::time::Duration;

use chrono::Utc;
use hookledger::store::Replay;

use crate::helpers::*;
use crate::locker::Locker;
use crate::outbox::{app_with, drained, http_destination};
use crate::receiver::{Answer, Receiver};

async fn app_sending_to(backend: Backend, url: &str, extra: &str) -> TestApp {
    app_with(backend, &http_destination("flaky", url, extra)).await
}

async fn failures_and_timeouts_are_retried_until_acknowledged(backend: Backend) {
    let receiver = Receiver::start(
        &[
            Answer::RetryAfter(503, 1),
            Answer::Status(500),
            Answer::Hang,
            Answer::Status(404),
        ],
        Answer::Status(204),
    )
    .await;
    let app = app_sending_to(backend, &receiver.url(), "timeout_secs = 1").await;
    for i in 0..3 {
        app.send_ok(&credit(&format!("evt_{i}"), "cus_1", 100))
            .await;
    }
    let messages = drained(&app, "flaky", Duration::from_secs(40)).await;
    assert_eq!(messages.len(), 3);
    assert!(
        messages.iter().all(|m| m.state == "delivered"),
        "{messages:?}"
    );
    let attempts: i64 = messages.iter().map(|m| m.attempts).sum();
    assert_eq!(attempts, 3 + 4, "every failure was one more attempt");
    // Each message was acknowledged exactly once, with its own stable id,
    // and a retry carried a fresh signature timestamp.
    let accepted = receiver.accepted();
    let mut ids: Vec<_> = accepted.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    assert_eq!(accepted.len(), 3);
    for received in receiver.received() {
        assert!(received.id.starts_with("msg_"), "{received:?}");
        assert!((received.timestamp - Utc::now().timestamp()).abs() < 60);
        assert_eq!(received.body["id"], received.id.as_str());
    }
}

async fn a_refused_connection_is_retried_until_the_receiver_is_up(backend: Backend) {
    // A port nothing listens on, until the receiver starts on it: held
    // (bound, not listening) so that no test running beside is given it
    // meanwhile (one was, and answered this test's messages 404).
    let held = crate::broker_process::HeldPort::new();
    let port = held.port;
    let url = format!("http://127.0.0.1:{port}/hooks");
    let app = app_sending_to(backend, &url, "").await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    let failed = wait_for(&app, |m| m.attempts >= 2).await;
    let error = failed.last_error.clone().unwrap_or_default();
    assert!(error.contains("connect"), "{error}");
    drop(held);
    let receiver = Receiver::start_on(port, Answer::Status(200)).await;
    let messages = drained(&app, "flaky", Duration::from_secs(30)).await;
    assert_eq!(messages[0].state, "delivered");
    assert_eq!(messages[0].last_error, None);
    assert_eq!(receiver.accepted().len(), 1);
}

/// The destination acknowledged, but the database would not take the
/// record at first (locked, as when busy or restarting): the relay tries
/// the record again while its lease lasts, so the message is delivered
/// without being sent a second time (before, it waited for its lease to
/// pass and was sent again).
async fn an_acknowledgement_the_database_refused_at_first_is_recorded_later(backend: Backend) {
    let receiver = Receiver::start(&[Answer::Held(200)], Answer::Status(200)).await;
    let destination = http_destination("flaky", &receiver.url(), "timeout_secs = 5");
    let app = TestApp::spawn_with(
        backend,
        Options {
            extra_sources: &destination,
            database: "busy_timeout_ms = 200\nstatement_timeout_ms = 200",
            ..Options::default()
        },
    )
    .await;
    app.send_ok(&credit("evt_1", "cus_1", 100)).await;
    let started = std::time::Instant::now();
    while receiver.received().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(20), "never sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Sent and claimed, its answer held. With the outbox locked, the
    // acknowledgement goes, and every try to record it in the next 2 s
    // fails within 200 ms.
    let locker = Locker::lock_table(&app.database_url, "outbox").await;
    receiver.release_held();
    tokio::time::sleep(Duration::from_secs(2)).await;
    locker.release().await;
    // Recorded well inside the lease (5 s send timeout + 10 s), so not
    // sent again after it.
    let messages = drained(&app, "flaky", Duration::from_secs(5)).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].state, "delivered", "{messages:?}");
    assert_eq!(messages[0].attempts, 1, "{messages:?}");
    assert_eq!(receiver.received().len(), 1, "sent once");
}

/// Polls the one message of `flaky` until `ready` holds.
pub(crate) async fn wait_for(
    app: &TestApp,
    ready: impl Fn(&hookledger::store::OutboxEntry) -> bool,
) -> hookledger::store::OutboxEntry {
    let started = std::time::Instant::now();
    loop {
        let messages = app.store().outbox_messages("flaky", 0, 10).await.unwrap();
        if let Some(found) = messages.into_iter().find(|m| ready(m)) {
            return found;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn dead_letters_block_their_account_until_replayed(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(500)).await;
    let app = app_sending_to(
        backend,
        &receiver.url(),
        "max_attempts = 2\nordered_by_account = true",
    )
    .await;
    app.send_ok(&credit("evt_a1", "cus_a", 100)).await;
    app.send_ok(&credit("evt_a2", "cus_a", 200)).await;
    let dead = wait_for(&app, |m| m.state == "dead").await;
    assert_eq!(dead.event_id, "evt_a1");
    assert_eq!(dead.attempts, 2);
    assert_eq!(dead.last_error.as_deref(), Some("answered HTTP 500"));
    // The account's next posting waits behind its dead letter; another
    // account's flows.
    receiver.answer_all(Answer::Status(200));
    app.send_ok(&credit("evt_b1", "cus_b", 300)).await;
    let b1 = wait_for(&app, |m| m.event_id == "evt_b1" && m.state == "delivered").await;
    assert_eq!(b1.attempts, 1);
    let messages = app.store().outbox_messages("flaky", 0, 10).await.unwrap();
    let a2 = messages.iter().find(|m| m.event_id == "evt_a2").unwrap();
    assert_eq!((a2.state.as_str(), a2.attempts), ("pending", 0), "blocked");
    let stats = app.store().outbox_stats("flaky").await.unwrap();
    assert_eq!((stats.dead, stats.pending), (1, 1));
    let replay = Replay {
        destination: "flaky".into(),
        state: "dead".into(),
        since: None,
        account_id: Some("cus_a".into()),
    };
    assert_eq!(app.store().replay_outbox(&replay).await.unwrap(), 1);
    let messages = drained(&app, "flaky", Duration::from_secs(30)).await;
    assert!(messages.iter().all(|m| m.state == "delivered"));
    // In account order, after the replay.
    let order: Vec<_> = receiver
        .accepted()
        .iter()
        .filter(|r| r.body["account_id"] == "cus_a")
        .map(|r| r.body["account_seq"].as_i64().unwrap())
        .collect();
    assert_eq!(order, [1, 2]);
}

both_backends!(
    failures_and_timeouts_are_retried_until_acknowledged,
    a_refused_connection_is_retried_until_the_receiver_is_up,
    dead_letters_block_their_account_until_replayed,
    an_acknowledgement_the_database_refused_at_first_is_recorded_later,
);

/// A system with no trusted certificates at all (a slim container without
/// `ca-certificates`): the binary starts and relays, checking HTTPS against
/// its built-in roots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_without_certificates_still_starts_and_relays() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("empty.pem"), "").unwrap();
    let receiver = Receiver::start(&[], Answer::Status(200)).await;
    let config = format!(
        "[admin]\ntoken = \"{ADMIN_TOKEN}\"\n[[sources]]\nname = \"demo\"\n\
         kind = \"standard-webhooks\"\nsecrets = [\"{DEMO_SECRET}\"]\n{}",
        http_destination("flaky", &receiver.url(), "")
    );
    crate::helpers::write_config(dir.path().join("hookledger.toml"), config).unwrap();
    let empty = dir.path().join("empty.pem").display().to_string();
    let nothing = dir.path().join("no-certs").display().to_string();
    let env = [
        ("SSL_CERT_FILE", empty.as_str()),
        ("SSL_CERT_DIR", nothing.as_str()),
    ];
    let server = crate::process::Server::start(dir.path(), &env, "source demo");
    let signed = hookledger::cli::signed_sample(
        "standard-webhooks",
        &hookledger::secret::Secret::new(DEMO_SECRET),
        &hookledger::providers::Sample {
            timestamp: Utc::now().timestamp(),
            ..credit("evt_1", "cus_1", 100)
        },
    )
    .unwrap();
    let mut post = hookledger::tls::client()
        .post(format!("{}/webhooks/demo", server.base()))
        .body(signed.body);
    for (name, value) in &signed.headers {
        post = post.header(*name, value);
    }
    assert!(post.send().await.unwrap().status().is_success());
    let started = std::time::Instant::now();
    while receiver.accepted().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "nothing relayed: {}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server.log().contains("built into hookledger"),
        "{}",
        server.log()
    );
}
