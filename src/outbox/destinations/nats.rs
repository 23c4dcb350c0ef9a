//! `kind = "nats"`: a JetStream publish with `Nats-Msg-Id` = the message id,
//! so the server drops a re-sent message inside the stream's duplicate
//! window; success is the stream's publish acknowledgement. The stream is
//! created if missing, listening on the subject template's literal prefix
//! (`hookledger.>` for `hookledger.{type}`), with a two-minute duplicate
//! window. The connection is made on first use and made again after a
//! failure.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::deliver::{Deliver, DestinationKind, Outgoing, SendError, Sending};
use super::template::{self, PLACEHOLDERS};
use crate::config::{ConfigError, Env, kind_settings, plain_url};

const DEFAULT_SUBJECT: &str = "hookledger.{type}";
const DEFAULT_STREAM: &str = "HOOKLEDGER";

/// The keys of `kind = "nats"`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Settings {
    /// The NATS server: `nats://` or `tls://`, no credentials.
    #[schemars(extend("pattern" = "^(nats|tls)://"))]
    url: Option<String>,
    /// The subject template: `{type}`, `{source}`, `{currency}` are filled
    /// in per message.
    #[schemars(extend("default" = DEFAULT_SUBJECT))]
    subject: Option<String>,
    /// The JetStream stream, created if missing: 1-64 letters, digits,
    /// `_` or `-`.
    #[schemars(extend("default" = DEFAULT_STREAM, "pattern" = "^[A-Za-z0-9_-]{1,64}$"))]
    stream: Option<String>,
}

/// Where a `nats` destination publishes.
#[derive(Debug)]
struct NatsKind {
    url: String,
    subject: String,
    stream: String,
}

/// Reads and checks a `nats` destination's keys.
pub fn parse(
    settings: toml::Table,
    _env: Env<'_>,
    key: &str,
) -> Result<Arc<dyn DestinationKind>, ConfigError> {
    let Settings {
        url,
        subject,
        stream,
    } = kind_settings(settings, key)?;
    let url = url.ok_or_else(|| ConfigError::new(format!("{key}.url"), "is required"))?;
    let url = plain_url(&url, &["nats", "tls"], key)?;
    let subject = subject.unwrap_or_else(|| DEFAULT_SUBJECT.to_owned());
    check_subject(&subject).map_err(|e| ConfigError::new(format!("{key}.subject"), e))?;
    let stream = stream.unwrap_or_else(|| DEFAULT_STREAM.to_owned());
    if stream.is_empty()
        || stream.len() > 64
        || !stream
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ConfigError::new(
            format!("{key}.stream"),
            "must be 1-64 letters, digits, '_' or '-'",
        ));
    }
    Ok(Arc::new(NatsKind {
        url,
        subject,
        stream,
    }))
}

impl DestinationKind for NatsKind {
    fn describe(&self) -> String {
        let NatsKind {
            url,
            subject,
            stream,
        } = self;
        format!("nats {url}, subject {subject}, stream {stream}")
    }

    fn sender(&self, timeout: Duration) -> Box<dyn Deliver> {
        Box::new(Nats::new(&self.url, &self.subject, &self.stream, timeout))
    }
}

/// A subject template: dot-separated tokens, the first one literal (the
/// stream listens on `<literal tokens>.>`), placeholders only whole-token.
fn check_subject(subject: &str) -> Result<(), String> {
    let tokens: Vec<&str> = subject.split('.').collect();
    if tokens.iter().any(|t| t.is_empty()) {
        return Err("has an empty token (two dots, or a dot at an end)".into());
    }
    if tokens[0].contains('{') {
        return Err("must start with a literal token, like hookledger.{type}".into());
    }
    for token in &tokens {
        if token.contains('{') || token.contains('}') {
            if !PLACEHOLDERS.contains(token) {
                return Err(format!(
                    "{token:?}: a placeholder must be a whole token, one of {}",
                    PLACEHOLDERS.join(", ")
                ));
            }
        } else if token
            .chars()
            .any(|c| c == '*' || c == '>' || c.is_whitespace() || c.is_control())
        {
            return Err(format!("{token:?} must not contain wildcards or spaces"));
        }
    }
    Ok(())
}

/// The subjects a stream must listen on for `subject`: its literal tokens
/// up to the first placeholder, then `>`.
fn stream_subject(subject: &str) -> String {
    let literal: Vec<&str> = subject
        .split('.')
        .take_while(|t| !t.contains('{'))
        .collect();
    if literal.len() == subject.split('.').count() {
        subject.to_owned()
    } else {
        format!("{}.>", literal.join("."))
    }
}

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
        template::fill(&self.subject, message)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_template_is_checked_and_gives_its_stream_subject() {
        assert_eq!(check_subject("hookledger.{type}"), Ok(()));
        assert_eq!(stream_subject("hookledger.{type}"), "hookledger.>");
        assert_eq!(stream_subject("pay.{source}.{type}"), "pay.>");
        assert_eq!(stream_subject("pay.all"), "pay.all");
        assert!(check_subject("{type}.x").is_err());
        assert!(check_subject("a.{kind}").is_err());
        assert!(check_subject("a.b{type}").is_err());
        assert!(check_subject("a.*").is_err());
        assert!(check_subject("a..b").is_err());
    }

    #[test]
    fn every_placeholder_is_filled_from_the_message() {
        let nats = Nats::new(
            "nats://127.0.0.1:4222",
            "pay.{source}.{type}.{currency}",
            "HOOKLEDGER",
            Duration::from_secs(1),
        );
        let mut message = Outgoing {
            id: "msg_1",
            message_type: "ledger.posted",
            source: "stripe",
            currency: Some("EUR"),
            account: None,
            body: b"{}",
        };
        assert_eq!(nats.subject_for(&message), "pay.stripe.ledger.posted.EUR");
        message.message_type = "event.held";
        message.currency = None;
        assert_eq!(nats.subject_for(&message), "pay.stripe.event.held.none");
    }
}
