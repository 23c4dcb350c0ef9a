//! A provider's record of events, faked in the provider's own dialect
//! (one file each, built from its published API reference) for the
//! reconcile tests: events are published into it as the provider would
//! make them (stamped with the time and kept in creation order), it answers
//! its listing endpoint with paging, refuses any key but its own, and can
//! be told to misbehave once per fault (a 429 with `Retry-After`, a page
//! not as documented). Plain HTTP/1.1 over tokio, one request per
//! connection; every request is recorded with when it came.

pub mod paddle;
pub mod paypal;
pub mod shopify;
pub mod square;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use hookledger::cli::{http_header, read_http_request};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// How one provider lists its events.
pub trait Dialect: Send + Sync + 'static {
    /// Stamps `event` with its creation time, as the provider does.
    fn stamp(&self, event: &mut Value, at: DateTime<Utc>);

    /// The answer to `method target` with `body`, given every event in
    /// creation order; `None` for a request it does not serve (404).
    fn answer(&self, method: &str, target: &str, body: &[u8], events: &[Value]) -> Option<Reply>;

    /// The provider's answer to a key it does not know.
    fn refused(&self) -> (u16, Value);

    /// Whether a request to `target` with headers `head` is let in by a
    /// fake that takes `key`: by default, the key as a bearer token.
    fn authorized(&self, _target: &str, head: &str, key: &str) -> bool {
        http_header(head, "authorization") == Some(format!("Bearer {key}"))
    }

    /// Whether `target` lists events (faults are for those; a token
    /// request is not one).
    fn lists(&self, _target: &str) -> bool {
        true
    }
}

/// An answer: its JSON body, and a `Link` header's next page (Shopify's
/// paging).
pub struct Reply {
    pub body: Value,
    pub next: Option<String>,
}

impl From<Value> for Reply {
    fn from(body: Value) -> Reply {
        Reply { body, next: None }
    }
}

/// What the next request gets instead of its answer.
#[derive(Debug, Clone)]
pub enum Fault {
    /// `429` with `Retry-After: n`.
    RateLimited(u64),
    /// `200` with this body.
    Page(Value),
}

#[derive(Default)]
struct Shared {
    events: Vec<Value>,
    faults: VecDeque<Fault>,
    asked: Vec<Asked>,
}

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Asked {
    /// Whether it listed events.
    pub listing: bool,
    pub target: String,
    pub body: String,
    pub at: Instant,
}

pub struct FakeFeed {
    pub base: String,
    shared: Arc<Mutex<Shared>>,
    dialect: Arc<dyn Dialect>,
}

impl FakeFeed {
    /// A fake that takes `key` as a bearer token.
    pub async fn start(dialect: Arc<dyn Dialect>, key: &str) -> FakeFeed {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (state, speaker, key) = (shared.clone(), dialect.clone(), key.to_owned());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let Some((head, body)) = read_http_request(&mut stream).await else {
                    continue;
                };
                let (status, retry, answer) = respond(&state, &*speaker, &key, &head, &body);
                let mut extra = retry
                    .map(|s| format!("Retry-After: {s}\r\n"))
                    .unwrap_or_default();
                if let Some(next) = &answer.next {
                    extra.push_str(&format!("Link: <{next}>; rel=\"next\"\r\n"));
                }
                let answer = answer.body.to_string();
                let head = format!(
                    "HTTP/1.1 {status} Fake\r\nContent-Type: application/json\r\n{extra}\
                     Date: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    Utc::now().format("%a, %d %b %Y %H:%M:%S GMT"),
                    answer.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        FakeFeed {
            base,
            shared,
            dialect,
        }
    }

    /// Makes `event` at the provider now.
    pub fn publish(&self, mut event: Value) -> Value {
        self.dialect.stamp(&mut event, Utc::now());
        self.shared.lock().unwrap().events.push(event.clone());
        event
    }

    /// The next listing request gets `fault` instead of its answer.
    pub fn fault(&self, fault: Fault) {
        self.shared.lock().unwrap().faults.push_back(fault);
    }

    pub fn asked(&self) -> Vec<Asked> {
        self.shared.lock().unwrap().asked.clone()
    }
}

/// Status, `Retry-After` and the answer.
type Answered = (u16, Option<u64>, Reply);

/// Status, `Retry-After` and body for one request.
fn respond(
    state: &Mutex<Shared>,
    dialect: &dyn Dialect,
    key: &str,
    head: &str,
    body: &[u8],
) -> Answered {
    let mut shared = state.lock().unwrap();
    let mut line = head.split(' ');
    let (method, target) = (
        line.next().unwrap_or_default(),
        line.next().unwrap_or_default(),
    );
    let listing = dialect.lists(target);
    shared.asked.push(Asked {
        listing,
        target: target.to_owned(),
        body: String::from_utf8_lossy(body).into_owned(),
        at: Instant::now(),
    });
    if !dialect.authorized(target, head, key) {
        let (status, answer) = dialect.refused();
        return (status, None, answer.into());
    }
    let fault = match listing {
        true => shared.faults.pop_front(),
        false => None,
    };
    match fault {
        Some(Fault::RateLimited(secs)) => (
            429,
            Some(secs),
            serde_json::json!({"error": {"detail": "too many requests"}}).into(),
        ),
        Some(Fault::Page(page)) => (200, None, page.into()),
        None => match dialect.answer(method, target, body, &shared.events) {
            Some(answer) => (200, None, answer),
            None => (
                404,
                None,
                serde_json::json!({"error": {"detail": "not found"}}).into(),
            ),
        },
    }
}

/// The query of a request's target.
pub struct Query(pub Vec<(String, String)>);

impl Query {
    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The query of `target`.
pub fn query(target: &str) -> Query {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    Query(serde_urlencoded::from_str(query).unwrap_or_default())
}
