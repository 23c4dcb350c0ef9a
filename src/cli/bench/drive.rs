//! Drives a running receiver with pre-signed deliveries over keep-alive
//! connections, as fast as it answers, for a bounded time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::measure::PhaseResult;
use super::plan::Planned;

/// A non-2xx answer is retried (the sender's at-least-once contract) after
/// this pause, at most this many times.
const RETRY_PAUSE: Duration = Duration::from_millis(20);
const RETRIES: u32 = 200;

/// What one connection's sender saw.
#[derive(Default)]
struct Seen {
    latencies_us: Vec<u32>,
    accepted: Vec<usize>,
    new_events: u64,
    duplicates: u64,
    refused: u64,
    misjudged: u64,
}

/// Sends `planned` over `connections` connections until all are answered or
/// `duration` has passed; returns the figures and the indexes of the new
/// events answered 200.
pub async fn drive(
    url: &str,
    planned: Arc<Vec<Planned>>,
    connections: usize,
    duration: Duration,
) -> Result<(PhaseResult, Vec<usize>), String> {
    let client = crate::tls::build_client(|builder| {
        builder
            .pool_max_idle_per_host(connections)
            .timeout(Duration::from_secs(60))
    })?;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut senders = Vec::with_capacity(connections);
    for _ in 0..connections {
        let (client, planned, next, url) = (
            client.clone(),
            planned.clone(),
            next.clone(),
            url.to_owned(),
        );
        senders.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            while Instant::now() < deadline {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(delivery) = planned.get(index) else {
                    break;
                };
                send(&client, &url, delivery, &mut seen).await?;
                if !delivery.duplicate {
                    seen.accepted.push(index);
                }
            }
            Ok::<Seen, String>(seen)
        }));
    }
    let mut result = PhaseResult::default();
    let mut accepted = Vec::new();
    for sender in senders {
        let seen = sender.await.map_err(|e| e.to_string())??;
        result.latencies_us.extend(seen.latencies_us);
        result.new_events += seen.new_events;
        result.duplicates += seen.duplicates;
        result.refused += seen.refused;
        result.misjudged += seen.misjudged;
        accepted.extend(seen.accepted);
    }
    result.elapsed = started.elapsed();
    result.answered = result.new_events + result.duplicates;
    Ok((result, accepted))
}

/// Sends one delivery until it is answered 2xx.
async fn send(
    client: &reqwest::Client,
    url: &str,
    delivery: &Planned,
    seen: &mut Seen,
) -> Result<(), String> {
    for _ in 0..RETRIES {
        let began = Instant::now();
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .body(delivery.signed.body.clone());
        for (name, value) in &delivery.signed.headers {
            request = request.header(*name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {url}: {e}"))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            seen.refused += 1;
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        }
        let micros = began.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
        seen.latencies_us.push(micros);
        let said_duplicate = contains(&body, b"\"duplicate\":true");
        if said_duplicate != delivery.duplicate {
            seen.misjudged += 1;
        }
        if delivery.duplicate {
            seen.duplicates += 1;
        } else {
            seen.new_events += 1;
        }
        return Ok(());
    }
    Err(format!(
        "a delivery was refused {RETRIES} times in a row; is the receiver failing?"
    ))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
