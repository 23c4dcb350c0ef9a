//! One reconcile run of one source: under the source's lease, read the
//! provider's events from the cursor (less an overlap) to now, all pages
//! first, then push each event the source maps, oldest first, through the
//! same ingest as a webhook delivery (`ingest::ingest_direct`), stored with
//! `origin = reconcile`; an event stored already (delivered, or recovered
//! by an earlier run) is a duplicate and changes nothing. The cursor moves
//! to the run's start only when the run completed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;

use super::feed::{Feed, Listed, Listing};
use super::registry::feed_for;
use crate::clock::Clock;
use crate::domain::{Movement, NormalisedEvent, Origin};
use crate::ingest::{RawDelivery, ingest_direct, sha256_hex};
use crate::provider_api::{Api, ApiError};
use crate::providers::{Delivery, HeaderPairs, Verified, mapped_types};
use crate::receive::storable_events;
use crate::source::{Reconcile, Source};
use crate::store::{RunEnd, Store, StoreError};

/// Each run reads again this much before where the last one completed:
/// providers make events visible slightly out of order.
pub const OVERLAP: Duration = Duration::from_secs(600);
/// A run's lease, renewed at least every third of it while the run reads
/// and applies: another instance takes over from a run that stopped (a
/// crash, a kill) within this.
const LEASE: Duration = Duration::from_secs(15);
/// The most pages of one type a run reads (a million events at Stripe's
/// 100 a page): past it, a narrower `--since` is asked for.
const MAX_PAGES: u32 = 10_000;

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
    let (Some(settings), Some(feed)) = (&source.reconcile, feed_for(source.provider.kind())) else {
        return Err(ReconcileError::NotConfigured(name.to_owned()));
    };
    let started_ms = store.database_now_ms().await?;
    let mut lease = Lease::new(store, name, request.owner);
    let read_through = match request.dry_run {
        // Read where the sweep would, without its lease.
        true => store
            .reconcile_runs()
            .await?
            .into_iter()
            .find(|run| run.source == name)
            .and_then(|run| run.read_through_ms),
        false => lease.take(true).await?,
    };
    let read_through = read_through.map(millis);
    let window_end = millis(started_ms);
    let from = window_start(request.since, read_through, settings, window_end);
    let mut summary = Summary {
        source: name.to_owned(),
        window_starts_at: from,
        window_ends_at: window_end,
        cursor: read_through,
        dry_run: request.dry_run,
        ..Summary::default()
    };
    let api = Api::new(
        &settings.api_base,
        &settings.api_key,
        settings
            .request_gap
            .unwrap_or_else(|| feed.gap(settings.api_key.expose())),
    )
    .map(|api| feed.prepare(api))
    .map_err(|error| api_error(source, error))?;
    let outcome = match list(&api, feed, source, from, &mut lease).await {
        Ok(listed) => apply_all(store, source, listed, request, &mut lease, &mut summary).await,
        Err(error) => Err(error),
    };
    if request.dry_run {
        return outcome.map(|()| summary);
    }
    // Complete: every event the provider had made visible when the run
    // started has been read, in the provider's clock (its first answer's
    // `Date`; the database's if it sent none). The cursor moves there only
    // if the window reached back to where the next run would read from: a
    // `--since` that starts later must not skip the stretch before it.
    let through = api
        .first_date()
        .map_or(started_ms, |at| at.timestamp_millis());
    let covers = request
        .since
        .is_none_or(|since| since <= window_start(None, read_through, settings, window_end));
    let why = outcome.as_ref().err().map(ToString::to_string);
    let end = RunEnd {
        source: name,
        owner: request.owner,
        now_ms: store.database_now_ms().await?,
        started_ms,
        outcome: why.as_deref().map_or(Ok(covers.then_some(through)), Err),
        recovered: i64::try_from(summary.recovered).unwrap_or(i64::MAX),
    };
    if !store.finish_reconcile(&end).await? {
        // The lease lapsed and another instance took it: what this run
        // stored stands (once per key), but its end is the other's to say.
        return Err(ReconcileError::Busy(name.to_owned()));
    }
    outcome?;
    if covers {
        summary.cursor = Some(millis(through));
    }
    Ok(summary)
}

fn api_error(source: &Source, error: ApiError) -> ReconcileError {
    ReconcileError::Api {
        source: source.name.as_str().to_owned(),
        error,
    }
}

/// The window's start: `--since`, else the cursor less the overlap, else
/// the look-back.
fn window_start(
    since: Option<DateTime<Utc>>,
    read_through: Option<DateTime<Utc>>,
    settings: &Reconcile,
    window_end: DateTime<Utc>,
) -> DateTime<Utc> {
    let back = |by: Duration| TimeDelta::from_std(by).unwrap_or(TimeDelta::MAX);
    match (since, read_through) {
        (Some(since), _) => since,
        (None, Some(through)) => through - back(OVERLAP),
        (None, None) => window_end - back(settings.lookback),
    }
}

/// A run's hold on its source: taken at the start, renewed while it reads
/// and applies (at least every third of its length), so that another
/// instance takes it only from a run that stopped.
struct Lease<'a> {
    store: &'a Store,
    source: &'a str,
    owner: &'a str,
    renewed: Instant,
}

impl<'a> Lease<'a> {
    fn new(store: &'a Store, source: &'a str, owner: &'a str) -> Self {
        Self {
            store,
            source,
            owner,
            renewed: Instant::now(),
        }
    }

    /// Takes or renews the lease (`force`: whenever asked, else only when a
    /// third of it has passed); the cursor it holds.
    async fn take(&mut self, force: bool) -> Result<Option<i64>, ReconcileError> {
        if !force && self.renewed.elapsed() < LEASE / 3 {
            return Ok(None);
        }
        let now_ms = self.store.database_now_ms().await?;
        let lease = self
            .store
            .take_reconcile_lease(self.source, self.owner, now_ms, lease_ms())
            .await?
            .ok_or_else(|| ReconcileError::Busy(self.source.to_owned()))?;
        self.renewed = Instant::now();
        Ok(lease.read_through_ms)
    }
}

/// Every page of every type the source maps, oldest first, each event
/// once. A page that cannot be read stops the run before anything is
/// written.
async fn list(
    api: &Api,
    feed: &dyn Feed,
    source: &Source,
    from: DateTime<Utc>,
    lease: &mut Lease<'_>,
) -> Result<Vec<Listed>, ReconcileError> {
    let mut types = mapped_types(source.provider.rules(), &source.mapping);
    types.sort_unstable();
    types.dedup();
    let types = feed.listings(types);
    let mut listed = Vec::new();
    for event_type in types {
        let mut after: Option<String> = None;
        // Every cursor of this listing so far: one seen again is a loop.
        let mut seen = std::collections::HashSet::new();
        for pages in 1.. {
            if pages > MAX_PAGES {
                return Err(api_error(
                    source,
                    ApiError::Malformed(format!(
                        "more than {MAX_PAGES} pages of {event_type}: narrow the window with --since"
                    )),
                ));
            }
            lease.take(false).await?;
            let listing = Listing {
                event_type,
                from_secs: from.timestamp(),
                after: after.as_deref(),
            };
            let page = feed
                .page(api, &listing)
                .await
                .map_err(|error| api_error(source, error))?;
            listed.extend(page.events);
            match page.next {
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(api_error(
                        source,
                        ApiError::Malformed("the next page is one already read".into()),
                    ));
                }
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    listed.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    listed.dedup_by(|a, b| a.id == b.id);
    Ok(listed)
}

/// Applies the listed events, oldest first.
async fn apply_all(
    store: &Store,
    source: &Source,
    listed: Vec<Listed>,
    request: &Request<'_>,
    lease: &mut Lease<'_>,
    summary: &mut Summary,
) -> Result<(), ReconcileError> {
    summary.listed = listed.len() as u64;
    for event in listed {
        if !request.dry_run {
            lease.take(false).await?;
        }
        apply(store, source, &event, request, summary).await?;
    }
    Ok(())
}

/// One listed event: mapped as a delivery of it would be; stored unless the
/// source maps nothing of it.
async fn apply(
    store: &Store,
    source: &Source,
    listed: &Listed,
    request: &Request<'_>,
    summary: &mut Summary,
) -> Result<(), ReconcileError> {
    let body = serde_json::to_vec(&listed.record).unwrap_or_default();
    let payload_sha256 = sha256_hex(&body);
    let received_at = request.clock.now();
    let events = {
        let header: Vec<(&str, &str)> = listed.header.into_iter().collect();
        let delivery = Delivery {
            headers: &HeaderPairs(&header),
            body: &body,
            received_at,
        };
        mapped(source, &delivery, &payload_sha256)
    };
    if events.iter().all(|e| matches!(e.movement, Movement::None)) {
        summary.not_mapped += 1;
        return Ok(());
    }
    // Stored already (delivered, or found by an earlier run; the overlap
    // is read again every run): a read, no write.
    let mut stored = 0;
    for event in &events {
        if store
            .intent_stored(&source.scope, event.event_id.as_str())
            .await?
        {
            stored += 1;
        }
    }
    if stored == events.len() || request.dry_run {
        summary.already_stored += stored as u64;
        summary.recovered += (events.len() - stored) as u64;
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
fn mapped(source: &Source, delivery: &Delivery<'_>, payload_sha256: &str) -> Vec<NormalisedEvent> {
    let verified = Verified {
        key_index: 0,
        timestamp: None,
        event_id: None,
    };
    storable_events(source, &verified, delivery, payload_sha256)
}

fn lease_ms() -> i64 {
    i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
