//! In-process counters: deliveries by source and outcome, verification
//! failures by source and reason, ordering decisions by source; and the
//! latency histograms beside them. Exposed on the admin API and page, and
//! to Prometheus by [`super::prometheus`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use super::instruments::{Instruments, OutboxInstruments};
use super::source_stats::{SourceFigures, SourceStats};
use super::timeline::{OUTCOMES, Timeline, outcome_of};

#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<Counters>,
    instruments: Instruments,
    timeline: Mutex<Timeline>,
    sources: Mutex<SourceStats>,
}

#[derive(Debug, Default, Clone, Serialize, utoipa::ToSchema)]
pub struct Counters {
    /// source -> outcome (`applied`, `duplicate`, ...) -> count.
    pub deliveries: BTreeMap<String, BTreeMap<String, u64>>,
    /// source -> reason code -> count.
    pub verification_failures: BTreeMap<String, BTreeMap<String, u64>>,
    /// source -> ordering counter -> count: `late_credit_applied`,
    /// `late_credit_held`, `late_debit_applied`, `late_debit_held`, `parked`,
    /// `released` (parked events applied), `skipped` (numbers an operator
    /// skipped), `unmatched` (a reversal before its payment),
    /// `duplicate_effect` (a payment credited already).
    pub ordering: BTreeMap<String, BTreeMap<String, u64>>,
    /// Connections closed unserved at the gate, or ended by a fault:
    /// `refused_full` (the `max_connections` bound), `refused_per_address`,
    /// `closed_idle_for_room` (an idle kept-alive connection closed to admit
    /// another), `malformed_request`, `io_error`, ... (see
    /// `http::connection`).
    pub connections: BTreeMap<String, u64>,
    /// Admin sign-ins (bearer or form): `failed` (a wrong token),
    /// `throttled` (refused 429 while the address waits).
    pub sign_in: BTreeMap<String, u64>,
    /// `GET /metrics` with a wrong or no token: `failed`, `throttled`.
    pub metrics_auth: BTreeMap<String, u64>,
    /// source -> events a reconcile run recovered (`recovered`) and runs
    /// that stopped, by reason (`refused`, `network`, `rate_limited`,
    /// `malformed`, `provider_error`, `busy`, `database`).
    pub reconcile: BTreeMap<String, BTreeMap<String, u64>>,
}

fn bump(map: &mut BTreeMap<String, BTreeMap<String, u64>>, source: &str, key: &str, by: u64) {
    *map.entry(source.to_owned())
        .or_default()
        .entry(key.to_owned())
        .or_default() += by;
}

impl Metrics {
    pub fn delivery(&self, source: &str, outcome: &str) {
        bump(&mut self.lock().deliveries, source, outcome, 1);
    }

    pub fn verification_failure(&self, source: &str, reason: &str) {
        bump(&mut self.lock().verification_failures, source, reason, 1);
    }

    pub fn ordering(&self, source: &str, counter: &str, by: u64) {
        if by > 0 {
            bump(&mut self.lock().ordering, source, counter, by);
        }
    }

    pub fn connection(&self, outcome: &str) {
        *self
            .lock()
            .connections
            .entry(outcome.to_owned())
            .or_default() += 1;
    }

    pub fn sign_in(&self, outcome: &str) {
        *self.lock().sign_in.entry(outcome.to_owned()).or_default() += 1;
    }

    /// A reconcile run of `source`: what it recovered, or why it stopped.
    pub fn reconcile(&self, source: &str, outcome: Result<u64, &str>) {
        let mut counters = self.lock();
        match outcome {
            Ok(recovered) => bump(&mut counters.reconcile, source, "recovered", recovered),
            Err(reason) => bump(&mut counters.reconcile, source, reason, 1),
        }
    }

    pub fn metrics_auth(&self, outcome: &str) {
        *self
            .lock()
            .metrics_auth
            .entry(outcome.to_owned())
            .or_default() += 1;
    }

    /// How long a webhook request to a configured source took, from its
    /// route to its answer.
    pub fn request_seconds(&self, source: &str, seconds: f64) {
        self.instruments.request(source, seconds);
    }

    /// How long a delivery's events took to be stored, from handing them to
    /// the store to the commit (on SQLite, the wait for the group included).
    pub fn transaction_seconds(&self, seconds: f64) {
        self.instruments.transaction(seconds);
    }

    /// What the outbox relays of this process record.
    pub fn outbox(&self) -> OutboxInstruments {
        self.instruments.outbox.clone()
    }

    pub(super) fn instruments(&self) -> &Instruments {
        &self.instruments
    }

    /// One delivery's outcome (or a failed verification) at `at`, for the
    /// dashboard's chart.
    pub fn at_minute(&self, at: chrono::DateTime<chrono::Utc>, outcome: &str) {
        self.timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(at, outcome_of(outcome));
    }

    /// Per minute for the last `minutes` up to `now`, oldest first.
    pub fn per_minute(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        minutes: usize,
    ) -> Vec<[u32; OUTCOMES.len()]> {
        self.timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last(now, minutes)
    }

    /// A delivery `source` verified with the key at `key_index`.
    pub fn verified(
        &self,
        source: &str,
        at: chrono::DateTime<chrono::Utc>,
        key_index: usize,
        signed_at: Option<i64>,
    ) {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .verified(source, at, key_index, signed_at);
    }

    /// A delivery to `source` that failed verification.
    pub fn failed(&self, source: &str, at: chrono::DateTime<chrono::Utc>) {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failed(source, at);
    }

    /// The dashboard's per-source figures, for the configured `sources`.
    pub fn source_figures(
        &self,
        sources: &[&str],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Vec<SourceFigures> {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .figures(sources, now)
    }

    pub fn snapshot(&self) -> Counters {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        // A panic while holding this lock leaves counts that are still valid.
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}
