//! The `amqp` destination against a real RabbitMQ, named by
//! `HOOKLEDGER_TEST_AMQP_URL` (`.ci/run` starts Debian's rabbitmq-server
//! if nothing listens on 5672, and sets it; unset, the test says it
//! skipped, or fails under CI). Each test uses its own exchange and queue,
//! deleted afterwards.

use std::time::Duration;

use lapin::options::{
    BasicGetOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties};

use crate::helpers::*;
use crate::outbox::{app_with, drained, first_failure};

/// The broker to test against, if one is named.
pub fn amqp_url(test: &str) -> Option<String> {
    named_by_env("HOOKLEDGER_TEST_AMQP_URL", test)
}

pub fn tag() -> String {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).unwrap();
    format!("{:08x}", u32::from_le_bytes(bytes))
}

fn destination(url: &str, exchange: &str) -> String {
    format!(
        r#"
[[destinations]]
name = "rabbit"
kind = "amqp"
url = "{url}"
exchange = "{exchange}"
routing_key = "{{type}}.{{currency}}"
"#
    )
}

/// A queue bound to every key of an exchange (declared here too, as
/// hookledger declares it), on the test's own connection; what it has
/// received, in arrival order.
pub struct Queue {
    _connection: Connection,
    channel: Channel,
    name: String,
    received: Vec<serde_json::Value>,
}

impl Queue {
    pub async fn bound(url: &str, exchange: &str) -> Queue {
        let connection = Connection::connect(url, ConnectionProperties::default())
            .await
            .expect("RabbitMQ runs");
        let channel = connection.create_channel().await.unwrap();
        channel
            .exchange_declare(
                exchange.into(),
                lapin::ExchangeKind::Topic,
                lapin::options::ExchangeDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .unwrap();
        let name = format!("{exchange}-all");
        channel
            .queue_declare(
                name.as_str().into(),
                QueueDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        channel
            .queue_bind(
                name.as_str().into(),
                exchange.into(),
                "#".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        Queue {
            _connection: connection,
            channel,
            name,
            received: Vec::new(),
        }
    }

    /// Every message the queue holds now, taken off it.
    async fn take(&self) -> Vec<lapin::message::BasicGetMessage> {
        let mut messages = Vec::new();
        while let Some(message) = self
            .channel
            .basic_get(self.name.as_str().into(), BasicGetOptions { no_ack: true })
            .await
            .unwrap()
        {
            messages.push(message);
        }
        messages
    }

    /// The bodies received so far, in arrival order.
    pub async fn received(&mut self) -> Vec<serde_json::Value> {
        for message in self.take().await {
            self.received
                .push(serde_json::from_slice(&message.delivery.data).unwrap());
        }
        self.received.clone()
    }

    pub async fn delete(self, exchange: &str) {
        self.channel
            .queue_delete(self.name.as_str().into(), QueueDeleteOptions::default())
            .await
            .unwrap();
        self.channel
            .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
            .await
            .unwrap();
    }
}

async fn postings_reach_a_bound_queue_persistent_with_their_ids(backend: Backend) {
    let Some(url) = amqp_url("postings_reach_a_bound_queue_persistent_with_their_ids") else {
        return;
    };
    let exchange = format!("hltest-{}", tag());
    let queue = Queue::bound(&url, &exchange).await;
    let app = app_with(backend, &destination(&url, &exchange)).await;
    for i in 0..5 {
        app.send_ok(&credit(&format!("evt_{i}"), "cus_1", 100 + i))
            .await;
    }
    // A held event is told too (every type by default).
    app.send_ok(&credit_seq("evt_late", "cus_seq", 100, 5))
        .await;
    app.send_ok(&debit_seq("evt_old_debit", "cus_seq", 50, 2))
        .await;
    let rows = drained(&app, "rabbit", Duration::from_secs(30)).await;
    assert_eq!(rows.len(), 7, "{rows:?}");
    assert!(rows.iter().all(|m| m.state == "delivered"), "{rows:?}");

    let messages = queue.take().await;
    assert_eq!(messages.len(), 7);
    let mut ids = Vec::new();
    let mut keys = Vec::new();
    for message in &messages {
        let body: serde_json::Value = serde_json::from_slice(&message.delivery.data).unwrap();
        let properties = &message.delivery.properties;
        let id = properties.message_id().as_ref().unwrap().to_string();
        assert_eq!(body["id"], id.as_str());
        assert_eq!(properties.delivery_mode(), &Some(2), "persistent");
        assert_eq!(
            properties.content_type().as_ref().unwrap().as_str(),
            "application/json"
        );
        assert_eq!(
            properties.kind().as_ref().unwrap().as_str(),
            body["type"].as_str().unwrap()
        );
        ids.push(id);
        keys.push(message.delivery.routing_key.to_string());
    }
    assert_eq!(keys.iter().filter(|k| *k == "ledger.posted.USD").count(), 6);
    assert!(keys.contains(&"event.held.USD".to_owned()), "{keys:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 7);
    // Every message row's id is one the queue got.
    for row in &rows {
        assert!(ids.contains(&row.message_id), "{}", row.message_id);
    }
    queue.delete(&exchange).await;
    app.assert_invariants().await;
}

/// Published with `mandatory`: a message no queue is bound for comes back,
/// is kept and sent again, and reaches the queue bound later.
async fn a_message_no_queue_takes_is_kept_and_sent_again(backend: Backend) {
    let Some(url) = amqp_url("a_message_no_queue_takes_is_kept_and_sent_again") else {
        return;
    };
    let exchange = format!("hltest-{}", tag());
    let app = app_with(backend, &destination(&url, &exchange)).await;
    app.send_ok(&credit("evt_unbound", "cus_1", 700)).await;
    let (_, error) = first_failure(app.store(), "rabbit").await;
    assert!(error.contains("no queue is bound"), "{error}");
    assert!(!error.contains("guest:guest"), "{error}");

    let queue = Queue::bound(&url, &exchange).await;
    let rows = drained(&app, "rabbit", Duration::from_secs(120)).await;
    assert!(rows.iter().all(|m| m.state == "delivered"), "{rows:?}");
    let messages = queue.take().await;
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0]
            .delivery
            .properties
            .message_id()
            .as_ref()
            .unwrap()
            .as_str(),
        rows[0].message_id
    );
    queue.delete(&exchange).await;
}

both_backends!(
    postings_reach_a_bound_queue_persistent_with_their_ids,
    a_message_no_queue_takes_is_kept_and_sent_again,
);
