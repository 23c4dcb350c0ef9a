//! `GET /metrics` in the Prometheus text format (0.0.4), encoded by the
//! Prometheus project's own `prometheus-client`. Each scrape builds a fresh
//! registry: the counters as they stand, the long-lived histograms (shared,
//! not copied), and gauges read from the database for this scrape. Label
//! values are config names (sources, destinations) and fixed codes, never
//! request input.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Metrics;
use super::instruments::Labels;
use crate::domain::{HELD_STATUSES, HeldCount, OutboxStats, PoolUsage, Replication};

pub use prometheus_text::CONTENT_TYPE;

/// What the database says at scrape time.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub now: DateTime<Utc>,
    pub held: Vec<HeldCount>,
    /// One per configured destination.
    pub outbox: Vec<OutboxStats>,
    pub pool: PoolUsage,
    /// PostgreSQL's replication; `None` on SQLite.
    pub replication: Option<Replication>,
    /// The latest invariant check: when, and how many violations (`None`:
    /// it could not run).
    pub invariants: Option<(DateTime<Utc>, Option<usize>)>,
    /// The latest walk of the hash chains: when, and the chains it found
    /// broken and stopped at a row without a link (`None`: it could not
    /// run).
    pub chains: Option<(DateTime<Utc>, Option<ChainBreaks>)>,
    /// One per source that reconciles.
    pub reconcile: Vec<ReconcileFigures>,
}

/// What the latest walk of the hash chains found.
#[derive(Debug, Clone, Copy)]
pub struct ChainBreaks {
    /// Chains broken: a row edited, deleted, inserted or moved.
    pub broken: usize,
    /// Chains that stop at a row without a link (an older version's, until
    /// the backfill links it; or one written by hand).
    pub unlinked: usize,
}

/// A reconciling source's state at scrape time.
#[derive(Debug, Clone)]
pub struct ReconcileFigures {
    pub source: String,
    /// The last run that completed.
    pub last_success: Option<DateTime<Utc>>,
    /// The provider's retention (Stripe: 30 days): what is older than that
    /// before the cursor can no longer be read.
    pub retention: chrono::TimeDelta,
}

/// The whole exposition.
pub fn render(metrics: &Metrics, scrape: &Scrape) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    counters(&mut registry, metrics);
    histograms(&mut registry, metrics);
    held(&mut registry, scrape);
    outbox(&mut registry, metrics, scrape);
    pool(&mut registry, scrape.pool);
    replication(&mut registry, scrape.replication);
    invariants(&mut registry, scrape);
    chains(&mut registry, scrape);
    reconcile(&mut registry, metrics, scrape);
    let mut text = String::new();
    prometheus_text::encode(&mut text, &registry)?;
    Ok(text)
}

fn counters(registry: &mut Registry, metrics: &Metrics) {
    let counts = metrics.snapshot();
    let nested = [
        (
            "hookledger_deliveries",
            "Events stored from verified deliveries, by source and outcome",
            ["source", "outcome"],
            &counts.deliveries,
        ),
        (
            "hookledger_verification_failures",
            "Deliveries refused by signature verification, by source and reason",
            ["source", "reason"],
            &counts.verification_failures,
        ),
        (
            "hookledger_ordering_decisions",
            "Ordering decisions (late, parked, released, skipped), by source",
            ["source", "decision"],
            &counts.ordering,
        ),
    ];
    for (name, help, [outer, inner], map) in nested {
        let family = Family::<Labels, Counter>::default();
        for (first, by_second) in map {
            for (second, count) in by_second {
                family
                    .get_or_create(&vec![(outer, first.clone()), (inner, second.clone())])
                    .inc_by(*count);
            }
        }
        registry.register(name, help, family);
    }
    let flat: [(&str, &str, &str, &BTreeMap<String, u64>); 3] = [
        (
            "hookledger_connections_refused",
            "Connections closed at the gate (refused, or idle closed for room) or ended by a fault, by reason",
            "reason",
            &counts.connections,
        ),
        (
            "hookledger_metrics_auth_refusals",
            "GET /metrics refused: a wrong or no token, or throttled",
            "outcome",
            &counts.metrics_auth,
        ),
        (
            "hookledger_admin_sign_in_refusals",
            "Admin sign-ins refused: a wrong token, or throttled",
            "outcome",
            &counts.sign_in,
        ),
    ];
    for (name, help, key, map) in flat {
        let family = Family::<Labels, Counter>::default();
        for (value, count) in map {
            family
                .get_or_create(&vec![(key, value.clone())])
                .inc_by(*count);
        }
        registry.register(name, help, family);
    }
}

fn histograms(registry: &mut Registry, metrics: &Metrics) {
    let instruments = metrics.instruments();
    registry.register(
        "hookledger_webhook_request_duration_seconds",
        "Webhook requests to a configured source, from routing to the answer",
        instruments.request.clone(),
    );
    registry.register(
        "hookledger_transaction_duration_seconds",
        "A delivery's events from the store's hands to the commit (SQLite: group wait included)",
        instruments.transaction.clone(),
    );
}

fn gauges(
    registry: &mut Registry,
    name: &str,
    help: &str,
    values: impl IntoIterator<Item = (Labels, i64)>,
) {
    let family = Family::<Labels, Gauge>::default();
    for (labels, value) in values {
        family.get_or_create(&labels).set(value);
    }
    registry.register(name, help, family);
}

fn held(registry: &mut Registry, scrape: &Scrape) {
    // Every held status is listed, at 0 when none waits: an alert on the
    // series must not see it vanish.
    let of = |status: &str| scrape.held.iter().find(|h| h.status == status);
    let labels = |status: &str| vec![("status", status.to_owned())];
    gauges(
        registry,
        "hookledger_held_events",
        "Events waiting for a delivery or an operator, by status",
        HELD_STATUSES.map(|status| {
            let status = status.as_str();
            (labels(status), of(status).map_or(0, |h| h.count))
        }),
    );
    gauges(
        registry,
        "hookledger_held_oldest_age_seconds",
        "Age of the oldest held event, by status (0 when none is held)",
        HELD_STATUSES.map(|status| {
            let status = status.as_str();
            let age = of(status).map_or(0, |h| age_secs(scrape.now, h.oldest_received_at));
            (labels(status), age)
        }),
    );
}

/// One outbox gauge's value for a destination at scrape time.
type Figure = fn(&OutboxStats, DateTime<Utc>) -> i64;

fn outbox(registry: &mut Registry, metrics: &Metrics, scrape: &Scrape) {
    let each = |value: Figure| {
        scrape
            .outbox
            .iter()
            .map(move |stats| {
                let labels = vec![("destination", stats.destination.clone())];
                (labels, value(stats, scrape.now))
            })
            .collect::<Vec<_>>()
    };
    let figures: [(&str, &str, Figure); 5] = [
        (
            "hookledger_outbox_pending",
            "Messages not yet acknowledged by the destination (in flight included)",
            |s, _| s.pending,
        ),
        (
            "hookledger_outbox_in_flight",
            "Messages a relay is sending now",
            |s, _| s.in_flight,
        ),
        (
            "hookledger_outbox_oldest_pending_seconds",
            "Age of the oldest message not yet acknowledged (0 when none)",
            |s, now| s.oldest_pending_at.map_or(0, |at| age_secs(now, at)),
        ),
        (
            "hookledger_outbox_dead_letters",
            "Dead letters kept now, waiting for a replay",
            |s, _| s.dead,
        ),
        (
            "hookledger_outbox_delivered_last_hour",
            "Messages acknowledged in the last hour, by any instance",
            |s, _| s.delivered_last_hour,
        ),
    ];
    for (name, help, value) in figures {
        gauges(registry, name, help, each(value));
    }
    let relays = metrics.outbox();
    registry.register(
        "hookledger_outbox_delivered",
        "Messages this process's relays saw acknowledged and recorded",
        relays.delivered,
    );
    registry.register(
        "hookledger_outbox_dead",
        "Messages this process's relays dead-lettered after their last attempt",
        relays.dead,
    );
    registry.register(
        "hookledger_outbox_delivery_duration_seconds",
        "One send's time to the destination's answer, acknowledged or not",
        relays.send,
    );
    registry.register(
        "hookledger_outbox_delivery_lag_seconds",
        "A delivered message's time from its posting to its acknowledgement being recorded, retries included; a replayed message's from its posting too",
        relays.lag,
    );
}

fn pool(registry: &mut Registry, usage: PoolUsage) {
    let in_use = usage.open.saturating_sub(usage.idle);
    gauges(
        registry,
        "hookledger_db_pool_connections",
        "Database connections of this process's pool, by state",
        [
            (vec![("state", "idle".to_owned())], i64::from(usage.idle)),
            (vec![("state", "in_use".to_owned())], i64::from(in_use)),
        ],
    );
    gauges(
        registry,
        "hookledger_db_pool_max_connections",
        "The pool's configured bound",
        [(Vec::new(), i64::from(usage.max))],
    );
}

/// PostgreSQL only: whether a commit is on a standby before it is answered.
fn replication(registry: &mut Registry, replication: Option<Replication>) {
    let Some(replication) = replication else {
        return;
    };
    gauges(
        registry,
        "hookledger_database_synchronous_commit",
        "PostgreSQL: 1 if every commit waits for a synchronous standby (synchronous_standby_names set, synchronous_commit on, remote_write or remote_apply), 0 if commits are answered before any standby has them",
        [(Vec::new(), i64::from(replication.synchronous))],
    );
    if let Some(standbys) = replication.standbys {
        gauges(
            registry,
            "hookledger_database_synchronous_standbys",
            "PostgreSQL: synchronous or quorum standbys streaming now (pg_stat_replication; absent where the role lacks pg_monitor)",
            [(Vec::new(), standbys)],
        );
    }
}

fn invariants(registry: &mut Registry, scrape: &Scrape) {
    let Some((at, violations)) = scrape.invariants else {
        return;
    };
    gauges(
        registry,
        "hookledger_invariant_violations",
        "Ledger invariant violations at the latest check (-1: it could not run)",
        [(Vec::new(), violations.map_or(-1, |n| n as i64))],
    );
    gauges(
        registry,
        "hookledger_invariant_check_age_seconds",
        "Time since the latest invariant check",
        [(Vec::new(), age_secs(scrape.now, at))],
    );
}

fn chains(registry: &mut Registry, scrape: &Scrape) {
    let Some((at, found)) = scrape.chains else {
        return;
    };
    let count = |n: fn(&ChainBreaks) -> usize| found.as_ref().map_or(-1, |f| n(f) as i64);
    gauges(
        registry,
        "hookledger_chain_breaks",
        "Hash chains found broken (a row edited, deleted, inserted or moved) at the latest walk (-1: it could not run)",
        [(Vec::new(), count(|f| f.broken))],
    );
    gauges(
        registry,
        "hookledger_chain_unlinked",
        "Hash chains that stop at a row without a link at the latest walk (-1: it could not run)",
        [(Vec::new(), count(|f| f.unlinked))],
    );
    gauges(
        registry,
        "hookledger_chain_walk_age_seconds",
        "Time since the latest walk of the hash chains",
        [(Vec::new(), age_secs(scrape.now, at))],
    );
}

fn age_secs(now: DateTime<Utc>, at: DateTime<Utc>) -> i64 {
    (now - at).num_seconds().max(0)
}

/// Reconcile: what runs recovered and why they stopped (counters, from
/// this process), and per source the last complete run and how much of the
/// provider's retention window is left before events missed since then
/// can no longer be read (from the database: any instance's runs).
fn reconcile(registry: &mut Registry, metrics: &Metrics, scrape: &Scrape) {
    let counts = metrics.snapshot();
    let recovered = Family::<Labels, Counter>::default();
    let errors = Family::<Labels, Counter>::default();
    for (source, by_key) in &counts.reconcile {
        for (key, count) in by_key {
            match key.as_str() {
                "recovered" => recovered.get_or_create(&vec![("source", source.clone())]),
                reason => errors.get_or_create(&vec![
                    ("source", source.clone()),
                    ("reason", reason.to_owned()),
                ]),
            }
            .inc_by(*count);
        }
    }
    registry.register(
        "hookledger_reconcile_recovered",
        "Events a reconcile run found in the provider's records and stored, by source",
        recovered,
    );
    registry.register(
        "hookledger_reconcile_errors",
        "Reconcile runs that stopped, by source and reason",
        errors,
    );
    let labels = |figures: &ReconcileFigures| vec![("source", figures.source.clone())];
    gauges(
        registry,
        "hookledger_reconcile_last_success_timestamp_seconds",
        "When the last complete reconcile run of the source started (0: never)",
        scrape.reconcile.iter().map(|figures| {
            let at = figures.last_success.map_or(0, |at| at.timestamp());
            (labels(figures), at)
        }),
    );
    gauges(
        registry,
        "hookledger_reconcile_window_left_seconds",
        "How long until events missed since the last complete run leave the provider's records",
        scrape.reconcile.iter().map(|figures| {
            let left = figures.last_success.map_or(0, |at| {
                (at + figures.retention - scrape.now).num_seconds().max(0)
            });
            (labels(figures), left)
        }),
    );
}
