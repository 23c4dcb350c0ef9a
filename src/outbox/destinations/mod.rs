//! One file per destination kind, behind [`Deliver`]: a destination gets a
//! rendered message and says whether the other side acknowledged it. It
//! never touches the database; the relay never builds a request.

mod http;
mod nats;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::config::{Destination, Target};

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

/// A destination kind.
pub trait Deliver: Send + Sync {
    /// Sends one message; `Ok` only once the destination acknowledged it.
    /// The relay bounds every call by the destination's `timeout_secs`.
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a>;
}

/// The sender for a configured destination.
pub fn sender(destination: &Destination) -> Box<dyn Deliver> {
    match &destination.target {
        Target::Http { url, keys } => Box::new(http::Http::new(url, keys, destination.timeout)),
        Target::Nats {
            url,
            subject,
            stream,
        } => Box::new(nats::Nats::new(url, subject, stream, destination.timeout)),
    }
}
