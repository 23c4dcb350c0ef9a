//! `kind = "nats"`: a JetStream publish with `Nats-Msg-Id` = the message id,
//! so the server drops a re-sent message inside the stream's duplicate
//! window; success is the stream's publish acknowledgement. The stream is
//! created if missing, listening on the subject template's literal prefix
//! (`hookledger.>` for `hookledger.{type}`), with a two-minute duplicate
//! window. The connection is made on first use and made again after a
//! failure.

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use tokio::sync::Mutex;

use super::{Deliver, Outgoing, SendError, Sending};
use crate::config::stream_subject;

/// The window in which JetStream drops a message whose id it has stored:
/// a re-send soon after a lost acknowledgement is dropped by the server; a
/// later one (a retry after backoff, a replay) reaches consumers, who
/// deduplicate on the id.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

pub struct Nats {
    url: String,
    subject: String,
    stream: String,
    timeout: Duration,
    context: Mutex<Option<jetstream::Context>>,
}

impl Nats {
    pub fn new(url: &str, subject: &str, stream: &str, timeout: Duration) -> Self {
        Self {
            url: url.to_owned(),
            subject: subject.to_owned(),
            stream: stream.to_owned(),
            timeout,
            context: Mutex::new(None),
        }
    }

    /// The subject for a message: the template with its placeholders
    /// filled (a currency-less message has `none`).
    fn subject_for(&self, message: &Outgoing<'_>) -> String {
        self.subject
            .replace("{type}", message.message_type)
            .replace("{source}", message.source)
            .replace("{currency}", message.currency.unwrap_or("none"))
    }

    async fn connect(&self) -> Result<jetstream::Context, SendError> {
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(self.timeout)
            .connect(self.url.as_str())
            .await
            .map_err(|e| SendError::new(format!("could not connect: {e}")))?;
        let mut context = jetstream::new(client);
        context.set_timeout(self.timeout);
        let found = context
            .get_or_create_stream(stream::Config {
                name: self.stream.clone(),
                subjects: vec![stream_subject(&self.subject)],
                duplicate_window: DUPLICATE_WINDOW,
                ..Default::default()
            })
            .await
            .map_err(|e| SendError::new(format!("stream {}: {e}", self.stream)))?;
        let window = found.cached_info().config.duplicate_window;
        if window < DUPLICATE_WINDOW {
            tracing::warn!(
                stream = %self.stream,
                "the stream's duplicate window is {window:?}: a message re-sent later than \
                 that reaches consumers twice (they deduplicate on its id)"
            );
        }
        Ok(context)
    }
}

impl Deliver for Nats {
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a> {
        Box::pin(async move {
            let context = {
                let mut cached = self.context.lock().await;
                match cached.as_ref() {
                    Some(context) => context.clone(),
                    None => {
                        let context = self.connect().await?;
                        *cached = Some(context.clone());
                        context
                    }
                }
            };
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Nats-Msg-Id", message.id);
            headers.insert("Content-Type", "application/json");
            let published = async {
                context
                    .publish_with_headers(
                        self.subject_for(message),
                        headers,
                        message.body.to_vec().into(),
                    )
                    .await?
                    .await
            };
            let error = match tokio::time::timeout(self.timeout, published).await {
                Ok(Ok(_ack)) => return Ok(()),
                Ok(Err(e)) => SendError::new(format!("publish: {e}")),
                Err(_) => SendError::new("publish: no acknowledgement in time"),
            };
            // Connect again next time: the stream may have been deleted (it
            // is then created again) or the server replaced.
            *self.context.lock().await = None;
            Err(error)
        })
    }
}
