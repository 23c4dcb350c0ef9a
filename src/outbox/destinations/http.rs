//! `kind = "http"`: a POST signed with Standard Webhooks headers. The
//! `webhook-timestamp` is the attempt's own, so a retry days later still
//! falls inside the consumer's tolerance; `webhook-id` is the message id.
//! Success is any 2xx; anything else (a redirect included) is a failure.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use schemars::JsonSchema;
use serde::Deserialize;

use super::deliver::{Deliver, DestinationKind, Outgoing, SendError, Sending};
use crate::config::{ConfigError, Env, OneOrMany, kind_settings, plain_url, resolve_secret};
use crate::providers::{KindSettings, Unsigned, provider_for};
use crate::secret::{KeyBytes, Secret};

/// The keys of `kind = "http"`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Settings {
    /// Where messages are POSTed: `https://` or `http://`, no credentials
    /// (the query is never shown).
    #[schemars(extend("pattern" = "^https?://"))]
    url: Option<String>,
    /// The Standard Webhooks secret the receiver verifies with (`whsec_...`,
    /// at least 16 bytes, `env:NAME` allowed); several while one is rotated.
    secret: Option<OneOrMany>,
}

/// Where an `http` destination posts, and the keys that sign; every key
/// signs (the first configured secret's signature first).
struct HttpKind {
    url: String,
    keys: Vec<KeyBytes>,
}

/// Neither the keys nor the URL's query (it may carry a token).
impl std::fmt::Debug for HttpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Reads and checks an `http` destination's keys.
pub fn parse(
    settings: toml::Table,
    env: Env<'_>,
    key: &str,
) -> Result<Arc<dyn DestinationKind>, ConfigError> {
    let Settings { url, secret } = kind_settings(settings, key)?;
    let url = url.ok_or_else(|| ConfigError::new(format!("{key}.url"), "is required"))?;
    let url = plain_url(&url, &["https", "http"], key)?;
    let written = secret.map(OneOrMany::into_vec).unwrap_or_default();
    if written.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.secret"),
            "is required: the Standard Webhooks secret the receiver verifies with",
        ));
    }
    let provider = provider_for("standard-webhooks").expect("a registered kind");
    let mut keys = Vec::new();
    for (i, value) in written.iter().enumerate() {
        let at = format!("{key}.secret[{i}]");
        let secret: Secret = resolve_secret(value, env, &at)?;
        let mut decoded = provider
            .keys_from_secret(&secret)
            .map_err(|e| ConfigError::new(&at, e))?;
        // hookledger signs with it: a short key is a guessable one.
        if decoded.iter().any(|key| key.expose().len() < 16) {
            return Err(ConfigError::new(
                &at,
                "must decode to at least 16 bytes (for example whsec_ followed by \
                 `openssl rand -base64 32`)",
            ));
        }
        keys.append(&mut decoded);
    }
    Ok(Arc::new(HttpKind { url, keys }))
}

/// A URL as logs and pages show it: without its query or fragment, which
/// may carry a token.
fn shown_url(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or_default()
}

impl DestinationKind for HttpKind {
    fn describe(&self) -> String {
        let shown = shown_url(&self.url);
        format!("http POST {shown} ({} signing key(s))", self.keys.len())
    }

    fn sender(&self, timeout: Duration) -> Box<dyn Deliver> {
        Box::new(Http::new(&self.url, &self.keys, timeout))
    }
}

pub struct Http {
    /// Parsed once: a request given a string parses it again every time.
    url: Result<reqwest::Url, String>,
    keys: Vec<KeyBytes>,
    /// Or why there is none: every attempt then fails with the reason.
    client: Result<reqwest::Client, String>,
}

impl Http {
    pub fn new(url: &str, keys: &[KeyBytes], timeout: Duration) -> Self {
        let client = crate::tls::build_client(|builder| {
            builder
                .timeout(timeout)
                .connect_timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
        });
        if let Err(error) = &client {
            tracing::error!(url = shown_url(url), "outbox: {error}");
        }
        Self {
            url: reqwest::Url::parse(url).map_err(|e| format!("the destination's url: {e}")),
            keys: keys.to_vec(),
            client,
        }
    }

    /// The three Standard Webhooks headers; every configured key signs
    /// (`v1,<first> v1,<second>`), so a consumer verifies with the old or
    /// the new secret while one is rotated.
    fn headers(&self, message: &Outgoing<'_>, timestamp: i64) -> Vec<(&'static str, String)> {
        let provider = provider_for("standard-webhooks").expect("a registered kind");
        let settings = KindSettings::default();
        let mut headers = Vec::new();
        let mut signatures = Vec::new();
        for key in &self.keys {
            let signed = provider.sign(
                key,
                Unsigned {
                    body: message.body.to_vec(),
                    event_id: message.id,
                    timestamp,
                    settings: &settings,
                },
            );
            for (name, value) in signed.headers {
                if name == "webhook-signature" {
                    signatures.push(value);
                } else if signatures.is_empty() {
                    headers.push((name, value));
                }
            }
        }
        headers.push(("webhook-signature", signatures.join(" ")));
        headers
    }
}

/// `Retry-After` as seconds or an HTTP date.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?;
    retry_after_value(value, Utc::now())
}

/// Seconds (`120`) or an IMF-fixdate (`Wed, 21 Oct 2026 07:28:00 GMT`,
/// RFC 9110's preferred form) as a wait from `now`; a date already past,
/// or anything else, is no wait of the destination's (the backoff rules).
fn retry_after_value(value: &str, now: chrono::DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (at.with_timezone(&Utc) - now).to_std().ok()
}

/// What failed, without the URL's query (which may carry a token).
fn describe(error: &reqwest::Error) -> String {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    if cause.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {cause}")
    }
}

impl Deliver for Http {
    fn deliver<'a>(&'a self, message: &'a Outgoing<'a>) -> Sending<'a> {
        Box::pin(async move {
            let client = self.client.as_ref().map_err(SendError::new)?;
            let url = self.url.as_ref().map_err(SendError::new)?;
            let mut request = client
                .post(url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(
                    USER_AGENT,
                    concat!("hookledger/", env!("CARGO_PKG_VERSION")),
                )
                .body(message.body.to_vec());
            for (name, value) in self.headers(message, Utc::now().timestamp()) {
                request = request.header(name, value);
            }
            let response = request
                .send()
                .await
                .map_err(|e| SendError::new(describe(&e)))?;
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            Err(SendError {
                reason: format!("answered HTTP {}", status.as_u16()),
                retry_after: retry_after(&response),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-10-21T07:27:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let wait = |value| retry_after_value(value, now);
        assert_eq!(wait("120"), Some(Duration::from_secs(120)));
        assert_eq!(wait(" 5 "), Some(Duration::from_secs(5)));
        assert_eq!(
            wait("Wed, 21 Oct 2026 07:28:00 GMT"),
            Some(Duration::from_secs(60))
        );
        assert_eq!(wait("Wed, 21 Oct 2026 07:26:00 GMT"), None, "already past");
        assert_eq!(wait("-5"), None);
        assert_eq!(wait("soon"), None);
    }
}
