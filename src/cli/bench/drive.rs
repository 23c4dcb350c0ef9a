//! Drives a running receiver with pre-signed deliveries over keep-alive
//! connections, as fast as it answers, for a bounded time. Like wrk, it
//! writes each request's bytes, prepared before the clock starts, straight
//! to a TCP stream and reads the answer's head and `content-length` body:
//! the load generator shares the machine's cores with the server and the
//! database, so the less CPU it takes per request, the more the figures
//! say about the server. (An HTTP client library took ~4x the CPU per
//! request; BENCHMARKS.md.)
//!
//! Closed loop by default; with a `Pace`, open loop: the i-th delivery is
//! due i/rate seconds after the start, and its latency counts from then.
//! A thread of its own releases each delivery at its due time (the
//! kernel's timer, some 60 µs late here), and the first free sender takes
//! it: tokio's timer, which the senders slept on before, rounds every wake
//! up to its next millisecond, which put 0.5-1 ms of the generator's own in
//! every open-loop latency (BENCHMARKS, 2026-12-06).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

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

/// An open loop's schedule: `per_second` deliveries due each second from
/// `started`.
#[derive(Clone, Copy)]
struct Pace {
    started: Instant,
    per_second: u64,
}

impl Pace {
    /// When the `index`-th delivery is due (integer nanoseconds: exact for
    /// any rate, no drift over a long run).
    fn due(&self, index: usize) -> Instant {
        let nanos = index as u128 * 1_000_000_000 / u128::from(self.per_second);
        self.started + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// Where the deliveries go: `host:port` and the path.
pub struct Target<'a> {
    pub address: &'a str,
    pub path: &'a str,
}

/// Sends `planned` over `connections` connections until all are answered or
/// `duration` has passed, as fast as answered or, with `rate`, at that many
/// per second; returns the figures and the indexes of the new events
/// answered 200.
pub async fn drive(
    target: &Target<'_>,
    planned: Arc<Vec<Planned>>,
    (connections, rate): (usize, Option<u64>),
    duration: Duration,
) -> Result<(PhaseResult, Vec<usize>), String> {
    let requests: Arc<Vec<Vec<u8>>> =
        Arc::new(planned.iter().map(|p| request_bytes(target, p)).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let pace = rate.map(|per_second| Pace {
        started,
        per_second,
    });
    let released = pace.map(|pace| release(pace, planned.len(), deadline));
    let mut senders = Vec::with_capacity(connections);
    for _ in 0..connections {
        let (planned, requests, next) = (planned.clone(), requests.clone(), next.clone());
        let released = released.clone();
        let address = target.address.to_owned();
        senders.push(tokio::spawn(async move {
            let mut connection = Connection::new(address);
            let mut seen = Seen::default();
            while Instant::now() < deadline {
                if let Some(released) = &released {
                    let Ok(permit) = released.permits.acquire().await else {
                        break;
                    };
                    permit.forget();
                }
                let index = next.fetch_add(1, Ordering::SeqCst);
                if released
                    .as_ref()
                    .is_some_and(|released| index >= released.end.load(Ordering::SeqCst))
                {
                    break;
                }
                let Some(delivery) = planned.get(index) else {
                    break;
                };
                let due = pace.map(|pace| pace.due(index));
                send(&mut connection, &requests[index], delivery, &mut seen, due).await?;
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

/// The open loop's schedule, released: a permit for each delivery at its
/// due time.
struct Released {
    permits: Semaphore,
    /// How many were released in all, once the schedule has ended (until
    /// then `usize::MAX`); a sender given an index past it stops.
    end: AtomicUsize,
}

/// Releases the deliveries of `pace`, one permit each at its due time,
/// from a thread of its own, until `planned` are released or the next is
/// due after `deadline`; then wakes every sender still waiting, to stop.
/// Senders take permits in the order they asked (tokio's semaphore is
/// fair), each then the next index; one released but not yet taken when
/// the schedule ends is still sent.
fn release(pace: Pace, planned: usize, deadline: Instant) -> Arc<Released> {
    let released = Arc::new(Released {
        permits: Semaphore::new(0),
        end: AtomicUsize::new(usize::MAX),
    });
    let schedule = released.clone();
    std::thread::spawn(move || {
        let mut count = 0;
        while count < planned && pace.due(count) < deadline {
            std::thread::sleep(pace.due(count).saturating_duration_since(Instant::now()));
            schedule.permits.add_permits(1);
            count += 1;
        }
        schedule.end.store(count, Ordering::SeqCst);
        schedule.permits.add_permits(Semaphore::MAX_PERMITS / 2);
    });
    released
}

/// The whole HTTP/1.1 request for one delivery.
fn request_bytes(target: &Target<'_>, planned: &Planned) -> Vec<u8> {
    let body = &planned.signed.body;
    let mut head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n",
        target.path,
        target.address,
        body.len()
    );
    for (name, value) in &planned.signed.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    [head.as_bytes(), body].concat()
}

/// Sends one delivery until it is answered 2xx. Its latency counts from
/// `due` (open loop: retries included), else from the answered attempt.
async fn send(
    connection: &mut Connection,
    request: &[u8],
    delivery: &Planned,
    seen: &mut Seen,
    due: Option<Instant>,
) -> Result<(), String> {
    for _ in 0..RETRIES {
        let began = due.unwrap_or_else(Instant::now);
        let Some(answer) = connection.exchange(request).await else {
            // The server closed the connection (a bound, a restart): send
            // it again on a new one, as a provider would.
            seen.refused += 1;
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        if !(200..300).contains(&answer.status) {
            seen.refused += 1;
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        }
        let micros = began.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
        seen.latencies_us.push(micros);
        let said_duplicate = contains(&answer.body, b"\"duplicate\":true");
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

struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// One keep-alive connection, opened again when the server closes it.
struct Connection {
    address: String,
    stream: Option<TcpStream>,
    buffer: Vec<u8>,
}

impl Connection {
    fn new(address: String) -> Self {
        Self {
            address,
            stream: None,
            buffer: Vec::with_capacity(4096),
        }
    }

    /// Writes the request and reads its answer; `None` (and the connection
    /// dropped) if either fails.
    async fn exchange(&mut self, request: &[u8]) -> Option<Answer> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(&self.address).await.ok()?;
            stream.set_nodelay(true).ok()?;
            self.stream = Some(stream);
        }
        let answer = self.try_exchange(request).await;
        if answer.as_ref().is_none_or(|(_, close)| *close) {
            self.stream = None;
        }
        answer.map(|(answer, _)| answer)
    }

    async fn try_exchange(&mut self, request: &[u8]) -> Option<(Answer, bool)> {
        let stream = self.stream.as_mut()?;
        stream.write_all(request).await.ok()?;
        self.buffer.clear();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(at) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        };
        let head = std::str::from_utf8(&self.buffer[..end]).ok()?;
        let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
        let length: usize = super::sink::header(head, "content-length")?.parse().ok()?;
        let close = super::sink::header(head, "connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        while self.buffer.len() < end + length {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
        let body = self.buffer[end..end + length].to_vec();
        Some((Answer { status, body }, close))
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_loop_schedule_is_exact_over_a_long_run() {
        let started = Instant::now();
        let pace = Pace {
            started,
            per_second: 3,
        };
        assert_eq!(pace.due(0), started);
        // A third of a second, to the nanosecond, however far the run goes.
        assert_eq!(pace.due(1) - started, Duration::from_nanos(333_333_333));
        assert_eq!(pace.due(3) - started, Duration::from_secs(1));
        let hour = 3 * 3_600;
        assert_eq!(
            pace.due(hour + 2) - started,
            Duration::from_nanos(3_600_666_666_666)
        );
    }
}
