//! Everything a request needs, built once at start-up and shared by handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::SignInThrottle;
use crate::clock::Clock;
use crate::config::AdminToken;
use crate::drain::DrainSignal;
use crate::failures::VerificationFailures;
use crate::http::proxy::TrustedProxies;
use crate::ingest::Ingestor;
use crate::invariants::InvariantWatch;
use crate::secret::Secret;
use crate::session::SessionKeys;
use crate::source::Source;
use crate::store::Store;
use crate::telemetry::LogBudget;
use crate::telemetry::Metrics;

pub struct Context {
    pub store: Store,
    /// Where deliveries are stored (SQLite: group commit).
    pub ingestor: Ingestor,
    pub sources: HashMap<String, Arc<Source>>,
    pub clock: Arc<dyn Clock>,
    pub metrics: Metrics,
    /// The latest verification failures per source, for the admin.
    pub failures: VerificationFailures,
    /// The invariant check's latest result.
    pub invariants: InvariantWatch,
    /// Wakes the task that releases parked events beyond one transaction's
    /// bound.
    pub drain: DrainSignal,
    /// The drain task's periodic sweep.
    pub release_sweep: Duration,
    /// Every admin token: `admin.token` first (named `admin`), then
    /// `[[admin.tokens]]`.
    pub admins: Vec<AdminToken>,
    /// What `GET /metrics` asks for; open when `None`.
    pub metrics_token: Option<Secret>,
    pub sessions: SessionKeys,
    /// Failed admin sign-ins (bearer or form) per client address.
    pub sign_in: SignInThrottle,
    /// Failed `GET /metrics` tokens per client address: apart from the
    /// admin's, so one never resets or trips the other.
    pub metrics_sign_in: SignInThrottle,
    pub max_body_bytes: usize,
    /// Bounds the log lines unauthenticated clients can cause.
    pub log_budget: LogBudget,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: TrustedProxies,
}

impl Context {
    pub fn source(&self, name: &str) -> Option<&Arc<Source>> {
        self.sources.get(name)
    }
}
