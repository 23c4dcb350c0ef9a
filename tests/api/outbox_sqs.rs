//! The `sqs` destination against moto (PyPI `moto[server]`, a third
//! party's AWS fake whose SQS keeps FIFO queues' deduplication ids and
//! message groups), started per test on a port of its own from the
//! `moto_server` that `HOOKLEDGER_TEST_MOTO` names (the venv `.ci/run`
//! makes, `tests/tools/requirements.txt`; unset, the test says it skipped,
//! or fails under CI). hookledger runs as the real binary here: its AWS
//! credentials come from the standard chain, the environment, which a test
//! gives a child process and not its own.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};

use crate::broker_process::{BrokerProcess, HeldPort};
use crate::helpers::{ADMIN_TOKEN, Backend, named_by_env};
use crate::outbox::{binary_config, drained_in, first_failure};
use crate::outbox_chaos::post_credit;
use crate::process::{Server, run_with_config};

/// `moto_server`, if one is named.
pub fn moto(test: &str) -> Option<String> {
    named_by_env("HOOKLEDGER_TEST_MOTO", test)
}

/// The credentials moto takes (any), as the environment gives them to
/// hookledger.
pub const AWS_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "hookledger-test"),
    ("AWS_SECRET_ACCESS_KEY", "hookledger-test-secret"),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

pub const REGION: &str = "eu-west-1";

pub async fn start_moto(program: &str, port: HeldPort) -> BrokerProcess {
    BrokerProcess::start(program, &["-H", "127.0.0.1", "-p", "{port}"], port, &[]).await
}

/// One message as a consumer receives it.
#[derive(Debug, Clone)]
pub struct Received {
    pub body: serde_json::Value,
    pub id: Option<String>,
    pub message_type: Option<String>,
    pub group: Option<String>,
    pub deduplication_id: Option<String>,
}

/// A FIFO queue on moto, and what has been received from it so far.
pub struct FifoQueue {
    client: Client,
    pub url: String,
    received: Vec<Received>,
}

impl FifoQueue {
    pub async fn create(endpoint: &str, name: &str) -> FifoQueue {
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .endpoint_url(endpoint)
            .credentials_provider(Credentials::new(
                AWS_ENV[0].1,
                AWS_ENV[1].1,
                None,
                None,
                "test",
            ))
            .http_client(
                aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
                    .build_https(),
            )
            .build();
        let client = Client::from_conf(config);
        let created = client
            .create_queue()
            .queue_name(format!("{name}.fifo"))
            .attributes(QueueAttributeName::FifoQueue, "true")
            .send()
            .await
            .expect("moto creates the queue");
        FifoQueue {
            client,
            url: created.queue_url().unwrap().to_owned(),
            received: Vec::new(),
        }
    }

    /// Every message received so far, after taking (and deleting) what
    /// the queue holds now, each group's in the order sent.
    pub async fn received(&mut self) -> Vec<Received> {
        loop {
            let answer = self
                .client
                .receive_message()
                .queue_url(&self.url)
                .max_number_of_messages(10)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .message_attribute_names("All")
                .send()
                .await
                .expect("moto answers");
            let messages = answer.messages();
            if messages.is_empty() {
                return self.received.clone();
            }
            for message in messages {
                let system = |name: MessageSystemAttributeName| {
                    message.attributes().and_then(|a| a.get(&name)).cloned()
                };
                let attribute = |name: &str| {
                    message
                        .message_attributes()
                        .and_then(|a| a.get(name))
                        .and_then(|v| v.string_value())
                        .map(str::to_owned)
                };
                self.received.push(Received {
                    body: serde_json::from_str(message.body().unwrap()).unwrap(),
                    id: attribute("id"),
                    message_type: attribute("type"),
                    group: system(MessageSystemAttributeName::MessageGroupId),
                    deduplication_id: system(MessageSystemAttributeName::MessageDeduplicationId),
                });
                self.client
                    .delete_message()
                    .queue_url(&self.url)
                    .receipt_handle(message.receipt_handle().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}

/// The destination's own keys.
pub fn sqs_keys(queue_url: &str, endpoint: &str) -> String {
    format!(
        "kind = \"sqs\"\nqueue_url = \"{queue_url}\"\nregion = \"{REGION}\"\nendpoint = \"{endpoint}\"\n"
    )
}

/// The binary with an `sqs` destination, in `dir`, on `backend`.
async fn serve(
    dir: &Path,
    backend: &Backend,
    keys: &str,
) -> (Server, String, Option<crate::postgres::TestDatabase>) {
    let (database_url, postgres) =
        crate::postgres::database_for(backend, &dir.join("data/hookledger.db")).await;
    let keys = format!("{keys}ordered_by_account = true\ntimeout_secs = 5\n");
    let config = binary_config(&database_url, "sqs", &keys);
    crate::helpers::write_config(dir.join("hookledger.toml"), config).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let server = Server::start(dir, &AWS_ENV, "source demo");
    (server, database_url, postgres)
}

/// Every posting reaches the FIFO queue once, deduplicated by its message
/// id and grouped by account, each group in order; sent again by a
/// replay inside the deduplication interval, none arrives twice.
async fn postings_reach_a_fifo_queue_once_each_in_order_per_account(backend: Backend) {
    let Some(program) = moto("postings_reach_a_fifo_queue_once_each_in_order_per_account") else {
        return;
    };
    let broker = start_moto(&program, HeldPort::new()).await;
    let endpoint = format!("http://127.0.0.1:{}", broker.port);
    let mut queue =
        FifoQueue::create(&endpoint, &format!("hltest-{}", crate::outbox_amqp::tag())).await;
    let dir = tempfile::tempdir().unwrap();
    let (server, database_url, _postgres) =
        serve(dir.path(), &backend, &sqs_keys(&queue.url, &endpoint)).await;
    let base = Arc::new(RwLock::new(server.base()));
    let client = hookledger::tls::client();
    for n in 0..12 {
        post_credit(&client, &base, n, 4).await;
    }
    let store = crate::postgres::side_store(&database_url).await;
    let rows = drained_in(&store, "sqs", Duration::from_secs(60)).await;
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r.state == "delivered"), "{rows:?}");

    // Sent again under the same ids (a replay), before anything is
    // received: SQS drops every copy. (moto compares a deduplication id
    // with the messages still in the queue, where SQS remembers it for
    // five minutes even after the message is deleted: receiving first
    // would let moto take the copies.)
    let first_sent: Vec<_> = rows.iter().map(|r| r.delivered_ms).collect();
    let (ok, out) = run_with_config(
        dir.path(),
        &[
            "outbox",
            "replay",
            "--destination",
            "sqs",
            "--status",
            "delivered",
        ],
    );
    assert!(ok, "{out}");
    let started = Instant::now();
    loop {
        let rows = store.outbox_messages("sqs", 0, 100).await.unwrap();
        let sent: Vec<_> = rows.iter().map(|r| r.delivered_ms).collect();
        let again = sent.iter().zip(&first_sent).all(|(now, first)| now > first);
        if rows.iter().all(|r| r.state == "delivered") && again {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{rows:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let received = queue.received().await;
    assert_eq!(received.len(), 12, "each once: {received:?}");
    let mut seqs: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for message in &received {
        let id = message.body["id"].as_str().unwrap();
        assert_eq!(message.id.as_deref(), Some(id));
        assert_eq!(message.deduplication_id.as_deref(), Some(id));
        assert_eq!(message.message_type.as_deref(), Some("ledger.posted"));
        let account = message.body["account_id"].as_str().unwrap();
        assert_eq!(
            message.group.as_deref(),
            Some(account),
            "grouped by account"
        );
        seqs.entry(account.to_owned())
            .or_default()
            .push(message.body["account_seq"].as_i64().unwrap());
    }
    assert_eq!(seqs.len(), 4);
    for (account, sent) in &seqs {
        assert_eq!(sent, &(1..=3).collect::<Vec<i64>>(), "{account} in order");
    }
    let ids: HashSet<_> = received.iter().filter_map(|m| m.id.clone()).collect();
    let expected: HashSet<_> = rows.iter().map(|r| r.message_id.clone()).collect();
    assert_eq!(ids, expected);
    // Metrics and the admin API (the dashboard's figures) show it as any
    // destination.
    let metrics =
        crate::metrics::scrape_url(&client, &format!("{}/metrics", server.base()), None).await;
    assert_eq!(
        metrics[r#"hookledger_outbox_delivered_total{destination="sqs"}"#], 24.0,
        "each sent twice, SQS acknowledging both"
    );
    let outbox: serde_json::Value = client
        .get(format!("{}/admin/api/outbox", server.base()))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shown = &outbox["destinations"][0];
    assert_eq!(shown["name"], "sqs", "{outbox}");
    assert_eq!(shown["delivered_last_hour"], 12, "{outbox}");
    assert_eq!(shown["blocked_accounts"], 0, "{outbox}");

    drop(server);
}

/// No SQS at first: the messages stay pending with the SDK's reason, and
/// arrive once it answers.
async fn messages_wait_for_sqs_that_is_down(backend: Backend) {
    let Some(program) = moto("messages_wait_for_sqs_that_is_down") else {
        return;
    };
    let port = HeldPort::new();
    let endpoint = format!("http://127.0.0.1:{}", port.port);
    let name = format!("hltest-{}", crate::outbox_amqp::tag());
    // moto's queue URL for that name, before moto runs.
    let queue_url = format!("{endpoint}/123456789012/{name}.fifo");
    let dir = tempfile::tempdir().unwrap();
    let (server, database_url, _postgres) =
        serve(dir.path(), &backend, &sqs_keys(&queue_url, &endpoint)).await;
    let base = Arc::new(RwLock::new(server.base()));
    post_credit(&hookledger::tls::client(), &base, 0, 1).await;
    let store = crate::postgres::side_store(&database_url).await;
    let (_, error) = first_failure(&store, "sqs").await;
    assert!(error.starts_with("SendMessage"), "{error}");
    assert!(!error.contains(AWS_ENV[1].1), "{error}");

    let _broker = start_moto(&program, port).await;
    let mut queue = FifoQueue::create(&endpoint, &name).await;
    assert_eq!(queue.url, queue_url);
    let rows = drained_in(&store, "sqs", Duration::from_secs(120)).await;
    assert!(rows.iter().all(|r| r.state == "delivered"), "{rows:?}");
    let received = queue.received().await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].id.as_deref(), Some(rows[0].message_id.as_str()));
    drop(server);
}

crate::both_backends!(
    postings_reach_a_fifo_queue_once_each_in_order_per_account,
    messages_wait_for_sqs_that_is_down,
);
