//! The provider's API as a reconcile run reads it: one GET at a time,
//! paced to a tenth of the provider's documented read limit, a `429`
//! waited out as its `Retry-After` says, a server error tried again, and
//! every other failure said plainly (the key refused, the network, a page
//! that is not what the provider documents). The key is sent as a bearer
//! token and never shown.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::secret::Secret;

/// Tries of one request that the provider answered `429` or `5xx`.
const TRIES: u32 = 5;
/// The longest `Retry-After` waited out; a longer one ends the run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(30);

/// Why a run could not read the provider's records.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 401 or 403: the key is wrong, revoked, or may not read events.
    #[error("the provider refused the API key: HTTP {status}{detail}")]
    Refused { status: u16, detail: String },
    #[error(
        "the provider kept answering HTTP 429 (rate limited) past {0} tries or a minute's wait"
    )]
    RateLimited(u32),
    #[error("the provider answered HTTP {status}{detail}")]
    Failed { status: u16, detail: String },
    #[error("could not reach the provider: {0}")]
    Network(String),
    /// A page that is not what the provider documents.
    #[error("the provider's answer is not a page of events: {0}")]
    Malformed(String),
}

impl ApiError {
    /// The metrics label.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::Refused { .. } => "refused",
            ApiError::RateLimited(_) => "rate_limited",
            ApiError::Failed { .. } => "provider_error",
            ApiError::Network(_) => "network",
            ApiError::Malformed(_) => "malformed",
        }
    }
}

/// One provider API, as one run reads it.
pub struct Api {
    client: reqwest::Client,
    base: String,
    key: Secret,
    /// The least time between two requests.
    gap: Duration,
    last: Mutex<Option<Instant>>,
}

impl Api {
    /// `requests_per_second`: the most this run may send (a tenth of the
    /// provider's documented limit).
    pub fn new(base: &str, key: &Secret, requests_per_second: u32) -> Result<Self, ApiError> {
        let client = crate::tls::build_client(|builder| builder.timeout(TIMEOUT))
            .map_err(ApiError::Network)?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            key: key.clone(),
            gap: Duration::from_secs(1) / requests_per_second.max(1),
            last: Mutex::new(None),
        })
    }

    /// GET `path` with `query`: the JSON answer of a `2xx`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, ApiError> {
        let query = serde_urlencoded::to_string(query)
            .map_err(|e| ApiError::Malformed(format!("a query that cannot be sent: {e}")))?;
        let url = format!("{}{path}?{query}", self.base);
        let mut tried = 0;
        loop {
            tried += 1;
            self.pace().await;
            let sent = self
                .client
                .get(&url)
                .bearer_auth(self.key.expose())
                .send()
                .await
                .map_err(|e| ApiError::Network(without_url(&e)))?;
            let status = sent.status();
            let retry_after = seconds(sent.headers().get(reqwest::header::RETRY_AFTER));
            if status.is_success() {
                let body = sent
                    .bytes()
                    .await
                    .map_err(|e| ApiError::Network(without_url(&e)))?;
                return serde_json::from_slice(&body)
                    .map_err(|e| ApiError::Malformed(format!("not JSON: {e}")));
            }
            let detail = detail(sent).await;
            let code = status.as_u16();
            match code {
                401 | 403 => {
                    return Err(ApiError::Refused {
                        status: code,
                        detail,
                    });
                }
                429 => {
                    let wait = retry_after.unwrap_or(Duration::from_secs(1));
                    if tried >= TRIES || wait > MAX_RETRY_AFTER {
                        return Err(ApiError::RateLimited(tried));
                    }
                    tokio::time::sleep(wait).await;
                }
                500..=599 if tried < TRIES => {
                    tokio::time::sleep(Duration::from_millis(250) * 2u32.pow(tried)).await;
                }
                _ => {
                    return Err(ApiError::Failed {
                        status: code,
                        detail,
                    });
                }
            }
        }
    }

    /// Waits until the least gap since the last request has passed.
    async fn pace(&self) {
        let mut last = self.last.lock().await;
        if let Some(at) = *last {
            tokio::time::sleep_until(at + self.gap).await;
        }
        *last = Some(Instant::now());
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by the
/// providers here; it counts as none).
fn seconds(value: Option<&reqwest::header::HeaderValue>) -> Option<Duration> {
    let secs: u64 = value?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs))
}

/// The provider's own error message, if its body has one (`error.message`,
/// Stripe's shape), bounded: `: ...` or nothing.
async fn detail(response: reqwest::Response) -> String {
    let Ok(body) = response.bytes().await else {
        return String::new();
    };
    let message = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        v.pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    match message {
        Some(text) => format!(": {}", text.chars().take(200).collect::<String>()),
        None => String::new(),
    }
}

/// A request error without its URL: the query holds nothing secret, but
/// the message stays short and the key is never in it (it is a header).
fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "the provider");
    }
    text
}
