//! The histograms and counters that Prometheus reads as they are (latency
//! distributions, the outbox relays' sends). Each label value is a name
//! from the config (a source, a destination), never request input.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

/// A metric's labels: fixed keys, values from the config.
pub type Labels = Vec<(&'static str, String)>;

type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Seconds, 1 ms to 10 s: a delivery is one verification and one short
/// transaction; providers give up after 10-30 s.
const REQUEST_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Seconds, 5 ms to 30 s: a destination's answer, bounded by its timeout.
const SEND_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Seconds, 50 ms to 7 days: from a posting to its message's recorded
/// acknowledgement, at once or after the retries of a destination that was
/// down (the default 25 attempts wait about 2.6 days in all, at most 5.3).
const LAG_BUCKETS: [f64; 17] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0,
    259200.0, 604800.0,
];

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

fn send_histogram() -> Histogram {
    Histogram::new(SEND_BUCKETS)
}

fn lag_histogram() -> Histogram {
    Histogram::new(LAG_BUCKETS)
}

#[derive(Debug, Clone)]
pub struct Instruments {
    pub(super) request: Histograms,
    pub(super) transaction: Histogram,
    pub(super) outbox: OutboxInstruments,
}

impl Default for Instruments {
    fn default() -> Self {
        Self {
            request: Family::new_with_constructor(request_histogram),
            transaction: request_histogram(),
            outbox: OutboxInstruments::default(),
        }
    }
}

impl Instruments {
    pub(super) fn request(&self, source: &str, seconds: f64) {
        self.request
            .get_or_create(&vec![("source", source.to_owned())])
            .observe(seconds);
    }

    pub(super) fn transaction(&self, seconds: f64) {
        self.transaction.observe(seconds);
    }
}

/// What one process's relays did: acknowledged messages, dead letters,
/// and how long each destination took to answer. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct OutboxInstruments {
    pub(super) delivered: Family<Labels, Counter>,
    pub(super) dead: Family<Labels, Counter>,
    pub(super) send: Histograms,
    pub(super) lag: Histograms,
}

impl Default for OutboxInstruments {
    fn default() -> Self {
        Self {
            delivered: Family::default(),
            dead: Family::default(),
            send: Family::new_with_constructor(send_histogram),
            lag: Family::new_with_constructor(lag_histogram),
        }
    }
}

fn destination(name: &str) -> Labels {
    vec![("destination", name.to_owned())]
}

impl OutboxInstruments {
    /// One send's time to its answer, acknowledged or not.
    pub fn sent(&self, name: &str, seconds: f64) {
        self.send.get_or_create(&destination(name)).observe(seconds);
    }

    /// A message's time from its posting to its acknowledgement, once that
    /// is recorded.
    pub fn acknowledged_after(&self, name: &str, seconds: f64) {
        self.lag
            .get_or_create(&destination(name))
            .observe(seconds.max(0.0));
    }

    /// Recorded as delivered (after the acknowledgement was stored).
    pub fn delivered(&self, name: &str, count: u64) {
        if count > 0 {
            self.delivered
                .get_or_create(&destination(name))
                .inc_by(count);
        }
    }

    /// Recorded as dead letters (attempts exhausted).
    pub fn dead(&self, name: &str, count: u64) {
        if count > 0 {
            self.dead.get_or_create(&destination(name)).inc_by(count);
        }
    }
}
