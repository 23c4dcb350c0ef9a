//! One file per destination kind, and one line for it in `KINDS`: the
//! file reads and checks the kind's own config keys ([`DestinationKind`])
//! and sends ([`Deliver`]): a destination gets a rendered message and says
//! whether the other side acknowledged it. It never touches the database;
//! the relay never builds a request.

mod http;
mod nats;

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{ConfigError, Destination, Env};

/// Reads a kind's own keys of one `[[destinations]]` table (named `key` in
/// errors), `env` for `env:` secrets.
pub type Parse = fn(toml::Table, Env<'_>, &str) -> Result<Arc<dyn DestinationKind>, ConfigError>;

/// Every kind, by its `kind = "..."` name. A kind's settings refuse keys
/// they do not know (`#[serde(deny_unknown_fields)]`): the keys every
/// destination has are read first, so a mistyped one reaches the kind
/// (a test holds every kind to it).
static KINDS: &[(&str, Parse)] = &[("http", http::parse), ("nats", nats::parse)];

pub fn parser_for(kind: &str) -> Option<Parse> {
    KINDS
        .iter()
        .find(|(name, _)| *name == kind)
        .map(|(_, parse)| *parse)
}

pub fn known_kinds() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|(name, _)| *name)
}

/// A configured destination's kind: its checked settings. `Debug` and
/// [`DestinationKind::describe`] never show a secret.
pub trait DestinationKind: Debug + Send + Sync {
    /// Where it sends, for people (`check-config`).
    fn describe(&self) -> String;
    /// A sender; every attempt is bounded by `timeout`.
    fn sender(&self, timeout: Duration) -> Box<dyn Deliver>;
}

/// A message ready to go.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// The message id (`webhook-id`, `Nats-Msg-Id`): the consumer
    /// deduplicates on it.
    pub id: &'a str,
    pub message_type: &'a str,
    pub source: &'a str,
    pub currency: Option<&'a str>,
    /// The JSON body.
    pub body: &'a [u8],
}

/// Why an attempt failed, for the row's `last_error` (never a secret) and
/// the wait before the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    pub reason: String,
    /// The destination asked for this wait (HTTP `Retry-After`).
    pub retry_after: Option<Duration>,
}

impl SendError {
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            retry_after: None,
        }
    }
}

pub type Sending<'a> = Pin<Box<dyn Future<Output = Result<(), SendError>> + Send + 'a>>;

/// A destination's sender.
pub trait Deliver: Send + Sync {
    /// Sends one message; `Ok` only once the destination acknowledged it.
    /// The relay bounds every call by the destination's `timeout_secs`.
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a>;
}

/// The sender for a configured destination.
pub fn sender(destination: &Destination) -> Box<dyn Deliver> {
    destination.target.sender(destination.timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mistyped common key (`ordered_by_acount`) reaches the kind's own
    /// settings: each kind must refuse it, or it would be dropped silently.
    #[test]
    fn every_kind_refuses_a_key_it_does_not_know() {
        for name in known_kinds() {
            let mut settings = toml::Table::new();
            settings.insert("ordered_by_acount".into(), toml::Value::Boolean(true));
            let parse = parser_for(name).unwrap();
            let error = parse(settings, &|_| None, "destinations[d]").unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("unknown field `ordered_by_acount`"),
                "{name}: {error}"
            );
        }
    }
}
