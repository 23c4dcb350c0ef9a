//! A provider's API as hookledger reads it (a reconcile run's listings, a
//! Stripe thin event's object): one GET at a time,
//! paced to a tenth of the provider's documented read limit, a `429` (or a
//! `503` that says when) waited out as its `Retry-After` says, a server
//! error or a network failure tried again with backoff, and every other
//! failure said plainly (the key refused, a page that is not what the
//! provider documents). Redirects are not followed and an answer is read
//! to at most 16 MiB. The key is sent as a bearer token and never shown:
//! not in an error, and not in what the provider's message echoes of it.
//! The provider's clock, from the first answer's `Date`, is what a run's
//! cursor is kept in: event times are the provider's.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::secret::Secret;

/// Tries of one request that the provider answered `429` or `5xx`.
const TRIES: u32 = 5;
/// The longest `Retry-After` waited out; a longer one ends the run.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read: a page of 100 Stripe events is well under
/// 1 MiB; a page of 250 Shopify orders, each with its lines, addresses and
/// refunds, can come near 16.
const MAX_BODY: usize = 32 * 1024 * 1024;

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
    /// 404: what was asked for does not exist at the provider.
    #[error("the provider has no such object: HTTP 404{0}")]
    NotFound(String),
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
            ApiError::Failed { .. } | ApiError::NotFound(_) => "provider_error",
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

/// The path and query of the `rel="next"` entry of a `Link` header
/// (RFC 8288: `<url>; rel="next", <url>; rel="previous"`; relation names
/// are case-insensitive and a `rel` may list several). A header that
/// speaks of a next page this cannot read is an error, never a last page.
fn next_link(value: Option<&reqwest::header::HeaderValue>) -> Result<Option<String>, ApiError> {
    let Some(value) = value else { return Ok(None) };
    let unreadable = || ApiError::Malformed("a Link header whose next page cannot be read".into());
    let text = value.to_str().map_err(|_| unreadable())?;
    let found = text.split(',').find_map(|entry| {
        let (target, params) = entry.split_once(';')?;
        let next = params.split(';').any(|param| {
            let Some((name, rels)) = param.split_once('=') else {
                return false;
            };
            name.trim().eq_ignore_ascii_case("rel")
                && rels
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|rel| rel.eq_ignore_ascii_case("next"))
        });
        let url = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let path = &rest[rest.find('/')?..];
        next.then(|| path.to_owned())
    });
    match found {
        None if text.to_ascii_lowercase().contains("next") => Err(unreadable()),
        found => Ok(found),
    }
}

enum Body<'a> {
    None,
    Json(&'a Value),
    Form(&'a str),
}

/// `Retry-After` in seconds, whole or with a fraction (Shopify sends
/// `2.0`), a fraction rounded up (the HTTP-date form is not used by the
/// providers here; it counts as none).
fn seconds(value: Option<&reqwest::header::HeaderValue>) -> Option<Duration> {
    let text = value?.to_str().ok()?.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let secs: u64 = whole.parse().ok()?;
    let up = u64::from(fraction.bytes().any(|b| b != b'0'));
    Some(Duration::from_secs(secs.saturating_add(up)))
}

/// 250 ms, doubling with each try.
fn backoff(tried: u32) -> Duration {
    Duration::from_millis(250) * 2u32.pow(tried.min(6))
}

/// The answer's body, at most [`MAX_BODY`] bytes.
async fn bounded(mut response: reqwest::Response) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ApiError::Network(without_url(&e)))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ApiError::Malformed(format!(
                "an answer larger than {} MiB",
                MAX_BODY / 1024 / 1024
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The provider's own error message, if its body has one (`error.message`,
/// Stripe's shape), bounded, with anything that looks like a key (or the
/// key itself) replaced: `: ...` or nothing.
async fn detail(response: reqwest::Response, secrets: &[&str]) -> String {
    let Ok(body) = bounded(response).await else {
        return String::new();
    };
    // Stripe's `error.message`, Paddle's `error.detail`, Square's
    // `errors[0].detail`, PayPal's `message` (and its token endpoint's
    // `error_description`), Shopify's `errors` string.
    let message = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        [
            "/error/message",
            "/error/detail",
            "/errors/0/detail",
            "/message",
            "/error_description",
            "/errors",
        ]
        .iter()
        .find_map(|at| v.pointer(at).and_then(Value::as_str).map(str::to_owned))
    });
    match message {
        Some(text) => format!(": {}", shown(text, secrets)),
        None => String::new(),
    }
}

/// A provider's message as shown: every secret redacted in the whole
/// text, then cut to 200 characters (cut first, a secret cut in two would
/// no longer match and its first half would show).
fn shown(text: String, secrets: &[&str]) -> String {
    let text = secrets.iter().fold(text, |text, key| redacted(&text, key));
    text.chars().take(200).collect()
}

/// `text` with the key, and every word that looks like a provider key
/// (Stripe's `sk_`, `rk_`, `pk_`, Paddle's `pdl_`, masked or not), replaced.
fn redacted(text: &str, key: &str) -> String {
    let mut text = text.to_owned();
    // The key, and each half of a `CLIENT_ID:SECRET` one.
    if !key.is_empty() {
        text = text.replace(key, "<key>");
    }
    for part in key.split(':').filter(|part| *part != key) {
        if part.len() >= 8 {
            text = text.replace(part, "<key>");
        }
    }
    text.split(' ')
        .map(|word| {
            let bare =
                word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '*');
            match ["sk_", "rk_", "pk_", "pdl_"]
                .iter()
                .any(|p| bare.starts_with(p))
            {
                true => word.replace(bare, "<key>"),
                false => word.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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

#[cfg(test)]
mod tests {
    use super::{next_link, redacted, seconds, shown};

    #[test]
    fn retry_after_is_whole_seconds_or_a_fraction_rounded_up() {
        let wait =
            |text: &str| seconds(Some(&reqwest::header::HeaderValue::from_str(text).unwrap()));
        assert_eq!(wait("3"), Some(std::time::Duration::from_secs(3)));
        assert_eq!(wait("2.0"), Some(std::time::Duration::from_secs(2)));
        assert_eq!(wait("0.5"), Some(std::time::Duration::from_secs(1)));
        assert_eq!(wait("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(wait("-1"), None);
        assert_eq!(wait(".5"), None);
    }

    #[test]
    fn a_link_header_names_the_next_page_on_this_api() {
        let header = |text: &str| reqwest::header::HeaderValue::from_str(text).unwrap();
        let both = header(
            "<https://shop.myshopify.com/admin/api/2026-07/orders.json?limit=250&page_info=abc>; \
             rel=\"previous\", <https://shop.myshopify.com/admin/api/2026-07/orders.json?\
             limit=250&page_info=def>; rel=\"next\"",
        );
        assert_eq!(
            next_link(Some(&both)).unwrap().as_deref(),
            Some("/admin/api/2026-07/orders.json?limit=250&page_info=def")
        );
        let shouted = header("<https://s.example/a?page_info=x>; REL=\"Next Last\"");
        assert_eq!(
            next_link(Some(&shouted)).unwrap().as_deref(),
            Some("/a?page_info=x")
        );
        let broken = header("https://s.example/a?page_info=x; rel=\"next\"");
        assert!(next_link(Some(&broken)).is_err());
        let last = header("<https://shop.myshopify.com/x?page_info=abc>; rel=\"previous\"");
        assert_eq!(next_link(Some(&last)).unwrap(), None);
        assert_eq!(next_link(None).unwrap(), None);
    }

    #[test]
    fn a_providers_message_never_carries_the_key() {
        assert_eq!(
            redacted(
                "Invalid API Key provided: sk_test_****1234.",
                "sk_test_abcd1234"
            ),
            "Invalid API Key provided: <key>."
        );
        assert_eq!(
            redacted("echo sk_test_abcd1234 back", "sk_test_abcd1234"),
            "echo <key> back"
        );
        assert_eq!(
            redacted(
                "Client Authentication failed for AbC123clientid",
                "AbC123clientid:EFG456secret"
            ),
            "Client Authentication failed for <key>"
        );
        // Cut after redaction: a secret at the cut is hidden whole.
        let long = format!("{} echoed EFG456secretEFG456secret", "x".repeat(180));
        let secrets = ["AbC123clientid:EFG456secretEFG456secret", "A21AA-token"];
        let text = shown(long, &secrets);
        assert!(!text.contains("EFG4"), "{text}");
        assert_eq!(
            shown("token A21AA-token expired".into(), &secrets),
            "token <key> expired"
        );
        assert_eq!(
            redacted("No such event: evt_1", "rk_live_x"),
            "No such event: evt_1"
        );
    }
}
