//! The bench's downstream for the outbox (`--outbox`): a local HTTP
//! endpoint that acknowledges every message at once and records each
//! message id it got, over keep-alive connections.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Default)]
pub struct Sink {
    ids: Arc<Mutex<HashSet<String>>>,
    requests: Arc<Mutex<u64>>,
}

impl Sink {
    /// Listens on a free local port; its URL.
    pub async fn start(&self) -> Result<String, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("sink: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let sink = self.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(sink.clone().serve(stream));
            }
        });
        Ok(format!("http://127.0.0.1:{port}/sink"))
    }

    /// Distinct message ids received, and requests in all.
    pub fn counts(&self) -> (usize, u64) {
        let ids = self.ids.lock().unwrap_or_else(|e| e.into_inner()).len();
        (
            ids,
            *self.requests.lock().unwrap_or_else(|e| e.into_inner()),
        )
    }

    async fn serve(self, mut stream: TcpStream) {
        while let Some((head, _body)) = read_http_request(&mut stream).await {
            if let Some(id) = header(&head, "webhook-id") {
                self.ids
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id);
            }
            *self.requests.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
            if stream.write_all(ok).await.is_err() {
                return;
            }
        }
    }
}

/// A header's value in a request head.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

/// Reads one HTTP/1.1 request (head and a `content-length` body) from a
/// client that waits for each answer before sending the next request (no
/// pipelining, as reqwest sends); `None` when the connection ends.
pub async fn read_http_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let length: usize = header(&head, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    Some((head, buffer[end..end + length].to_vec()))
}
