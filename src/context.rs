//! Everything a request needs, built once at start-up and shared by handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::config::{AdminToken, Config};
use crate::failures::VerificationFailures;
use crate::ingest::{DrainSignal, Ingestor};
use crate::ledger_check::InvariantWatch;
use crate::lifecycle::Lifecycle;
use crate::net::{SignInThrottle, TrustedProxies};
use crate::receive::Pipeline;
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
    /// Draining after SIGTERM: `/readyz` answers 503 and every answer
    /// closes its connection.
    pub lifecycle: Lifecycle,
}

impl Context {
    /// What every request handler shares, from the config's sources, tokens
    /// and limits (taken out of `config`); `ingestor` stores deliveries in
    /// `store` (its tasks started by the caller, as every task is);
    /// `metrics` counts for this process.
    pub fn new(
        config: &mut Config,
        store: &Store,
        ingestor: Ingestor,
        clock: Arc<dyn Clock>,
        metrics: Metrics,
    ) -> Context {
        let main_admin = AdminToken {
            name: crate::config::MAIN_ADMIN.to_owned(),
            token: config.admin.token.clone(),
            read_only: false,
        };
        Context {
            ingestor,
            store: store.clone(),
            sources: std::mem::take(&mut config.sources)
                .into_iter()
                .map(|s| (s.name.to_string(), Arc::new(s)))
                .collect::<HashMap<_, _>>(),
            clock,
            metrics,
            failures: Default::default(),
            invariants: Default::default(),
            drain: DrainSignal::default(),
            release_sweep: config.release_sweep,
            sessions: SessionKeys::new(&config.admin.token, config.admin.session_ttl_secs),
            admins: std::iter::once(main_admin)
                .chain(std::mem::take(&mut config.admin.tokens))
                .collect(),
            metrics_token: config.metrics_token.take(),
            sign_in: SignInThrottle::default(),
            metrics_sign_in: SignInThrottle::default(),
            max_body_bytes: config.max_body_bytes,
            log_budget: LogBudget::new(LOG_LINES_PER_WINDOW),
            trusted_proxies: config.limits.trusted_proxies.clone(),
            lifecycle: Lifecycle::default(),
        }
    }

    pub fn source(&self, name: &str) -> Option<&Arc<Source>> {
        self.sources.get(name)
    }

    /// What the webhook pipeline uses of this state.
    pub fn pipeline(&self) -> Pipeline<'_> {
        Pipeline {
            clock: self.clock.as_ref(),
            metrics: &self.metrics,
            failures: &self.failures,
            log_budget: &self.log_budget,
            ingestor: &self.ingestor,
            drain: &self.drain,
        }
    }
}

/// Lines each kind of unauthenticated failure may log per key and window.
const LOG_LINES_PER_WINDOW: u32 = 10;
