//! What a destination kind is to the relay: its checked settings
//! ([`DestinationKind`]) and the sender they make ([`Deliver`]), which gets
//! a rendered message ([`Outgoing`]) and says whether the other side
//! acknowledged it.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

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
    /// The account it moves (none for an event held before it was
    /// applied): the key that keeps one account's messages in order on a
    /// bus that partitions (a Kafka key, an SQS FIFO message group).
    pub account: Option<&'a str>,
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
