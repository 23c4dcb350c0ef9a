//! The database's ceiling: the same deliveries, verified and normalised
//! beforehand, stored by the same `ingest` (the store's own statements, on
//! the same schema and pool) from as many concurrent tasks as the HTTP
//! phase had connections, with no HTTP, no signature check and no parsing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;

use super::measure::PhaseResult;
use super::plan::Planned;
use crate::domain::NormalisedEvent;
use crate::ingest::{Ingestor, RawDelivery};
use crate::providers::{Delivery, HeaderPairs, RecordingHeaders};
use crate::receive::{sha256_hex, storable_events, verify};
use crate::source::Source;

/// A delivery as `ingest` takes it.
pub(super) struct Prepared {
    pub events: Vec<NormalisedEvent>,
    pub body: Vec<u8>,
    pub sha256: String,
    /// What the server stores with it: the headers read, the signed time.
    pub signature_headers: Option<String>,
    pub signed_at: Option<i64>,
    pub signed_event_id: Option<String>,
}

pub(super) fn prepare(source: &Source, planned: &Planned) -> Result<Prepared, String> {
    let headers: Vec<(&str, &str)> = planned
        .signed
        .headers
        .iter()
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
    let headers = HeaderPairs(&headers);
    let recorded = RecordingHeaders::new(&headers);
    let now = Utc::now();
    let delivery = Delivery {
        headers: &recorded,
        body: &planned.signed.body,
        received_at: now,
    };
    let verified =
        verify(source, &delivery).map_err(|e| format!("a bench delivery does not verify: {e}"))?;
    let sha256 = sha256_hex(&planned.signed.body);
    Ok(Prepared {
        events: storable_events(source, &verified, &delivery, &sha256),
        body: planned.signed.body.clone(),
        sha256,
        signature_headers: recorded.to_json(),
        signed_at: verified.timestamp,
        signed_event_id: verified.event_id.clone(),
    })
}

/// Stores `planned` with `concurrency` tasks for at most `duration`;
/// returns the figures and the indexes of the new events stored.
pub async fn run(
    ingestor: &Ingestor,
    source: Arc<Source>,
    planned: &[Planned],
    concurrency: usize,
    duration: Duration,
) -> Result<(PhaseResult, Vec<usize>), String> {
    let prepared = planned
        .iter()
        .map(|p| prepare(&source, p).map(|ready| (ready, p.duplicate)))
        .collect::<Result<Vec<_>, _>>()?;
    let prepared = Arc::new(prepared);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = super::measure::process_cpu(std::process::id());
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (ingestor, source, prepared, next) = (
            ingestor.clone(),
            source.clone(),
            prepared.clone(),
            next.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut result = PhaseResult::default();
            let mut accepted = Vec::new();
            while Instant::now() < deadline {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some((ready, duplicate)) = prepared.get(index) else {
                    break;
                };
                let raw = RawDelivery {
                    payload: &ready.body,
                    payload_sha256: &ready.sha256,
                    received_at: Utc::now(),
                    signature_headers: ready.signature_headers.as_deref(),
                    signed_at: ready.signed_at,
                    signed_event_id: ready.signed_event_id.as_deref(),
                    origin: crate::domain::Origin::Webhook,
                };
                let began = Instant::now();
                let outcomes = loop {
                    match ingestor.ingest(&source, &ready.events, &raw).await {
                        Ok(outcomes) => break outcomes,
                        // Transient (busy, deadlock): retried as a sender would.
                        Err(_) => result.refused += 1,
                    }
                    if result.refused > 10_000 {
                        return Err("the database refuses every write".to_owned());
                    }
                };
                let micros = began.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                result.latencies_us.push(micros);
                if outcomes.iter().any(|o| o.duplicate) != *duplicate {
                    result.misjudged += 1;
                }
                if *duplicate {
                    result.duplicates += 1;
                } else {
                    result.new_events += 1;
                    accepted.push(index);
                }
            }
            Ok::<_, String>((result, accepted))
        }));
    }
    let mut total = PhaseResult::default();
    let mut accepted = Vec::new();
    for task in tasks {
        let (result, stored) = task.await.map_err(|e| e.to_string())??;
        total.latencies_us.extend(result.latencies_us);
        total.new_events += result.new_events;
        total.duplicates += result.duplicates;
        total.refused += result.refused;
        total.misjudged += result.misjudged;
        accepted.extend(stored);
    }
    total.elapsed = started.elapsed();
    total.answered = total.new_events + total.duplicates;
    if let (Some(before), Some(after)) =
        (cpu_before, super::measure::process_cpu(std::process::id()))
    {
        total.server_cpu = after.saturating_sub(before);
    }
    Ok((total, accepted))
}
