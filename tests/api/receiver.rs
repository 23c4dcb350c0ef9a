//! A downstream HTTP receiver for the outbox tests: answers each request as
//! scripted (a status, with `Retry-After` if asked, or no answer at all) and
//! records what it got. Plain HTTP/1.1 over tokio, one request per
//! connection, so every answer is exactly the one scripted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookledger::cli::{http_header, read_http_request};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    /// A status with `Retry-After: <seconds>`.
    RetryAfter(u16, u64),
    /// Reads the request and never answers (the sender's timeout).
    Hang,
    /// A status, once the test calls [`Receiver::release_held`].
    Held(u16),
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: i64,
    pub body: Value,
    pub answered: Answer,
}

#[derive(Default)]
struct State {
    script: VecDeque<Answer>,
    otherwise: Option<Answer>,
    received: Vec<Received>,
}

#[derive(Clone)]
pub struct Receiver {
    pub port: u16,
    state: Arc<Mutex<State>>,
    /// Set once [`Answer::Held`] answers may go.
    released: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Receiver {
    /// Listens on a new port; answers `script` in order, then `otherwise`.
    pub async fn start(script: &[Answer], otherwise: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve(listener, script, otherwise)
    }

    /// Listens on `port` (one that refused connections until now).
    pub async fn start_on(port: u16, otherwise: Answer) -> Receiver {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        Self::serve(listener, &[], otherwise)
    }

    fn serve(listener: TcpListener, script: &[Answer], otherwise: Answer) -> Receiver {
        let receiver = Receiver {
            port: listener.local_addr().unwrap().port(),
            state: Arc::new(Mutex::new(State {
                script: script.iter().copied().collect(),
                otherwise: Some(otherwise),
                received: Vec::new(),
            })),
            released: Arc::new(tokio::sync::watch::Sender::new(false)),
        };
        let serving = receiver.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serving.clone().answer(stream));
            }
        });
        receiver
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }

    /// Lets every [`Answer::Held`] answer go, now and from now on.
    pub fn release_held(&self) {
        self.released.send_replace(true);
    }

    /// From now on, every request gets `answer`.
    pub fn answer_all(&self, answer: Answer) {
        let mut state = self.state.lock().unwrap();
        state.script.clear();
        state.otherwise = Some(answer);
    }

    /// Waits until at least `count` requests arrived; panics after 10 s.
    pub async fn wait_for_requests(&self, count: usize) {
        let started = std::time::Instant::now();
        while self.received().len() < count {
            let got = self.received().len();
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{got} of {count} requests arrived"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// The requests answered 2xx.
    pub fn accepted(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| {
                matches!(
                    r.answered,
                    Answer::Status(200..=299) | Answer::Held(200..=299)
                )
            })
            .collect()
    }

    async fn answer(self, mut stream: TcpStream) {
        let Some((head, body)) = read_http_request(&mut stream).await else {
            return;
        };
        let header = |name: &str| http_header(&head, name).unwrap_or_default();
        let answer = {
            let mut state = self.state.lock().unwrap();
            let answer = state
                .script
                .pop_front()
                .or(state.otherwise)
                .unwrap_or(Answer::Status(200));
            state.received.push(Received {
                id: header("webhook-id"),
                timestamp: header("webhook-timestamp").parse().unwrap_or_default(),
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                answered: answer,
            });
            answer
        };
        let head = match answer {
            Answer::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Answer::Status(status) => format!("HTTP/1.1 {status} X\r\n"),
            Answer::Held(status) => {
                let mut released = self.released.subscribe();
                let _ = released.wait_for(|released| *released).await;
                format!("HTTP/1.1 {status} X\r\n")
            }
            Answer::RetryAfter(status, seconds) => {
                format!("HTTP/1.1 {status} X\r\nRetry-After: {seconds}\r\n")
            }
        };
        let reply = format!("{head}Content-Length: 0\r\nConnection: close\r\n\r\n");
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
    }
}
