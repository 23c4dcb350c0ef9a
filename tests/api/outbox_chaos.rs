//! The outbox's chaos test: the real binary posts credits from concurrent
//! at-least-once senders while its downstream fails for a while and the
//! process is SIGKILLed; an ordered destination must end with every posting
//! delivered at least once, the set (deduplicated by id) exactly the ledger,
//! each account's postings first accepted in `account_seq` order, and no
//! dead letter. Once per destination kind: an HTTP receiver answering 500
//! at first, a RabbitMQ exchange with no queue bound at first
//! (`HOOKLEDGER_TEST_AMQP_URL`), a Kafka broker (tansu) and an SQS (moto)
//! not running at first; SQS FIFO must have each posting exactly once.
//!
//! Short by default (CI: 300 postings over 10 accounts, 150 for SQS, the
//! downstream failing for 5 s, 1 kill, both backends, each kind). The full run:
//! `HOOKLEDGER_OUTBOX_CHAOS_POSTINGS=5000 HOOKLEDGER_OUTBOX_CHAOS_ACCOUNTS=50
//! HOOKLEDGER_OUTBOX_CHAOS_FAIL_SECS=30 HOOKLEDGER_OUTBOX_CHAOS_KILLS=3`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::Utc;
use hookledger::cli::sign_body;
use hookledger::secret::Secret;

use crate::broker_process::{BrokerProcess, HeldPort};
use crate::helpers::{Backend, DEMO_SECRET};
use crate::outbox::FORWARD_SECRET;
use crate::outbox_amqp::{Queue, amqp_url};
use crate::outbox_kafka::{TopicReader, create_topic, start_tansu, tansu};
use crate::outbox_sqs::{AWS_ENV, FifoQueue, moto, sqs_keys, start_moto};
use crate::process::Server;
use crate::receiver::{Answer, Receiver};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Posts one credit until it is answered 2xx, re-signing each attempt.
pub async fn post_credit(client: &reqwest::Client, base: &RwLock<String>, n: u64, accounts: u64) {
    let body = serde_json::json!({
        "type": "balance.credit",
        "data": {"account_id": format!("acct_{}", n % accounts), "amount_minor": 100 + n,
                 "currency": "USD"},
    });
    for _ in 0..3000 {
        let signed = sign_body(
            "standard-webhooks",
            &Secret::new(DEMO_SECRET),
            body.to_string().into_bytes(),
            &format!("ochaos_{n}"),
            Utc::now().timestamp(),
        )
        .unwrap();
        let url = format!("{}/webhooks/demo", base.read().unwrap());
        let mut post = client.post(url).body(signed.body);
        for (name, value) in &signed.headers {
            post = post.header(*name, value);
        }
        if let Ok(response) = post.send().await {
            if response.status().is_success() {
                return;
            }
            assert!(response.status().is_server_error(), "{}", response.status());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("ochaos_{n} never got a 2xx");
}

/// Where the destination sends, failing at first.
enum Downstream {
    /// Answers 500, then 200.
    Http(Receiver),
    /// An exchange no queue is bound to (every message comes back), then
    /// a queue bound to it.
    Amqp {
        url: String,
        exchange: String,
        queue: Option<Box<Queue>>,
    },
    /// No Kafka broker on the port, then tansu with the topic.
    Kafka {
        tansu: String,
        port: u16,
        held: Option<HeldPort>,
        topic: String,
        up: Option<(BrokerProcess, Box<TopicReader>)>,
    },
    /// No SQS on the port, then moto with the FIFO queue.
    Sqs {
        moto: String,
        port: u16,
        held: Option<HeldPort>,
        name: String,
        up: Option<(BrokerProcess, Box<FifoQueue>)>,
    },
}

impl Downstream {
    /// The destination's own keys.
    fn keys(&self) -> String {
        match self {
            Downstream::Http(receiver) => format!(
                "kind = \"http\"\nurl = \"{}\"\nsecret = \"{FORWARD_SECRET}\"\n",
                receiver.url()
            ),
            Downstream::Amqp { url, exchange, .. } => {
                format!("kind = \"amqp\"\nurl = \"{url}\"\nexchange = \"{exchange}\"\n")
            }
            Downstream::Kafka { port, topic, .. } => {
                format!("kind = \"kafka\"\nbrokers = [\"127.0.0.1:{port}\"]\ntopic = \"{topic}\"\n")
            }
            Downstream::Sqs { port, name, .. } => sqs_keys(
                // moto's URL for the queue, before moto runs.
                &format!("http://127.0.0.1:{port}/123456789012/{name}.fifo"),
                &format!("http://127.0.0.1:{port}"),
            ),
        }
    }

    /// The environment hookledger needs for it (SQS: the credentials).
    fn env(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            Downstream::Sqs { .. } => &AWS_ENV,
            _ => &[],
        }
    }

    /// One attempt's bound: moto, a Python fake, answers SendMessage in
    /// seconds once thousands of messages wait in a queue; tansu, built
    /// unoptimised, may take more than the 750 ms that a 1 s bound leaves
    /// librdkafka when CI runs six tests at once (the PostgreSQL variant
    /// once delivered nothing in 180 s there, and never alone).
    fn timeout_secs(&self) -> u64 {
        match self {
            Downstream::Sqs { .. } | Downstream::Kafka { .. } => 5,
            _ => 1,
        }
    }

    /// Postings in CI's short mode: 300, but 150 for moto, whose
    /// SendMessage slows as its queue fills (the longest test of the suite
    /// at 300).
    fn short_postings(&self) -> u64 {
        match self {
            Downstream::Sqs { .. } => 150,
            _ => 300,
        }
    }

    /// It keeps one copy of each message id (SQS FIFO, inside its
    /// five-minute deduplication interval).
    fn deduplicates(&self) -> bool {
        matches!(self, Downstream::Sqs { .. })
    }

    async fn recover(&mut self) {
        match self {
            Downstream::Http(receiver) => receiver.answer_all(Answer::Status(200)),
            Downstream::Amqp {
                url,
                exchange,
                queue,
            } => *queue = Some(Box::new(Queue::bound(url, exchange).await)),
            Downstream::Kafka {
                tansu,
                port,
                held,
                topic,
                up,
            } => {
                let broker = start_tansu(tansu, held.take().expect("recovered once")).await;
                let brokers = format!("127.0.0.1:{port}");
                create_topic(&brokers, topic).await;
                *up = Some((broker, Box::new(TopicReader::new(&brokers, topic))));
            }
            Downstream::Sqs {
                moto,
                port,
                held,
                name,
                up,
            } => {
                let broker = start_moto(moto, held.take().expect("recovered once")).await;
                let endpoint = format!("http://127.0.0.1:{port}");
                *up = Some((broker, Box::new(FifoQueue::create(&endpoint, name).await)));
            }
        }
    }

    /// What the broker has printed (tansu, moto), for a failure's message.
    fn log(&mut self) -> String {
        let up = match self {
            Downstream::Kafka { up, .. } => up.as_mut().map(|(broker, _)| broker),
            Downstream::Sqs { up, .. } => up.as_mut().map(|(broker, _)| broker),
            _ => None,
        };
        up.map(|broker| {
            let output = broker.output();
            let lines: Vec<&str> = output.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("the broker's last lines:\n{tail}")
        })
        .unwrap_or_default()
    }

    /// The bodies accepted so far, in the order they arrived.
    async fn accepted(&mut self) -> Vec<serde_json::Value> {
        match self {
            Downstream::Http(receiver) => receiver.accepted().into_iter().map(|r| r.body).collect(),
            Downstream::Amqp { queue, .. } => match queue {
                Some(queue) => queue.received().await,
                None => Vec::new(),
            },
            Downstream::Kafka { up, .. } => match up {
                Some((_, reader)) => {
                    let records = reader.received(Duration::from_millis(300)).await;
                    records.into_iter().map(|r| r.body).collect()
                }
                None => Vec::new(),
            },
            Downstream::Sqs { up, .. } => match up {
                Some((_, queue)) => queue.received().await.into_iter().map(|m| m.body).collect(),
                None => Vec::new(),
            },
        }
    }
}

async fn every_posting_reaches_the_downstream_in_order(backend: Backend) {
    let receiver = Receiver::start(&[], Answer::Status(500)).await;
    through_chaos(backend, Downstream::Http(receiver)).await;
}

async fn every_posting_reaches_a_rabbitmq_queue_in_order(backend: Backend) {
    let Some(url) = amqp_url("every_posting_reaches_a_rabbitmq_queue_in_order") else {
        return;
    };
    let exchange = format!("hlchaos-{}", crate::outbox_amqp::tag());
    let downstream = Downstream::Amqp {
        url,
        exchange,
        queue: None,
    };
    through_chaos(backend, downstream).await;
}

async fn every_posting_reaches_a_kafka_topic_in_order(backend: Backend) {
    let Some(tansu) = tansu("every_posting_reaches_a_kafka_topic_in_order") else {
        return;
    };
    let held = HeldPort::new();
    let downstream = Downstream::Kafka {
        tansu,
        port: held.port,
        held: Some(held),
        topic: format!("hlchaos-{}", crate::outbox_amqp::tag()),
        up: None,
    };
    through_chaos(backend, downstream).await;
}

async fn every_posting_reaches_an_sqs_fifo_queue_once_in_order(backend: Backend) {
    let Some(moto) = moto("every_posting_reaches_an_sqs_fifo_queue_once_in_order") else {
        return;
    };
    let held = HeldPort::new();
    let downstream = Downstream::Sqs {
        moto,
        port: held.port,
        held: Some(held),
        name: format!("hlchaos-{}", crate::outbox_amqp::tag()),
        up: None,
    };
    through_chaos(backend, downstream).await;
}

async fn through_chaos(backend: Backend, mut downstream: Downstream) {
    let postings = setting(
        "HOOKLEDGER_OUTBOX_CHAOS_POSTINGS",
        downstream.short_postings(),
    );
    let accounts = setting("HOOKLEDGER_OUTBOX_CHAOS_ACCOUNTS", 10);
    let fail_secs = setting("HOOKLEDGER_OUTBOX_CHAOS_FAIL_SECS", 5);
    let kills = setting("HOOKLEDGER_OUTBOX_CHAOS_KILLS", 1);
    let dir = tempfile::tempdir().unwrap();
    let (database_url, _postgres) =
        crate::postgres::database_for(&backend, &dir.path().join("data/hookledger.db")).await;
    let keys = format!(
        "{}events = [\"ledger.posted\"]\nordered_by_account = true\ntimeout_secs = {}\n",
        downstream.keys(),
        downstream.timeout_secs()
    );
    let config = crate::outbox::binary_config(&database_url, "downstream", &keys);
    crate::helpers::write_config(dir.path().join("hookledger.toml"), config).unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let started = Instant::now();
    let env = downstream.env();
    let mut server = Server::start(dir.path(), env, "source demo");
    let base = Arc::new(RwLock::new(server.base()));
    let next = Arc::new(AtomicUsize::new(0));
    let senders: Vec<_> = (0..16)
        .map(|_| {
            let (base, next) = (base.clone(), next.clone());
            tokio::spawn(async move {
                let client = hookledger::tls::client();
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst) as u64;
                    if n >= postings {
                        break;
                    }
                    post_credit(&client, &base, n, accounts).await;
                }
            })
        })
        .collect();
    let recover_at = Instant::now() + Duration::from_secs(fail_secs);
    let mut recovered = false;
    for kill in 0..kills {
        let target = postings as usize * (kill as usize + 1) / (kills as usize + 1);
        while next.load(Ordering::SeqCst) < target {
            if !recovered && Instant::now() >= recover_at {
                downstream.recover().await;
                recovered = true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server.kill();
        server = Server::start(dir.path(), env, "source demo");
        *base.write().unwrap() = server.base();
    }
    for sender in senders {
        sender.await.unwrap();
    }
    if !recovered {
        tokio::time::sleep_until(recover_at.into()).await;
        downstream.recover().await;
    }

    let store = crate::postgres::side_store(&database_url).await;
    // The ledger: every posting, per account in account_seq order.
    let mut ledger: BTreeMap<String, Vec<(i64, String, i64)>> = BTreeMap::new();
    for account in 0..accounts {
        let id = format!("acct_{account}");
        let mut entries = store.account_entries(&id, None, 100_000).await.unwrap();
        entries.sort_by_key(|e| e.account_seq);
        ledger.insert(
            id,
            entries
                .into_iter()
                .map(|e| (e.account_seq, e.event_id, e.amount_minor))
                .collect(),
        );
    }
    let total: usize = ledger.values().map(Vec::len).sum();
    assert_eq!(total as u64, postings, "every credit posted once");
    // moto deduplicates against the messages still in the queue (SQS for
    // five minutes, deleted or not): read it once nothing more is sent.
    if downstream.deduplicates() {
        crate::outbox::drained_in(&store, "downstream", Duration::from_secs(180)).await;
    }
    // Wait for the downstream to have every posting.
    let deadline = Instant::now() + Duration::from_secs(180);
    let accepted = loop {
        let accepted = downstream.accepted().await;
        let ids: HashSet<_> = accepted.iter().map(|body| body["id"].to_string()).collect();
        if ids.len() == total {
            break accepted;
        }
        if Instant::now() >= deadline {
            // What the relay was doing, for whoever reads the failure.
            let stats = store.outbox_stats("downstream").await.unwrap();
            let rows = store.outbox_messages("downstream", 0, 5).await.unwrap();
            panic!(
                "{} of {total} postings delivered after 180 s; {} pending; first rows: {:?}; {}",
                ids.len(),
                stats.pending,
                rows.iter()
                    .map(|r| (&r.state, r.attempts, &r.last_error))
                    .collect::<Vec<_>>(),
                downstream.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Deduplicated by id, the set is exactly the ledger; each account's
    // postings were first accepted in account_seq order.
    let mut first: HashMap<String, &serde_json::Value> = HashMap::new();
    let mut order: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for body in &accepted {
        if first.insert(body["id"].to_string(), body).is_none() {
            let account = body["account_id"].as_str().unwrap().to_owned();
            let seq = body["account_seq"].as_i64().unwrap();
            order.entry(account).or_default().push(seq);
        }
    }
    for (account, entries) in &ledger {
        let sent = &order[account];
        let expected: Vec<i64> = entries.iter().map(|e| e.0).collect();
        assert_eq!(sent, &expected, "{account}: first accepted in order");
        for (seq, event_id, amount) in entries {
            let body = first
                .values()
                .find(|b| b["account_id"] == account.as_str() && b["account_seq"] == *seq)
                .unwrap();
            assert_eq!(body["event_id"], event_id.as_str());
            assert_eq!(body["amount_minor"], *amount);
        }
    }
    let stats = store.outbox_stats("downstream").await.unwrap();
    assert_eq!(stats.dead, 0, "no dead letters");
    if downstream.deduplicates() {
        assert_eq!(accepted.len(), total, "the broker kept one copy of each");
    }
    eprintln!(
        "outbox chaos: {total} postings, {} messages accepted ({} resent), {kills} kills, \
         downstream failing {fail_secs} s, {:.1} s",
        accepted.len(),
        accepted.len() - total,
        started.elapsed().as_secs_f64()
    );
    drop(server);
    if let Downstream::Amqp {
        exchange,
        queue: Some(queue),
        ..
    } = downstream
    {
        queue.delete(&exchange).await;
    }
}

crate::both_backends!(
    every_posting_reaches_the_downstream_in_order,
    every_posting_reaches_a_rabbitmq_queue_in_order,
    every_posting_reaches_a_kafka_topic_in_order,
    every_posting_reaches_an_sqs_fifo_queue_once_in_order,
);
