//! The validated config every command runs with.

use std::path::PathBuf;
use std::time::Duration;

use super::admins::AdminToken;
use super::destinations::Destination;
use super::limits::Limits;
use super::secrets::SelfManaged;
use crate::secret::Secret;
use crate::source::Source;
use crate::store::PoolSettings;

#[derive(Debug)]
pub struct Config {
    /// The file it was read from; `None` for the demo setup (no file).
    pub file: Option<PathBuf>,
    pub listen: String,
    pub database_url: String,
    pub data_dir: PathBuf,
    pub max_body_bytes: usize,
    pub limits: Limits,
    /// How often the drain task looks for parked events to release when no
    /// delivery woke it (a backlog another instance left, a mode switch).
    pub release_sweep: Duration,
    /// On SIGTERM or Ctrl-C, how long requests in flight may take to finish
    /// before the process exits anyway (their transactions then roll back).
    pub shutdown_timeout: Duration,
    /// On SIGTERM, how long the process keeps serving while `/readyz`
    /// answers 503 (so a load balancer stops sending first), before it
    /// stops accepting and the shutdown bound starts.
    pub drain: Duration,
    pub retention: Retention,
    pub anchors: Anchors,
    /// actix worker threads; `None` means one per core.
    pub workers: Option<usize>,
    pub database: PoolSettings,
    pub admin: AdminSettings,
    /// `GET /metrics` asks for this bearer token when set; open otherwise.
    pub metrics_token: Option<Secret>,
    pub sources: Vec<Source>,
    /// Where the outbox sends (docs/other-systems.md).
    pub destinations: Vec<Destination>,
    /// `serve` runs the destinations' relays (false: `serve --no-relay`,
    /// with `hookledger relay` run on its own).
    pub run_relays: bool,
    /// Secrets hookledger generated and keeps in `data_dir` itself (admin
    /// token, demo secret), shown at start-up to the person running it.
    /// Configured secrets are never listed here.
    pub self_managed: Vec<SelfManaged>,
    /// Things that are allowed but probably wrong (a secret that looks like
    /// a shell variable), logged at start-up and shown by `check-config`.
    pub warnings: Vec<String>,
}

impl Config {
    /// The configured destination named `name`, or what to tell the person
    /// who named it: the names configured.
    pub fn destination(&self, name: &str) -> Result<&Destination, String> {
        self.destinations
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| {
                let known: Vec<_> = self.destinations.iter().map(|d| d.name.as_str()).collect();
                format!(
                    "no destination {name:?} in the config (configured: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                )
            })
    }
}

/// How long raw payloads are kept (docs/production/retention.md).
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Payloads of done events last received longer ago are emptied; 0
    /// keeps them forever.
    pub payload_days: u32,
    /// Delivered outbox rows older than this are deleted; 0 keeps them.
    /// Dead letters are never deleted.
    pub outbox_days: u32,
    /// How often the purge runs.
    pub purge_interval: Duration,
}

/// Anchors of the hash chains' heads (docs/operating/chains.md).
#[derive(Debug, Clone)]
pub struct Anchors {
    /// Signs each anchor; none: anchors are taken unsigned.
    pub key: Option<Secret>,
    /// Where each anchor is also written as a file.
    pub dir: Option<PathBuf>,
    pub interval: Duration,
}

#[derive(Debug, Clone)]
pub struct AdminSettings {
    pub token: Secret,
    /// Where the token came from, for people (never the token).
    pub token_origin: String,
    pub session_ttl_secs: u64,
    /// `[[admin.tokens]]`: named, possibly read-only, beside `token`.
    pub tokens: Vec<AdminToken>,
}
