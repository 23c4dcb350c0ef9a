//! A provider's API as hookledger reads it (a reconcile run's listings, a
//! Stripe thin event's object): one request at a time (a GET, or the POST
//! of a search that reads, as Square's), the key as a bearer token, in a
//! header of the provider's own, or exchanged for a token (OAuth client
//! credentials, PayPal's), paced to a tenth of the provider's documented
//! read limit, a `429` (or a
//! `503` that says when) waited out as its `Retry-After` says, a server
//! error or a network failure tried again with backoff, and every other
//! failure said plainly (the key refused, a page that is not what the
//! provider documents). Redirects are not followed and an answer is read
//! to at most 32 MiB (`answer`). The key is never shown:
//! not in an error, and not in what the provider's message echoes of it.
//! The provider's clock, from the first answer's `Date`, is what a run's
//! cursor is kept in: event times are the provider's.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::secret::Secret;

mod answer;
mod error;

use answer::{backoff, bounded, detail, next_link, seconds, without_url};
pub use error::ApiError;

/// Tries of one request that the provider answered `429` or `5xx`.
const TRIES: u32 = 5;
/// The longest `Retry-After` waited out; a longer one ends the run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(30);

/// One provider API, as one run reads it.
pub struct Api {
    client: reqwest::Client,
    base: String,
    key: Secret,
    /// The least time between two requests.
    gap: Duration,
    /// Headers every request carries (a provider's API version).
    headers: Vec<(&'static str, String)>,
    /// Where the key, `CLIENT_ID:SECRET`, is exchanged for a bearer token
    /// (OAuth 2.0 client credentials, PayPal's), if it is; and the token.
    token_path: Option<&'static str>,
    token: Mutex<Option<Secret>>,
    /// The header the key goes in instead of `Authorization: Bearer`
    /// (Shopify's `X-Shopify-Access-Token`).
    key_header: Option<&'static str>,
    last: Mutex<Option<Instant>>,
    /// The provider's `Date` on its first answer.
    first_date: std::sync::Mutex<Option<DateTime<Utc>>>,
    /// Tries of a request the provider answered `429` or `5xx`, or that
    /// failed on the way.
    tries: u32,
}

impl Api {
    /// `gap`: the least time between two requests (a tenth of the
    /// provider's documented limit).
    pub fn new(base: &str, key: &Secret, gap: Duration) -> Result<Self, ApiError> {
        let client = crate::tls::build_client(|builder| {
            builder
                .timeout(TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
        })
        .map_err(ApiError::Network)?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            key: key.clone(),
            gap,
            headers: Vec::new(),
            token_path: None,
            token: Mutex::new(None),
            key_header: None,
            last: Mutex::new(None),
            first_date: std::sync::Mutex::new(None),
            tries: TRIES,
        })
    }

    /// At most `tries` tries of each request (a webhook's fetch, which its
    /// sender waits for, tries less than a sweep).
    pub fn with_tries(self, tries: u32) -> Self {
        Self {
            tries: tries.max(1),
            ..self
        }
    }

    /// Every request carries `name: value` too.
    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    /// The key is a client id and secret (`CLIENT_ID:SECRET`), exchanged
    /// at `token_path` for the bearer token the requests carry.
    pub fn with_client_credentials(mut self, token_path: &'static str) -> Self {
        self.token_path = Some(token_path);
        self
    }

    /// The key goes in header `name`, not as a bearer token.
    pub fn with_key_header(mut self, name: &'static str) -> Self {
        self.key_header = Some(name);
        self
    }

    /// The provider's clock when it first answered this run, if it said.
    pub fn first_date(&self) -> Option<DateTime<Utc>> {
        *self.first_date.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// GET `path` with `query`: the JSON answer of a `2xx`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, ApiError> {
        let query = serde_urlencoded::to_string(query)
            .map_err(|e| ApiError::Malformed(format!("a query that cannot be sent: {e}")))?;
        let url = match query.is_empty() {
            true => format!("{}{path}", self.base),
            false => format!("{}{path}?{query}", self.base),
        };
        Ok(self.call(reqwest::Method::GET, &url, None).await?.0)
    }

    /// GET `path` with `query`: the JSON answer of a `2xx`, and the path
    /// and query of the next page its `Link` header names (`rel="next"`,
    /// on any host: it is asked of this API).
    pub async fn get_linked(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<(Value, Option<String>), ApiError> {
        let query = serde_urlencoded::to_string(query)
            .map_err(|e| ApiError::Malformed(format!("a query that cannot be sent: {e}")))?;
        let url = match query.is_empty() {
            true => format!("{}{path}", self.base),
            false => format!("{}{path}?{query}", self.base),
        };
        self.call(reqwest::Method::GET, &url, None).await
    }

    /// POST `body` to `path` (a search that reads, as Square's): the JSON
    /// answer of a `2xx`.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        let url = format!("{}{path}", self.base);
        Ok(self.call(reqwest::Method::POST, &url, Some(body)).await?.0)
    }

    async fn call(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(Value, Option<String>), ApiError> {
        let bearer = self.bearer().await?;
        let body = body.map_or(Body::None, Body::Json);
        let auth = match self.key_header {
            Some(name) => Auth::Header(name, bearer.expose()),
            None => Auth::Bearer(bearer.expose()),
        };
        self.send(method, url, &auth, &body).await
    }

    /// The key, or the token it was exchanged for (once a run).
    async fn bearer(&self) -> Result<Secret, ApiError> {
        let Some(path) = self.token_path else {
            return Ok(self.key.clone());
        };
        let mut token = self.token.lock().await;
        if let Some(token) = token.as_ref() {
            return Ok(token.clone());
        }
        let (id, secret) = self.key.expose().split_once(':').unwrap_or_default();
        let url = format!("{}{path}", self.base);
        let (answer, _) = self
            .send(
                reqwest::Method::POST,
                &url,
                &Auth::Basic(id, secret),
                &Body::Form("grant_type=client_credentials"),
            )
            .await?;
        let granted = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::Malformed("the token answer has no access_token".into()))?;
        let granted = Secret::new(granted);
        *token = Some(granted.clone());
        Ok(granted)
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        auth: &Auth<'_>,
        body: &Body<'_>,
    ) -> Result<(Value, Option<String>), ApiError> {
        let mut tried = 0;
        loop {
            tried += 1;
            self.pace().await;
            let mut request = self.client.request(method.clone(), url);
            request = match auth {
                Auth::Bearer(token) => request.bearer_auth(token),
                Auth::Basic(id, secret) => request.basic_auth(id, Some(secret)),
                Auth::Header(name, key) => match reqwest::header::HeaderValue::from_str(key) {
                    Ok(mut value) => {
                        // Kept out of any debug view, as bearer_auth's is.
                        value.set_sensitive(true);
                        request.header(*name, value)
                    }
                    // The config takes visible ASCII only.
                    Err(_) => {
                        return Err(ApiError::Network(
                            "the API key cannot be sent in a header".into(),
                        ));
                    }
                },
            };
            for (name, value) in &self.headers {
                request = request.header(*name, value);
            }
            request = match body {
                Body::None => request,
                Body::Json(body) => request.json(body),
                Body::Form(form) => request
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(form.to_string()),
            };
            let sent = request.send().await;
            let sent = match sent {
                Ok(sent) => sent,
                Err(e) if tried < self.tries => {
                    tracing::debug!(
                        "provider API request failed, trying again: {}",
                        without_url(&e)
                    );
                    tokio::time::sleep(backoff(tried)).await;
                    continue;
                }
                Err(e) => return Err(ApiError::Network(without_url(&e))),
            };
            self.note_date(sent.headers().get(reqwest::header::DATE));
            let status = sent.status();
            let retry_after = seconds(sent.headers().get(reqwest::header::RETRY_AFTER));
            if status.is_success() {
                let next = next_link(sent.headers().get(reqwest::header::LINK))?;
                let body = bounded(sent).await?;
                let body = serde_json::from_slice(&body)
                    .map_err(|e| ApiError::Malformed(format!("not JSON: {e}")))?;
                return Ok((body, next));
            }
            // The key, and the token it was exchanged for, if any.
            let sent_secret = match auth {
                Auth::Bearer(secret) | Auth::Header(_, secret) => *secret,
                Auth::Basic(..) => "",
            };
            let detail = detail(sent, &[self.key.expose(), sent_secret]).await;
            let code = status.as_u16();
            match code {
                404 => return Err(ApiError::NotFound(detail)),
                401 | 403 => {
                    return Err(ApiError::Refused {
                        status: code,
                        detail,
                    });
                }
                429 => {
                    let wait = retry_after.unwrap_or(backoff(tried));
                    if tried >= self.tries || wait > MAX_RETRY_AFTER {
                        return Err(ApiError::RateLimited(tried));
                    }
                    tokio::time::sleep(wait).await;
                }
                500..=599 if tried < self.tries => {
                    let wait = retry_after.filter(|w| *w <= MAX_RETRY_AFTER);
                    tokio::time::sleep(wait.unwrap_or(backoff(tried))).await;
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

    fn note_date(&self, value: Option<&reqwest::header::HeaderValue>) {
        let mut first = self.first_date.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = value
                .and_then(|v| v.to_str().ok())
                .and_then(|text| DateTime::parse_from_rfc2822(text).ok())
                .map(|at| at.with_timezone(&Utc));
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

/// How a request says who sends it.
enum Auth<'a> {
    Bearer(&'a str),
    Basic(&'a str, &'a str),
    Header(&'static str, &'a str),
}

enum Body<'a> {
    None,
    Json(&'a Value),
    Form(&'a str),
}
