//! The config file as written: plain serde types, every key optional so that
//! defaults and environment overrides can be layered before validation.

use serde::Deserialize;

use crate::domain::{AmountFormat, NegativeBalance, OrderingMode, StaleAction};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub listen: Option<String>,
    pub database_url: Option<String>,
    pub data_dir: Option<String>,
    pub max_body_bytes: Option<u64>,
    pub workers: Option<u64>,
    pub release_sweep_secs: Option<u64>,
    pub shutdown_timeout_secs: Option<u64>,
    #[serde(default)]
    pub database: RawDatabase,
    #[serde(default)]
    pub admin: RawAdmin,
    #[serde(default)]
    pub metrics: RawMetrics,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub retention: RawRetention,
    #[serde(default)]
    pub sources: Vec<RawSource>,
    #[serde(default)]
    pub destinations: Vec<RawDestination>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDatabase {
    pub max_connections: Option<u64>,
    pub acquire_timeout_secs: Option<u64>,
    pub busy_timeout_ms: Option<u64>,
    pub statement_timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    pub token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub read_timeout_secs: Option<u64>,
    pub max_connections: Option<u64>,
    pub max_connections_per_address: Option<u64>,
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    pub log_summary_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    pub payload_days: Option<u64>,
    pub outbox_days: Option<u64>,
    pub purge_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    pub token: Option<String>,
    #[serde(default)]
    pub tokens: Vec<RawAdminToken>,
    /// The environment variable that set `token`, if one did.
    #[serde(skip)]
    pub token_from: Option<String>,
    pub session_ttl_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdminToken {
    pub name: String,
    pub token: String,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Where `secrets` came from when not from the file, for people
    /// (`environment variable HOOKLEDGER_SOURCE_X_SECRETS`).
    #[serde(skip)]
    pub secrets_from: Option<String>,
    pub tolerance_secs: Option<u64>,
    pub account_path: Option<String>,
    pub ordering: Option<OrderingMode>,
    pub on_stale: Option<RawOnStale>,
    pub first_sequence: Option<i64>,
    pub gap_timeout_secs: Option<u64>,
    pub release_batch: Option<u64>,
    pub credit_types: Option<Vec<String>>,
    pub debit_types: Option<Vec<String>>,
    pub amount_path: Option<String>,
    pub amount_format: Option<AmountFormat>,
    pub currency_path: Option<String>,
    pub sequence_path: Option<String>,
    pub object_path: Option<String>,
    /// generic-hmac and standard-webhooks: where a credit names the payment
    /// it is, and where a debit names the payment it reverses.
    pub payment_path: Option<String>,
    pub reverses_path: Option<String>,
    pub negative_balance: Option<NegativeBalance>,
    /// The scope of the intent key (README "Scope"): sources sharing one
    /// apply each event id once between them.
    pub scope: Option<String>,
    /// Square: the notification URL exactly as registered.
    pub notification_url: Option<String>,
    /// PayPal: this endpoint's webhook id, and the PEM certificate files
    /// that verify it (instead of secrets).
    pub webhook_id: Option<String>,
    pub certificates: Option<Vec<String>>,
    /// generic-hmac: the signature scheme and where the id and type are.
    pub signature_header: Option<String>,
    pub signature_prefix: Option<String>,
    pub algorithm: Option<String>,
    pub encoding: Option<String>,
    pub signed_payload: Option<String>,
    pub timestamp_header: Option<String>,
    pub id_header: Option<String>,
    pub event_id_path: Option<String>,
    pub type_path: Option<String>,
    /// Reading the provider's own records for events whose webhook never
    /// arrived (`[sources.reconcile]`).
    pub reconcile: Option<RawReconcile>,
}

/// `[sources.reconcile]`: the provider API key that reads its records, and
/// how often and how far back.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReconcile {
    pub api_key: String,
    pub api_base: Option<String>,
    pub interval_secs: Option<u64>,
    pub lookback_secs: Option<u64>,
    pub request_gap_ms: Option<u64>,
}

/// `on_stale = "hold"` (both effects, as in the core) or
/// `on_stale = { credit = "apply", debit = "hold" }`; a key left out of the
/// table keeps its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "\"hold\", \"apply\" or a table { credit = \"hold\" | \"apply\", debit = \"hold\" | \"apply\" }"
)]
pub enum RawOnStale {
    Both(StaleAction),
    PerEffect(RawOnStaleTable),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOnStaleTable {
    pub credit: Option<StaleAction>,
    pub debit: Option<StaleAction>,
}

/// A `[[destinations]]` table: the keys every kind has, and the kind's own
/// (`settings`), which its file reads and checks (unknown keys included).
#[derive(Debug, Default, Deserialize)]
pub struct RawDestination {
    pub name: String,
    pub kind: String,
    pub events: Option<Vec<String>>,
    pub ordered_by_account: Option<bool>,
    pub max_attempts: Option<u64>,
    pub timeout_secs: Option<u64>,
    #[serde(flatten)]
    pub settings: toml::Table,
}
