//! `kind = "amqp"`: RabbitMQ (AMQP 0-9-1) with publisher confirms. Each
//! message is published persistent (delivery mode 2) to a durable topic
//! exchange, declared if missing, with `message_id` = the message id, and
//! `mandatory`: success is the broker's confirm of a message it routed to
//! at least one queue. A message no queue is bound for comes back
//! (`basic.return`) and is retried, never dropped; a `nack` is retried too.
//! The connection is made on first use and again after any failure.

use std::sync::Arc;
use std::time::Duration;

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::deliver::{Deliver, DestinationKind, Outgoing, SendError, Sending};
use super::template;
use crate::config::{ConfigError, Env, kind_settings, resolve_secret};
use crate::secret::Secret;

const DEFAULT_EXCHANGE: &str = "hookledger";
const DEFAULT_ROUTING_KEY: &str = "{type}.{currency}";

/// The keys of `kind = "amqp"`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Settings {
    /// The broker: `amqp://user:password@host:5672/vhost` or `amqps://`
    /// (`env:NAME` allowed, as it holds a password; never shown with it).
    url: Option<String>,
    /// The durable topic exchange, declared if missing: 1-127 letters,
    /// digits, `.`, `_`, `-` or `:`.
    #[schemars(extend("default" = DEFAULT_EXCHANGE, "pattern" = "^[A-Za-z0-9._:-]{1,127}$"))]
    exchange: Option<String>,
    /// The routing key template: `{type}`, `{source}`, `{currency}` are
    /// filled in per message (a message without a currency has `none`).
    #[schemars(extend("default" = DEFAULT_ROUTING_KEY))]
    routing_key: Option<String>,
}

/// Where an `amqp` destination publishes.
struct AmqpKind {
    url: Secret,
    /// The URL without its password, for people.
    shown: String,
    exchange: String,
    routing_key: String,
}

/// Never the URL's password.
impl std::fmt::Debug for AmqpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Reads and checks an `amqp` destination's keys.
pub fn parse(
    settings: toml::Table,
    env: Env<'_>,
    key: &str,
) -> Result<Arc<dyn DestinationKind>, ConfigError> {
    let Settings {
        url,
        exchange,
        routing_key,
    } = kind_settings(settings, key)?;
    let at = format!("{key}.url");
    let written = url.ok_or_else(|| ConfigError::new(&at, "is required"))?;
    let url = resolve_secret(&written, env, &at)?;
    let shown = shown_url(url.expose()).map_err(|e| ConfigError::new(&at, e))?;
    let exchange = exchange.unwrap_or_else(|| DEFAULT_EXCHANGE.to_owned());
    if exchange.is_empty()
        || exchange.len() > 127
        || !exchange
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
    {
        return Err(ConfigError::new(
            format!("{key}.exchange"),
            "must be 1-127 letters, digits, '.', '_', '-' or ':'",
        ));
    }
    let routing_key = routing_key.unwrap_or_else(|| DEFAULT_ROUTING_KEY.to_owned());
    check_routing_key(&routing_key)
        .map_err(|e| ConfigError::new(format!("{key}.routing_key"), e))?;
    Ok(Arc::new(AmqpKind {
        url,
        shown,
        exchange,
        routing_key,
    }))
}

/// The URL as people see it: its password replaced; an error for a URL
/// that is not `amqp://` or `amqps://` with a host.
fn shown_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .filter(|(scheme, _)| matches!(*scheme, "amqp" | "amqps"))
        .ok_or("must start with amqp:// or amqps://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if host.is_empty() {
        return Err("names no host".to_owned());
    }
    let user = match user.map(|u| u.split_once(':').map_or(u, |(name, _)| name)) {
        Some(name) => format!("{name}:***@"),
        None => String::new(),
    };
    Ok(format!("{scheme}://{user}{host}{path}"))
}

/// A routing key template: placeholders only the three known ones, no
/// spaces or control characters, at most 255 bytes once filled (checked
/// per message too).
fn check_routing_key(template: &str) -> Result<(), String> {
    if template.is_empty() {
        return Err("must not be empty".into());
    }
    template::check_placeholders(template)?;
    if template
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("must not contain spaces or control characters".into());
    }
    Ok(())
}

impl DestinationKind for AmqpKind {
    fn describe(&self) -> String {
        format!(
            "amqp {}, exchange {}, routing key {}",
            self.shown, self.exchange, self.routing_key
        )
    }

    fn sender(&self, timeout: Duration) -> Box<dyn Deliver> {
        Box::new(Amqp {
            url: self.url.clone(),
            exchange: self.exchange.clone(),
            routing_key: self.routing_key.clone(),
            timeout,
            open: Mutex::new(None),
        })
    }
}

pub struct Amqp {
    url: Secret,
    exchange: String,
    routing_key: String,
    timeout: Duration,
    /// The connection (kept so the channel lives) and its confirming
    /// channel.
    open: Mutex<Option<(Connection, Channel)>>,
}

impl Amqp {
    fn routing_key_for(&self, message: &Outgoing<'_>) -> String {
        template::fill(&self.routing_key, message)
    }

    /// A reason as the row keeps it: never the URL's password, whatever
    /// the client library put in its message.
    fn scrubbed(&self, reason: String) -> SendError {
        let url = self.url.expose();
        let password = url
            .split_once("://")
            .and_then(|(_, rest)| rest.split(['/', '?', '#']).next())
            .and_then(|authority| authority.rsplit_once('@'))
            .and_then(|(user, _)| user.split_once(':'))
            .map(|(_, password)| password)
            .filter(|password| !password.is_empty());
        match password {
            Some(password) => SendError::new(reason.replace(password, "***")),
            None => SendError::new(reason),
        }
    }

    async fn connect(&self) -> Result<(Connection, Channel), SendError> {
        let connection = Connection::connect(self.url.expose(), ConnectionProperties::default())
            .await
            .map_err(|e| self.scrubbed(format!("could not connect: {e}")))?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| self.scrubbed(format!("could not open a channel: {e}")))?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| self.scrubbed(format!("publisher confirms refused: {e}")))?;
        channel
            .exchange_declare(
                self.exchange.as_str().into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    durable: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(|e| self.scrubbed(format!("exchange {}: {e}", self.exchange)))?;
        Ok((connection, channel))
    }

    async fn publish(&self, message: &Outgoing<'_>) -> Result<(), SendError> {
        let channel = {
            let mut open = self.open.lock().await;
            match open.as_ref() {
                Some((_, channel)) => channel.clone(),
                None => {
                    let (connection, channel) = self.connect().await?;
                    *open = Some((connection, channel.clone()));
                    channel
                }
            }
        };
        let routing_key = self.routing_key_for(message);
        let properties = BasicProperties::default()
            .with_delivery_mode(2)
            .with_message_id(message.id.into())
            .with_content_type("application/json".into())
            .with_type(message.message_type.into())
            .with_app_id("hookledger".into());
        let confirm = channel
            .basic_publish(
                self.exchange.as_str().into(),
                routing_key.as_str().into(),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                message.body,
                properties,
            )
            .await
            .map_err(|e| self.scrubbed(format!("publish: {e}")))?
            .await
            .map_err(|e| self.scrubbed(format!("confirm: {e}")))?;
        if !confirm.is_ack() {
            return Err(SendError::new("the broker refused the message (nack)"));
        }
        if confirm.take_message().is_some() {
            return Err(SendError::new(format!(
                "no queue is bound to exchange {} for routing key {routing_key}: \
                 the message is kept and sent again",
                self.exchange
            )));
        }
        Ok(())
    }
}

impl Deliver for Amqp {
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a> {
        Box::pin(async move {
            let error = match tokio::time::timeout(self.timeout, self.publish(message)).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(error)) => error,
                Err(_) => SendError::new("publish: no confirm in time"),
            };
            // Connect again next time: the channel may be closed by the
            // error, or the broker replaced.
            if let Some((connection, _)) = self.open.lock().await.take() {
                let _ = connection.close(0, "".into()).await;
            }
            Err(error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_never_shown() {
        assert_eq!(
            shown_url("amqp://guest:s3cret@127.0.0.1:5672/%2f").unwrap(),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(
            shown_url("amqps://rabbit.internal/prod").unwrap(),
            "amqps://rabbit.internal/prod"
        );
        assert!(shown_url("http://rabbit").is_err());
        assert!(shown_url("amqp://user:pw@/x").is_err());
        let kind = parse(
            toml::toml! { url = "amqp://guest:s3cret@127.0.0.1:5672/%2f" },
            &|_| None,
            "destinations[rabbit]",
        )
        .unwrap();
        assert!(!format!("{kind:?}").contains("s3cret"));
        assert!(!kind.describe().contains("s3cret"));
    }

    #[test]
    fn a_routing_key_template_is_checked_and_filled() {
        assert_eq!(check_routing_key("{type}.{currency}"), Ok(()));
        assert_eq!(check_routing_key("ledger.{source}.{type}"), Ok(()));
        assert!(check_routing_key("{kind}").is_err());
        assert!(check_routing_key("a {type}").is_err());
        assert!(check_routing_key("{type").is_err());
        assert!(check_routing_key("").is_err());
        let amqp = Amqp {
            url: Secret::new("amqp://127.0.0.1"),
            exchange: "hookledger".into(),
            routing_key: "{source}.{type}.{currency}".into(),
            timeout: Duration::from_secs(1),
            open: Mutex::new(None),
        };
        let mut message = Outgoing {
            id: "msg_1",
            message_type: "ledger.posted",
            source: "stripe",
            currency: Some("EUR"),
            account: None,
            body: b"{}",
        };
        assert_eq!(amqp.routing_key_for(&message), "stripe.ledger.posted.EUR");
        message.currency = None;
        assert_eq!(amqp.routing_key_for(&message), "stripe.ledger.posted.none");
    }

    #[test]
    fn a_password_in_a_client_error_is_scrubbed() {
        let amqp = Amqp {
            url: Secret::new("amqp://guest:s3cret@127.0.0.1/%2f"),
            exchange: "hookledger".into(),
            routing_key: "{type}".into(),
            timeout: Duration::from_secs(1),
            open: Mutex::new(None),
        };
        let error = amqp.scrubbed("could not connect to amqp://guest:s3cret@127.0.0.1".into());
        assert_eq!(
            error.reason,
            "could not connect to amqp://guest:***@127.0.0.1"
        );
    }
}
