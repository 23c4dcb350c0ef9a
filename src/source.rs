//! A configured source at run time: its provider, keys and policies.

use std::fmt;
use std::time::Duration;

use crate::domain::{NegativeBalance, OrderingPolicy, SourceName};
use crate::providers::{KindSettings, Mapping, Provider};
use crate::secret::{KeyBytes, Secret};

pub struct Source {
    pub name: SourceName,
    /// The scope of this source's intent keys: an event id is applied once
    /// per scope, whichever source of the scope receives it.
    pub scope: String,
    /// Whether `scope` was configured (else the kind's default).
    pub scope_explicit: bool,
    pub provider: &'static dyn Provider,
    /// Derived from the configured secrets, in order; any one may verify.
    pub keys: Vec<KeyBytes>,
    /// For each key, the position of the configured secret it came from.
    pub key_secrets: Vec<usize>,
    /// Where each configured secret (or certificate) came from, for people:
    /// `environment variable STRIPE_WEBHOOK_SECRET`, `the config file`.
    pub secret_origins: Vec<String>,
    /// 0 for kinds that sign no timestamp.
    pub tolerance_secs: u64,
    pub negative_balance: NegativeBalance,
    pub settings: KindSettings,
    pub ordering: OrderingPolicy,
    pub mapping: Mapping,
    /// Reading the provider's own records for events whose webhook never
    /// arrived (`[sources.reconcile]`), if configured.
    pub reconcile: Option<Reconcile>,
}

/// How a source reconciles: the API key that reads the provider's
/// records (never shown: `Secret`), where, how often and how far back.
#[derive(Debug)]
pub struct Reconcile {
    pub api_key: Secret,
    /// `https://api.stripe.com`, or a loopback fake.
    pub api_base: String,
    /// The sweep inside `serve`; `None`: only on demand.
    pub interval: Option<Duration>,
    /// How far back a first run reads.
    pub lookback: Duration,
    /// How long the provider keeps events readable.
    pub retention: Duration,
    /// The least time between two requests of a run; `None`: the kind's
    /// default, a tenth of the provider's documented read limit.
    pub request_gap: Option<Duration>,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("scope", &self.scope)
            .field("kind", &self.provider.kind())
            .field("secrets", &self.keys.len())
            .field("tolerance_secs", &self.tolerance_secs)
            .field("ordering", &self.ordering)
            .field("account_path", &self.mapping.account_path.as_str())
            .field("negative_balance", &self.negative_balance)
            .field("reconcile", &self.reconcile)
            .finish()
    }
}

impl Source {
    /// The position of the configured secret behind key `index`.
    pub fn secret_position(&self, key_index: usize) -> usize {
        self.key_secrets
            .get(key_index)
            .copied()
            .unwrap_or(key_index)
    }
}
