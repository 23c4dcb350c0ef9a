//! The `kafka` destination against a real Kafka-API broker: tansu (crates.io,
//! a third party's Kafka-compatible broker, its memory storage engine),
//! started per test on a port of its own from the binary
//! `HOOKLEDGER_TEST_TANSU` names (`.ci/run` installs it with `cargo install
//! --locked` and sets it; unset, the test says it skipped, or fails under
//! CI). The topic is read back with librdkafka's consumer.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use crate::broker_process::{BrokerProcess, HeldPort};
use crate::helpers::*;
use crate::outbox::{app_with, drained, first_failure};

/// The tansu binary to test against, if one is named.
pub fn tansu(test: &str) -> Option<String> {
    named_by_env("HOOKLEDGER_TEST_TANSU", test)
}

/// A tansu broker on `port`, keeping everything in memory.
pub async fn start_tansu(program: &str, port: HeldPort) -> BrokerProcess {
    BrokerProcess::start(
        program,
        &[
            "broker",
            "--storage-engine",
            "memory://tansu/",
            "--listener-url",
            "tcp://127.0.0.1:{port}",
            "--advertised-listener-url",
            "tcp://127.0.0.1:{port}",
        ],
        port,
        &[],
    )
    .await
}

pub const PARTITIONS: i32 = 3;

/// Creates `topic` with [`PARTITIONS`] partitions (one already there is
/// kept).
pub async fn create_topic(brokers: &str, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .unwrap();
    let created = admin
        .create_topics(
            &[NewTopic::new(topic, PARTITIONS, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .unwrap();
    for result in created {
        match result {
            Ok(_) => {}
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => panic!("create topic {name}: {code}"),
        }
    }
}

/// One record as a consumer reads it.
#[derive(Debug, Clone)]
pub struct Record {
    pub partition: i32,
    pub key: Option<String>,
    pub id: Option<String>,
    pub message_type: Option<String>,
    pub body: serde_json::Value,
}

/// Every partition of a topic read from the start, with what has been
/// read so far (each partition's records in offset order).
pub struct TopicReader {
    consumer: StreamConsumer,
    received: Vec<Record>,
}

impl TopicReader {
    pub fn new(brokers: &str, topic: &str) -> TopicReader {
        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set(
                "group.id",
                format!("hltest-reader-{}", crate::outbox_amqp::tag()),
            )
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .create()
            .unwrap();
        let mut partitions = TopicPartitionList::new();
        for partition in 0..PARTITIONS {
            partitions
                .add_partition_offset(topic, partition, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&partitions).unwrap();
        TopicReader {
            consumer,
            received: Vec::new(),
        }
    }

    /// The records read so far, after reading until none comes for
    /// `quiet`.
    pub async fn received(&mut self, quiet: Duration) -> Vec<Record> {
        while let Ok(next) = tokio::time::timeout(quiet, self.consumer.recv()).await {
            let message = next.expect("the consumer reads");
            let header = |name: &str| {
                message.headers().and_then(|headers| {
                    headers
                        .iter()
                        .find(|h| h.key == name)
                        .and_then(|h| h.value)
                        .map(|v| String::from_utf8(v.to_vec()).unwrap())
                })
            };
            self.received.push(Record {
                partition: message.partition(),
                key: message
                    .key()
                    .map(|k| String::from_utf8(k.to_vec()).unwrap()),
                id: header("id"),
                message_type: header("type"),
                body: serde_json::from_slice(message.payload().unwrap()).unwrap(),
            });
        }
        self.received.clone()
    }
}

fn destination(brokers: &str, topic: &str) -> String {
    format!(
        r#"
[[destinations]]
name = "kafka"
kind = "kafka"
brokers = ["{brokers}"]
topic = "{topic}"
ordered_by_account = true
"#
    )
}

async fn postings_reach_the_topic_keyed_by_account_in_order(backend: Backend) {
    let Some(program) = tansu("postings_reach_the_topic_keyed_by_account_in_order") else {
        return;
    };
    let broker = start_tansu(&program, HeldPort::new()).await;
    let brokers = format!("127.0.0.1:{}", broker.port);
    let topic = format!("hltest-{}", crate::outbox_amqp::tag());
    create_topic(&brokers, &topic).await;
    let app = app_with(backend, &destination(&brokers, &topic)).await;
    for i in 0..12 {
        let account = format!("cus_{}", i % 4);
        app.send_ok(&credit(&format!("evt_{i}"), &account, 100 + i))
            .await;
    }
    // A held event is told too (every type by default).
    app.send_ok(&credit_seq("evt_late", "cus_seq", 100, 5))
        .await;
    app.send_ok(&debit_seq("evt_old_debit", "cus_seq", 50, 2))
        .await;
    let rows = drained(&app, "kafka", Duration::from_secs(60)).await;
    assert_eq!(rows.len(), 14, "{rows:?}");
    assert!(rows.iter().all(|m| m.state == "delivered"), "{rows:?}");

    let mut reader = TopicReader::new(&brokers, &topic);
    let started = Instant::now();
    let records = loop {
        let records = reader.received(Duration::from_millis(500)).await;
        if records.len() >= 14 || started.elapsed() > Duration::from_secs(30) {
            break records;
        }
    };
    assert_eq!(records.len(), 14, "each message once: {records:?}");
    assert!(records.iter().any(|r| r.body["type"] == "event.held"));
    let mut partition_of: BTreeMap<String, i32> = BTreeMap::new();
    let mut seqs: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for record in &records {
        assert_eq!(
            record.id.as_deref(),
            record.body["id"].as_str(),
            "{record:?}"
        );
        assert_eq!(
            record.message_type.as_deref(),
            record.body["type"].as_str(),
            "{record:?}"
        );
        let account = record.body["account_id"].as_str();
        assert_eq!(record.key.as_deref(), account, "keyed by account");
        let Some(account) = account.map(str::to_owned) else {
            continue;
        };
        // One account's records all in one partition...
        let partition = *partition_of
            .entry(account.clone())
            .or_insert(record.partition);
        assert_eq!(record.partition, partition, "{account} in one partition");
        if record.body["type"] == "ledger.posted" {
            seqs.entry(account)
                .or_default()
                .push(record.body["account_seq"].as_i64().unwrap());
        }
    }
    // ... in the order of its postings.
    for (account, sent) in &seqs {
        let mut sorted = sent.clone();
        sorted.sort();
        assert_eq!(sent, &sorted, "{account}: in account_seq order");
    }
    // The keys spread over more than one partition: the key, not a single
    // partition, keeps the order.
    let used: HashSet<_> = partition_of.values().collect();
    assert!(used.len() > 1, "{partition_of:?}");
    // Exactly the outbox's messages, each once.
    let ids: HashSet<_> = records.iter().filter_map(|r| r.id.clone()).collect();
    let expected: HashSet<_> = rows.iter().map(|r| r.message_id.clone()).collect();
    assert_eq!(ids, expected);
    app.assert_invariants().await;
}

/// No broker at first: the messages stay pending with the client's
/// reason, and arrive once the broker is up.
async fn messages_wait_for_a_broker_that_is_down(backend: Backend) {
    let Some(program) = tansu("messages_wait_for_a_broker_that_is_down") else {
        return;
    };
    let port = HeldPort::new();
    let brokers = format!("127.0.0.1:{}", port.port);
    let topic = format!("hltest-{}", crate::outbox_amqp::tag());
    let app = app_with(
        backend,
        &format!("{}timeout_secs = 5\n", destination(&brokers, &topic)),
    )
    .await;
    app.send_ok(&credit("evt_down", "cus_1", 700)).await;
    let (_, error) = first_failure(app.store(), "kafka").await;
    assert!(error.contains(&topic), "{error}");

    let _broker = start_tansu(&program, port).await;
    create_topic(&brokers, &topic).await;
    let rows = drained(&app, "kafka", Duration::from_secs(120)).await;
    assert!(rows.iter().all(|m| m.state == "delivered"), "{rows:?}");
    let mut reader = TopicReader::new(&brokers, &topic);
    let records = reader.received(Duration::from_secs(2)).await;
    let ids: HashSet<_> = records.iter().filter_map(|r| r.id.clone()).collect();
    assert_eq!(ids, HashSet::from([rows[0].message_id.clone()]));
}

both_backends!(
    postings_reach_the_topic_keyed_by_account_in_order,
    messages_wait_for_a_broker_that_is_down,
);
