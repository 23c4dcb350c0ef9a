//! A PostgreSQL failover under load. Two nodes of the test's own
//! (`pg_cluster`): node1 the primary, node2 a streaming standby that every
//! commit waits for (`synchronous_standby_names = '*'`). hookledger reaches
//! the primary through haproxy with `deploy/haproxy/postgres.cfg` (sqlx
//! connects to one host: the address must move, as a virtual IP or a DNS
//! name does in production). Two hookledger instances take deliveries from
//! 32 at-least-once senders while the test does what a failover manager
//! (Patroni, say) does:
//!
//! 1. node1's postmaster is SIGKILLed;
//! 2. a second later node2 is promoted, and, with no standby left to wait
//!    for, stops waiting (Patroni's default, non-strict synchronous mode);
//! 3. node1 comes back as a standby of node2 (`pg_rewind`; it comes back
//!    read-only, never writable), and node2 waits for it again.
//!
//! What must hold: every delivery answered 2xx is on node2 exactly once and
//! every credit applied (0 lost, 0 double); the outbox relays tell every
//! posting to their destination and the reconcile sweep finds a payment
//! missed after the promotion, on their own; no answer but 2xx and 503 with
//! Retry-After; none slower than a request's bound; each instance answers
//! 2xx again soon after the promotion (measured); no hookledger connection
//! on node1 afterwards; and `/metrics` says at each step whether commits
//! wait for a synchronous standby.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::at_least_once::{Load, Target, assert_exact, senders_config};
use crate::fake_feed::FakeFeed;
use crate::fake_feed::paddle::Paddle;
use crate::haproxy::Haproxy;
use crate::helpers::{Backend, DEMO_SECRET};
use crate::kinds::paddle::PADDLE;
use crate::localstripe::free_port;
use crate::outbox::http_destination;
use crate::pg_cluster::{Cluster, Node};
use crate::process::Server;
use crate::receiver::{Answer, Receiver};

/// Until `instance` answers `/readyz` 200, failing after `within`.
async fn until_ready(base: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let ready = hookledger::tls::client()
            .get(format!("{base}/readyz"))
            .send()
            .await;
        if ready.is_ok_and(|r| r.status() == 200) {
            return;
        }
        assert!(Instant::now() < deadline, "{base} never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const PADDLE_KEY: &str = "pdl_sdbx_apikey_01hv8x2acma2gz3ysy1w9h7q6e_test";

/// The demo source the load signs for, a Paddle source whose reconcile
/// sweep runs every second against the fake feed, and an HTTP destination
/// every posting is told to.
fn config_text(destination: &str, feed: &str) -> String {
    senders_config(&format!(
        "{}
[sources.reconcile]
api_key = \"{PADDLE_KEY}\"
api_base = \"{feed}\"
\
         interval_secs = 1
request_gap_ms = 50
{}",
        PADDLE.config,
        http_destination("ledger", destination, "")
    ))
}

/// Until the event `event_id` is stored and applied.
async fn until_stored(store: &hookledger::store::Store, event_id: &str) {
    for _ in 0..300 {
        let stored = crate::at_least_once::stored_events(store).await;
        if stored
            .get(event_id)
            .is_some_and(|(status, _)| status == "applied")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{event_id} was never reconciled");
}

/// Until the destination has acknowledged a message of every event of
/// `expected` (at least once each).
async fn until_told(receiver: &Receiver, expected: &BTreeSet<String>) {
    let mut told = BTreeSet::new();
    for _ in 0..600 {
        told = receiver
            .accepted()
            .iter()
            .filter_map(|r| r.body["event_id"].as_str().map(str::to_owned))
            .collect();
        if expected.is_subset(&told) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let missing: Vec<_> = expected.difference(&told).take(5).collect();
    panic!(
        "{} postings never reached the destination, {missing:?} among them",
        expected.difference(&told).count()
    );
}

/// A gauge's value on `base`'s `/metrics`.
async fn gauge(base: &str, name: &str) -> Option<i64> {
    let text = hookledger::tls::client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// What `/metrics` says of replication: (synchronous commit, standbys).
async fn replication(base: &str) -> (Option<i64>, Option<i64>) {
    (
        gauge(base, "hookledger_database_synchronous_commit").await,
        gauge(base, "hookledger_database_synchronous_standbys").await,
    )
}

/// hookledger's connections to `node`.
async fn hookledger_connections(node: &Node) -> i64 {
    let mut conn = node.connect().await;
    sqlx::query_scalar(
        "select count(*) from pg_stat_activity where application_name = 'hookledger'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promoted_standby_under_load_has_every_acknowledged_credit_once() {
    let test = "failover::a_promoted_standby_under_load_has_every_acknowledged_credit_once";
    if Backend::postgres_or_skip(test).is_none() {
        return;
    }
    let cluster = Cluster::new();
    let node1 = cluster.primary("node1", "");
    node1.execute("create role haproxy_check login").await;
    node1.execute("create database hookledger").await;
    let node2 = cluster.standby(&node1, "node2");
    node1.set("synchronous_standby_names", "*").await;
    node1
        .until(
            "select count(*) = 1 from pg_stat_replication where sync_state = 'sync'",
            Duration::from_secs(30),
        )
        .await;

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let nodes = [&node1, &node2].map(|n| (n.name.as_str(), n.port));
    let haproxy = Haproxy::start("postgres.cfg", dir.path(), port, &nodes);
    haproxy.until(&[("node1", "UP"), ("node2", "DOWN")]).await;
    let database_url = format!("postgres://postgres@127.0.0.1:{port}/hookledger?sslmode=disable");
    let receiver = Receiver::start(&[], Answer::Status(204)).await;
    let feed = FakeFeed::start(Arc::new(Paddle), PADDLE_KEY).await;
    let config = dir.path().join("hookledger.toml");
    std::fs::write(&config, config_text(&receiver.url(), &feed.base)).unwrap();
    let config = config.display().to_string();
    let env = [
        ("HOOKLEDGER_CONFIG", config.as_str()),
        ("HOOKLEDGER_DATABASE_URL", database_url.as_str()),
        ("HOOKLEDGER_DATABASE_STATEMENT_TIMEOUT_MS", "5000"),
        ("HOOKLEDGER_DATABASE_ACQUIRE_TIMEOUT_SECS", "2"),
        ("HOOKLEDGER_WORKERS", "2"),
    ];
    let instances: Vec<Server> = (0..2)
        .map(|n| {
            let home = dir.path().join(format!("instance{n}"));
            std::fs::create_dir_all(&home).unwrap();
            Server::start(&home, &env, "source paddle")
        })
        .collect();
    let bases: Vec<String> = instances.iter().map(Server::base).collect();
    let target = Target::spread(
        &bases.iter().map(String::as_str).collect::<Vec<_>>(),
        DEMO_SECRET,
    );
    let load = Load::start(&target, "failover", 32, 20);
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    eprintln!("failover: before the kill {}", load.answers());
    assert_eq!(replication(&bases[0]).await, (Some(1), Some(1)));

    // 1-2: the primary dies; a second later the standby is promoted.
    let killed = Instant::now();
    node1.kill();
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.promote(&node2);
    let promoted = Instant::now();
    node2.set("synchronous_standby_names", "").await;
    for base in &bases {
        until_ready(base, Duration::from_secs(30)).await;
    }
    eprintln!("failover: promoted, ready {}", load.answers());
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    eprintln!("failover: flowing again {}", load.answers());
    // The new primary waits for no standby until the old one is back.
    assert_eq!(replication(&bases[1]).await, (Some(0), Some(0)));
    // A payment whose webhook never came: the reconcile sweep, which met
    // the dead primary too, finds it on its own.
    let missed = (PADDLE.payment)("evt_missed", "txn_missed", 700);
    feed.publish(missed);
    let new_primary = crate::postgres::side_store(&node2.url("hookledger")).await;
    until_stored(&new_primary, "evt_missed").await;
    let recovered: Vec<Duration> = (0..bases.len())
        .map(|n| {
            load.first_acknowledged(n, promoted)
                .expect("acknowledged after the promotion")
                .duration_since(promoted)
        })
        .collect();

    // 3: the old primary back, as node2's synchronous standby.
    cluster.rejoin_as_standby(&node1, &node2).await;
    node1
        .until(
            "select count(*) = 1 from pg_stat_wal_receiver where status = 'streaming'",
            Duration::from_secs(60),
        )
        .await;
    eprintln!("failover: node1 rejoined {}", load.answers());
    node2.set("synchronous_standby_names", "*").await;
    node2
        .until(
            "select count(*) = 1 from pg_stat_replication where sync_state = 'sync'",
            Duration::from_secs(60),
        )
        .await;
    load.until_acknowledged(300, Duration::from_secs(60)).await;
    assert_eq!(replication(&bases[0]).await, (Some(1), Some(1)));
    let tally = load.finish().await;
    let answers = tally.answers;
    eprintln!(
        "failover: promoted {} ms after the kill; each instance's first 2xx after the \
         promotion: {:?}; {answers}",
        promoted.duration_since(killed).as_millis(),
        recovered
    );

    assert_eq!(
        (
            answers.server_errors,
            answers.client_errors,
            answers.refused,
            answers.unavailable_without_retry_after
        ),
        (0, 0, 0, 0),
        "only 2xx and 503 with Retry-After: {answers}"
    );
    // A request's bound: twice the read deadline, the acquire timeout and
    // the statement timeout (`startup::connection_lifetime`).
    assert!(
        answers.slowest < Duration::from_secs(2 * 5 + 2 + 5),
        "{answers}"
    );
    assert!(answers.unavailable > 0, "the failover was seen: {answers}");
    // Every posting's message reaches the destination: the relays met the
    // dead primary too, and went on.
    let mut expected: BTreeSet<String> = tally.credits.iter().map(|c| c.id.clone()).collect();
    expected.insert("evt_missed".to_owned());
    until_told(&receiver, &expected).await;
    drop(instances);
    assert_exact(&new_primary, &tally).await;
    assert_eq!(
        hookledger_connections(&node1).await,
        0,
        "no connection left on the old primary"
    );
}
