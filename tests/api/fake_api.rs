//! A provider API for the reconcile tests' failure paths: answers each GET
//! as scripted (a status, `Retry-After` if asked, a JSON body), the last
//! answer again once the script is used up, and records what was asked.
//! Plain HTTP/1.1 over tokio, one request per connection.

use std::sync::{Arc, Mutex};

use hookledger::cli::read_http_request;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<u64>,
    pub body: String,
}

impl Reply {
    pub fn ok(body: serde_json::Value) -> Reply {
        Reply {
            status: 200,
            retry_after: None,
            body: body.to_string(),
        }
    }

    pub fn status(status: u16, retry_after: Option<u64>) -> Reply {
        Reply {
            status,
            retry_after,
            body: r#"{"error": {"message": "scripted"}}"#.to_owned(),
        }
    }
}

pub struct FakeApi {
    pub base: String,
    asked: Arc<Mutex<Vec<(String, std::time::Instant)>>>,
}

impl FakeApi {
    pub async fn start(script: Vec<Reply>) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        tokio::spawn(async move {
            let mut next = 0;
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let reply = script[next.min(script.len() - 1)].clone();
                next += 1;
                let Some((head, _body)) = read_http_request(&mut stream).await else {
                    continue;
                };
                // The request line's target: `GET /v1/events?... HTTP/1.1`.
                let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                log.lock()
                    .unwrap()
                    .push((target, std::time::Instant::now()));
                let retry = reply
                    .retry_after
                    .map(|s| format!("Retry-After: {s}\r\n"))
                    .unwrap_or_default();
                let head = format!(
                    "HTTP/1.1 {} Scripted\r\nContent-Type: application/json\r\n{retry}\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    reply.status,
                    reply.body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(reply.body.as_bytes()).await;
            }
        });
        FakeApi { base, asked }
    }

    /// Each request's target (path and query) and when it came.
    pub fn asked(&self) -> Vec<(String, std::time::Instant)> {
        self.asked.lock().unwrap().clone()
    }
}
