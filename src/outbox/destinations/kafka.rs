//! `kind = "kafka"`: Kafka with the idempotent producer and `acks=all`.
//! Each message goes to the topic its template names, keyed by its account
//! (one account's messages in one partition, in the order sent), with the
//! headers `id` (the message id), `type` and `content-type`. Success is the
//! delivery report of a message every in-sync replica has: the idempotent
//! producer's sequence numbers make the broker drop a copy the client
//! itself re-sent after a lost answer; a later re-send (the outbox's retry
//! after backoff, a replay) is a new record, which consumers deduplicate on
//! `id`. The producer is made on first use, and again after a fatal error.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::util::Timeout;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::deliver::{Deliver, DestinationKind, Outgoing, SendError, Sending};
use super::template;
use crate::config::{ConfigError, Env, kind_settings, resolve_secret};
use crate::secret::Secret;

const DEFAULT_TOPIC: &str = "hookledger.{type}";

/// The librdkafka properties `options` may set: how to reach and trust
/// the brokers, nothing the guarantee rests on. The rest (`acks`,
/// `enable.idempotence`, the timeouts, the partitioner, delivery reports,
/// batching) are hookledger's own: a `topic.`-prefixed twin or a
/// `linger.ms` past the relay's bound would break it quietly.
const ALLOWED_PREFIXES: [&str; 3] = ["ssl.", "sasl.", "socket."];
const ALLOWED: [&str; 12] = [
    "security.protocol",
    "enable.ssl.certificate.verification",
    "client.rack",
    "client.dns.lookup",
    "broker.address.family",
    "compression.type",
    "connections.max.idle.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "debug",
];

fn allowed(name: &str) -> bool {
    ALLOWED.contains(&name) || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The keys of `kind = "kafka"`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Settings {
    /// The bootstrap brokers, each `host:port`.
    #[schemars(length(min = 1))]
    brokers: Option<Vec<String>>,
    /// The topic template: `{type}`, `{source}`, `{currency}` are filled in
    /// per message; a filled topic is 1-249 letters, digits, `.`, `_`, `-`.
    #[schemars(extend("default" = DEFAULT_TOPIC))]
    topic: Option<String>,
    /// More librdkafka properties, for TLS and SASL (`security.protocol`,
    /// `ssl.ca.location`, `sasl.mechanism`, `sasl.username`,
    /// `sasl.password`, ...): `security.protocol`, `ssl.*`, `sasl.*`,
    /// `socket.*`, `client.rack`, `client.dns.lookup`,
    /// `broker.address.family`, `compression.type`, the backoffs and
    /// `debug`. A value may be `env:NAME`; values are never shown. The
    /// properties the guarantee rests on are hookledger's own.
    options: Option<std::collections::BTreeMap<String, String>>,
}

/// Where a `kafka` destination produces.
struct KafkaKind {
    brokers: String,
    topic: String,
    /// librdkafka properties from `options`, values resolved.
    options: Vec<(String, Secret)>,
}

/// Never an option's value.
impl std::fmt::Debug for KafkaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Reads and checks a `kafka` destination's keys.
pub fn parse(
    settings: toml::Table,
    env: Env<'_>,
    key: &str,
) -> Result<Arc<dyn DestinationKind>, ConfigError> {
    let Settings {
        brokers,
        topic,
        options,
    } = kind_settings(settings, key)?;
    let brokers =
        brokers.ok_or_else(|| ConfigError::new(format!("{key}.brokers"), "is required"))?;
    check_brokers(&brokers).map_err(|e| ConfigError::new(format!("{key}.brokers"), e))?;
    let topic = topic.unwrap_or_else(|| DEFAULT_TOPIC.to_owned());
    check_topic_template(&topic).map_err(|e| ConfigError::new(format!("{key}.topic"), e))?;
    let mut resolved = Vec::new();
    for (name, value) in options.unwrap_or_default() {
        let at = format!("{key}.options.{name}");
        if !allowed(&name) {
            return Err(ConfigError::new(
                at,
                "is not one hookledger passes on: security.protocol, ssl.*, sasl.*, socket.*, \
                 client.rack, client.dns.lookup, broker.address.family, compression.type, \
                 the backoffs or debug (the rest, acks and the idempotent producer among \
                 them, are hookledger's own)",
            ));
        }
        let value = resolve_secret(&value, env, &at)?;
        check_option(&name, &value).map_err(|e| ConfigError::new(&at, e))?;
        resolved.push((name, value));
    }
    Ok(Arc::new(KafkaKind {
        brokers: brokers.join(","),
        topic,
        options: resolved,
    }))
}

/// librdkafka checks a property's name and value as it is set, without
/// connecting: a misspelt option or a bad value is refused at load. Its
/// message repeats the value, which may be a secret: not here.
fn check_option(name: &str, value: &Secret) -> Result<(), String> {
    let mut config = ClientConfig::new();
    config.set(name, value.expose());
    match config.create_native_config() {
        Ok(_) => Ok(()),
        Err(KafkaError::ClientConfig(_, description, _, _)) => {
            let description = description.replace(value.expose(), "***");
            Err(format!("refused by librdkafka: {description}"))
        }
        Err(_) => Err("refused by librdkafka".into()),
    }
}

fn check_brokers(brokers: &[String]) -> Result<(), String> {
    if brokers.is_empty() {
        return Err("must name at least one broker".into());
    }
    for broker in brokers {
        let port = broker
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        match port {
            Some((host, Ok(port))) if !host.is_empty() && port > 0 => {}
            _ => return Err(format!("{broker:?} is not host:port")),
        }
        if broker.contains(',') || broker.chars().any(char::is_whitespace) {
            return Err(format!("{broker:?} is not host:port"));
        }
    }
    Ok(())
}

/// A topic name as Kafka takes it.
fn check_topic(topic: &str) -> Result<(), String> {
    if topic.is_empty()
        || topic.len() > 249
        || matches!(topic, "." | "..")
        || !topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(format!(
            "topic {topic:?} is not 1-249 letters, digits, '.', '_' or '-'"
        ));
    }
    Ok(())
}

fn check_topic_template(template: &str) -> Result<(), String> {
    template::check_placeholders(template)?;
    let literal = template::literal_parts(template);
    if !literal.is_empty() {
        check_topic(&literal).map_err(|_| {
            "must be letters, digits, '.', '_' or '-' around its placeholders".to_owned()
        })?;
    }
    Ok(())
}

impl KafkaKind {
    /// The producer's properties: the idempotent producer, `acks=all`, a
    /// delivery timeout inside the relay's bound, and the `options`.
    fn client_config(&self, timeout: Duration) -> ClientConfig {
        let mut config = ClientConfig::new();
        for (name, value) in &self.options {
            config.set(name, value.expose());
        }
        // Well under the relay's own bound, so that librdkafka reports
        // the failure, with its reason, (and stops retrying) before the
        // relay gives up waiting.
        let delivery_ms = (timeout.as_millis() * 3 / 4).max(500);
        config
            .set("bootstrap.servers", &self.brokers)
            .set("client.id", "hookledger")
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("message.timeout.ms", delivery_ms.to_string());
        config
    }
}

impl DestinationKind for KafkaKind {
    fn describe(&self) -> String {
        let mut text = format!(
            "kafka {}, topic {}, keyed by account, idempotent producer, acks=all",
            self.brokers, self.topic
        );
        if !self.options.is_empty() {
            let names: Vec<_> = self.options.iter().map(|(name, _)| name.as_str()).collect();
            text.push_str(&format!(", options {}", names.join(", ")));
        }
        text
    }

    fn sender(&self, timeout: Duration) -> Box<dyn Deliver> {
        Box::new(Kafka {
            config: self.client_config(timeout),
            topic: self.topic.clone(),
            timeout,
            producer: Mutex::new(None),
        })
    }
}

/// No `Debug`: `ClientConfig`'s would print option values.
pub struct Kafka {
    config: ClientConfig,
    topic: String,
    timeout: Duration,
    producer: Mutex<Option<FutureProducer>>,
}

impl Kafka {
    /// The producer, made on first use and again after a fatal error (the
    /// idempotent producer's sequence broken leaves it unusable). Made and
    /// dropped off the async threads: both block (a drop flushes).
    async fn producer(&self) -> Result<FutureProducer, SendError> {
        let mut producer = self.producer.lock().await;
        if let Some(made) = producer.as_ref() {
            if made.client().fatal_error().is_none() {
                return Ok(made.clone());
            }
            if let Some(broken) = producer.take() {
                tokio::task::spawn_blocking(move || drop(broken));
            }
        }
        let config = self.config.clone();
        let made: FutureProducer = tokio::task::spawn_blocking(move || config.create())
            .await
            .map_err(|e| SendError::new(format!("could not make the producer: {e}")))?
            .map_err(|e| SendError::new(format!("could not make the producer: {}", scrubbed(e))))?;
        *producer = Some(made.clone());
        Ok(made)
    }

    async fn produce(&self, message: &Outgoing<'_>) -> Result<(), SendError> {
        let topic = template::fill(&self.topic, message);
        check_topic(&topic).map_err(SendError::new)?;
        let producer = self.producer().await?;
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "id",
                value: Some(message.id),
            })
            .insert(Header {
                key: "type",
                value: Some(message.message_type),
            })
            .insert(Header {
                key: "content-type",
                value: Some("application/json"),
            });
        let mut record = FutureRecord::<str, [u8]>::to(&topic)
            .payload(message.body)
            .headers(headers);
        if let Some(account) = message.account {
            record = record.key(account);
        }
        producer
            .send(record, Timeout::After(self.timeout))
            .await
            .map(drop)
            .map_err(|(error, _)| SendError::new(format!("produce to {topic}: {error}")))
    }
}

/// A client error as the row keeps it: a config error's value (a secret,
/// perhaps) left out.
fn scrubbed(error: KafkaError) -> String {
    match error {
        KafkaError::ClientConfig(_, _, name, _) => {
            format!("librdkafka refused the option {name} (check-config says why)")
        }
        other => other.to_string(),
    }
}

impl Deliver for Kafka {
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a> {
        Box::pin(async move {
            match tokio::time::timeout(self.timeout, self.produce(message)).await {
                Ok(sent) => sent,
                Err(_) => Err(SendError::new("produce: no delivery report in time")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(settings: toml::Table) -> Result<Arc<dyn DestinationKind>, ConfigError> {
        let env = |name: &str| (name == "KAFKA_PASSWORD").then(|| "s3cret".to_owned());
        parse(settings, &env, "destinations[kafka]")
    }

    #[test]
    fn brokers_and_the_topic_template_are_checked() {
        assert!(parsed(toml::toml! { brokers = ["127.0.0.1:9092"] }).is_ok());
        let no_brokers = parsed(toml::toml! { topic = "x" }).unwrap_err();
        assert_eq!(no_brokers.key, "destinations[kafka].brokers");
        for bad in ["127.0.0.1", "host:0", ":9092", "a:1,b:2", "h: 1"] {
            let error = parsed(toml::toml! { brokers = [bad] }).unwrap_err();
            assert_eq!(error.key, "destinations[kafka].brokers", "{bad}");
        }
        assert_eq!(check_topic_template("hookledger.{type}"), Ok(()));
        assert_eq!(check_topic_template("{source}-{type}_{currency}"), Ok(()));
        assert!(check_topic_template("pay/{type}").is_err());
        assert!(check_topic_template("{kind}").is_err());
        assert!(check_topic("a".repeat(250).as_str()).is_err());
        assert!(check_topic("..").is_err());
        assert!(check_topic("ledger.posted").is_ok());
    }

    #[test]
    fn options_are_checked_by_librdkafka_and_never_shown() {
        let kind = parsed(toml::toml! {
            brokers = ["kafka:9093"]
            options = { "security.protocol" = "sasl_plaintext", "sasl.mechanism" = "PLAIN",
                        "sasl.username" = "ledger", "sasl.password" = "env:KAFKA_PASSWORD" }
        })
        .unwrap();
        assert!(!format!("{kind:?}").contains("s3cret"));
        assert!(
            kind.describe()
                .contains("options sasl.mechanism, sasl.password")
        );
        assert!(!kind.describe().contains("s3cret"));
        for name in [
            "security.protocl",
            "acks",
            "topic.acks",
            "linger.ms",
            "partitioner",
        ] {
            let mut options = toml::Table::new();
            options.insert(name.into(), "1".into());
            let mut settings = toml::toml! { brokers = ["kafka:9093"] };
            settings.insert("options".into(), options.into());
            let refused = parsed(settings).unwrap_err();
            assert_eq!(refused.key, format!("destinations[kafka].options.{name}"));
            assert!(refused.message.contains("hookledger's own"), "{refused}");
        }
        // A value librdkafka refuses, which is a secret: the error says
        // which option, never the value.
        let bad_value = parsed(toml::toml! {
            brokers = ["kafka:9093"]
            options = { "security.protocol" = "env:KAFKA_PASSWORD" }
        })
        .unwrap_err();
        assert_eq!(
            bad_value.key,
            "destinations[kafka].options.security.protocol"
        );
        assert!(
            bad_value.message.contains("refused by librdkafka"),
            "{bad_value}"
        );
        assert!(!bad_value.to_string().contains("s3cret"), "{bad_value}");
        let unset = parsed(toml::toml! {
            brokers = ["kafka:9093"]
            options = { "sasl.password" = "env:NOT_SET" }
        })
        .unwrap_err();
        assert!(unset.message.contains("NOT_SET"));
    }

    #[test]
    fn the_producer_is_idempotent_with_acks_all_within_the_timeout() {
        let kind = KafkaKind {
            brokers: "a:9092,b:9092".into(),
            topic: DEFAULT_TOPIC.into(),
            options: vec![],
        };
        let config = kind.client_config(Duration::from_secs(10));
        assert_eq!(config.get("enable.idempotence"), Some("true"));
        assert_eq!(config.get("acks"), Some("all"));
        assert_eq!(config.get("bootstrap.servers"), Some("a:9092,b:9092"));
        assert_eq!(config.get("message.timeout.ms"), Some("7500"));
    }
}
