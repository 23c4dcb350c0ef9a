//! One reconcile run of one source: under the source's lease, read the
//! provider's events from the cursor (less an overlap) to now, all pages
//! first, then push each event the source maps, oldest first, through the
//! same ingest as a webhook delivery (`ingest::ingest_direct`), stored with
//! `origin = reconcile`; an event stored already (delivered, or recovered
//! by an earlier run) is a duplicate and changes nothing. The cursor moves
//! to the run's start only when the run completed.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use serde_json::Value;

use super::api::{Api, ApiError};
use super::feed::{Feed, feed_for};
use crate::clock::Clock;
use crate::domain::{Movement, NormalisedEvent, Origin};
use crate::ingest::{RawDelivery, ingest_direct, sha256_hex};
use crate::providers::{Delivery, HeaderPairs, Verified};
use crate::receive::storable_events;
use crate::source::{Reconcile, Source};
use crate::store::{RunEnd, Store, StoreError};

/// Each run reads again this much before where the last one completed:
/// providers make events visible slightly out of order.
pub const OVERLAP: Duration = Duration::from_secs(600);
/// A run's lease; renewed with every page read.
const LEASE: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("source {0} has no [sources.reconcile] in the config")]
    NotConfigured(String),
    #[error("source {0} is being reconciled by another instance now")]
    Busy(String),
    #[error("source {source}: {error}")]
    Api {
        source: String,
        #[source]
        error: ApiError,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ReconcileError {
    /// The metrics label.
    pub fn reason(&self) -> &'static str {
        match self {
            ReconcileError::NotConfigured(_) => "not_configured",
            ReconcileError::Busy(_) => "busy",
            ReconcileError::Api { error, .. } => error.reason(),
            ReconcileError::Store(_) => "database",
        }
    }
}

/// What a run is asked.
pub struct Request<'a> {
    /// Who holds the lease (this instance).
    pub owner: &'a str,
    /// Read from here instead of the cursor.
    pub since: Option<DateTime<Utc>>,
    /// List and count, write nothing (no lease, no cursor).
    pub dry_run: bool,
    /// When each recovered event counts as received.
    pub clock: &'a dyn Clock,
}

/// What a run found; `hookledger reconcile --json` prints it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub source: String,
    /// Events the provider listed in the window.
    pub listed: u64,
    /// Of a type the source does not map: not stored.
    pub not_mapped: u64,
    /// Stored already (delivered, or recovered before).
    pub already_stored: u64,
    /// Stored by this run (for a dry run: would be).
    pub recovered: u64,
    /// The recovered events' statuses.
    pub statuses: BTreeMap<String, u64>,
    /// The window read.
    pub window_starts_at: DateTime<Utc>,
    pub window_ends_at: DateTime<Utc>,
    /// Where the next run reads from (less the overlap): the window's end
    /// once complete; unchanged by a dry run.
    pub cursor: Option<DateTime<Utc>>,
    pub dry_run: bool,
}

/// Reconciles `source` once.
pub async fn run(
    store: &Store,
    source: &Source,
    request: &Request<'_>,
) -> Result<Summary, ReconcileError> {
    let name = source.name.as_str();
    let settings = source
        .reconcile
        .as_ref()
        .ok_or_else(|| ReconcileError::NotConfigured(name.to_owned()))?;
    let feed = feed_for(source.provider.kind())
        .ok_or_else(|| ReconcileError::NotConfigured(name.to_owned()))?;
    let now_ms = store.database_now_ms().await?;
    let window_end = millis(now_ms);
    let read_through = match request.dry_run {
        true => None,
        false => {
            let lease = store
                .take_reconcile_lease(name, request.owner, now_ms, lease_ms())
                .await?
                .ok_or_else(|| ReconcileError::Busy(name.to_owned()))?;
            lease.read_through_ms.map(millis)
        }
    };
    let from = window_start(request.since, read_through, settings, window_end);
    let mut summary = Summary {
        source: name.to_owned(),
        window_starts_at: from,
        window_ends_at: window_end,
        cursor: read_through,
        dry_run: request.dry_run,
        ..Summary::default()
    };
    let outcome = read_and_apply(store, source, feed, settings, request, &mut summary).await;
    if request.dry_run {
        return outcome.map(|()| summary);
    }
    let why = outcome.as_ref().err().map(ToString::to_string);
    let end = RunEnd {
        source: name,
        owner: request.owner,
        now_ms: store.database_now_ms().await?,
        // Complete: every event visible at the run's start has been read.
        outcome: why.as_deref().map_or(Ok(now_ms), Err),
        recovered: i64::try_from(summary.recovered).unwrap_or(i64::MAX),
    };
    store.finish_reconcile(&end).await?;
    outcome?;
    summary.cursor = Some(window_end);
    Ok(summary)
}

/// The window's start: `--since`, else the cursor less the overlap, else
/// the look-back.
fn window_start(
    since: Option<DateTime<Utc>>,
    read_through: Option<DateTime<Utc>>,
    settings: &Reconcile,
    window_end: DateTime<Utc>,
) -> DateTime<Utc> {
    let back = |by: Duration| window_end - TimeDelta::from_std(by).unwrap_or(TimeDelta::MAX);
    match (since, read_through) {
        (Some(since), _) => since,
        (None, Some(through)) => {
            through - TimeDelta::from_std(OVERLAP).unwrap_or(TimeDelta::zero())
        }
        (None, None) => back(settings.lookback),
    }
}

/// Reads every page of the window, then applies what the source maps,
/// oldest first. A page that cannot be read stops the run before anything
/// is written.
async fn read_and_apply(
    store: &Store,
    source: &Source,
    feed: &dyn Feed,
    settings: &Reconcile,
    request: &Request<'_>,
    summary: &mut Summary,
) -> Result<(), ReconcileError> {
    let api_error = |error| ReconcileError::Api {
        source: source.name.as_str().to_owned(),
        error,
    };
    let api = Api::new(
        &settings.api_base,
        &settings.api_key,
        feed.requests_per_second(),
    )
    .map_err(api_error)?;
    let mut listed = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = feed
            .page(&api, summary.window_starts_at.timestamp(), after.as_deref())
            .await
            .map_err(api_error)?;
        listed.extend(page.events);
        if !request.dry_run {
            let now_ms = store.database_now_ms().await?;
            let name = source.name.as_str();
            store
                .take_reconcile_lease(name, request.owner, now_ms, lease_ms())
                .await?
                .ok_or_else(|| ReconcileError::Busy(name.to_owned()))?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    listed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    listed.dedup_by(|a, b| a.1 == b.1);
    summary.listed = listed.len() as u64;
    for (_, _, record) in listed {
        apply(store, source, &record, request, summary).await?;
    }
    Ok(())
}

/// One listed event: mapped as a delivery of it would be; stored unless the
/// source maps nothing of it.
async fn apply(
    store: &Store,
    source: &Source,
    record: &Value,
    request: &Request<'_>,
    summary: &mut Summary,
) -> Result<(), ReconcileError> {
    let body = serde_json::to_vec(record).unwrap_or_default();
    let payload_sha256 = sha256_hex(&body);
    let received_at = request.clock.now();
    let events = mapped(source, &body, &payload_sha256, received_at);
    if events.iter().all(|e| matches!(e.movement, Movement::None)) {
        summary.not_mapped += 1;
        return Ok(());
    }
    if request.dry_run {
        for event in &events {
            let stored = store
                .event(source.name.as_str(), event.event_id.as_str())
                .await?;
            match stored {
                Some(_) => summary.already_stored += 1,
                None => summary.recovered += 1,
            }
        }
        return Ok(());
    }
    let raw = RawDelivery {
        payload: &body,
        payload_sha256: &payload_sha256,
        received_at,
        signature_headers: None,
        signed_at: None,
        signed_event_id: None,
        origin: Origin::Reconcile,
    };
    for outcome in ingest_direct(store, source, &events, &raw).await? {
        if outcome.duplicate {
            summary.already_stored += 1;
        } else {
            summary.recovered += 1;
            *summary
                .statuses
                .entry(outcome.status.as_str().to_owned())
                .or_default() += 1;
        }
    }
    Ok(())
}

/// The events of `body` as the source maps a delivery of it. Fetched over
/// TLS from the provider with the source's own key: there is no webhook
/// signature to check.
fn mapped(
    source: &Source,
    body: &[u8],
    payload_sha256: &str,
    received_at: DateTime<Utc>,
) -> Vec<NormalisedEvent> {
    let delivery = Delivery {
        headers: &HeaderPairs(&[]),
        body,
        received_at,
    };
    let verified = Verified {
        key_index: 0,
        timestamp: None,
        event_id: None,
    };
    storable_events(source, &verified, &delivery, payload_sha256)
}

fn lease_ms() -> i64 {
    i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
