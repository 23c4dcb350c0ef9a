//! The config file as written: plain serde types, every key optional so that
//! defaults and environment overrides can be layered before validation.

use schemars::JsonSchema;
use serde::Deserialize;

use super::defaults;

use crate::domain::{AmountFormat, NegativeBalance, OrderingMode, StaleAction};

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// The address to bind (`HOOKLEDGER_LISTEN`).
    #[schemars(extend("default" = "127.0.0.1:8080"))]
    pub listen: Option<String>,
    /// `sqlite:` or `postgres:`/`postgresql:` (`HOOKLEDGER_DATABASE_URL`); by
    /// default an SQLite file `hookledger.db` in `data_dir`.
    #[schemars(extend("pattern" = "^(sqlite|postgres|postgresql):"))]
    pub database_url: Option<String>,
    /// Where the generated admin token (and demo secret) live
    /// (`HOOKLEDGER_DATA_DIR`).
    #[schemars(extend("default" = "data"))]
    pub data_dir: Option<String>,
    /// Larger request bodies are answered 413.
    #[schemars(extend("default" = defaults::MAX_BODY_BYTES.default, "minimum" = defaults::MAX_BODY_BYTES.min, "maximum" = defaults::MAX_BODY_BYTES.max))]
    pub max_body_bytes: Option<u64>,
    /// HTTP worker threads; by default one per core (`0` too).
    pub workers: Option<u64>,
    /// How often parked events no delivery woke are looked for.
    #[schemars(extend("default" = defaults::RELEASE_SWEEP_SECS.default, "minimum" = defaults::RELEASE_SWEEP_SECS.min, "maximum" = defaults::RELEASE_SWEEP_SECS.max))]
    pub release_sweep_secs: Option<u64>,
    /// On SIGTERM or Ctrl-C, how long requests in flight may finish.
    #[schemars(extend("default" = defaults::SHUTDOWN_TIMEOUT_SECS.default, "minimum" = defaults::SHUTDOWN_TIMEOUT_SECS.min, "maximum" = defaults::SHUTDOWN_TIMEOUT_SECS.max))]
    pub shutdown_timeout_secs: Option<u64>,
    /// On SIGTERM, how long `/readyz` answers 503 while requests are still
    /// served, before the listener stops accepting (`HOOKLEDGER_DRAIN_SECS`).
    #[schemars(extend("default" = defaults::DRAIN_SECS.default, "minimum" = defaults::DRAIN_SECS.min, "maximum" = defaults::DRAIN_SECS.max))]
    pub drain_secs: Option<u64>,
    /// The database pool.
    #[serde(default)]
    pub database: RawDatabase,
    /// The admin page and API: tokens and sessions.
    #[serde(default)]
    pub admin: RawAdmin,
    /// `GET /metrics`.
    #[serde(default)]
    pub metrics: RawMetrics,
    /// What one client of the public endpoint may hold.
    #[serde(default)]
    pub limits: RawLimits,
    /// How long stored payloads and delivered outbox rows are kept.
    #[serde(default)]
    pub retention: RawRetention,
    /// Anchors of the hash chains' heads, kept outside the database
    /// (docs/operating/chains.md).
    #[serde(default)]
    pub anchors: RawAnchors,
    /// One endpoint each, `POST /webhooks/<name>`.
    #[serde(default)]
    pub sources: Vec<RawSource>,
    /// Where the outbox tells your other systems.
    #[serde(default)]
    pub destinations: Vec<RawDestination>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDatabase {
    /// The pool's size per instance.
    #[schemars(extend("default" = defaults::DATABASE_MAX_CONNECTIONS.default, "minimum" = defaults::DATABASE_MAX_CONNECTIONS.min, "maximum" = defaults::DATABASE_MAX_CONNECTIONS.max))]
    pub max_connections: Option<u64>,
    /// How long a request waits for a pooled connection before 503.
    #[schemars(extend("default" = defaults::DATABASE_ACQUIRE_TIMEOUT_SECS))]
    pub acquire_timeout_secs: Option<u64>,
    /// SQLite: how long a write waits for the lock before 503.
    #[schemars(extend("default" = defaults::DATABASE_BUSY_TIMEOUT_MS))]
    pub busy_timeout_ms: Option<u64>,
    /// PostgreSQL: one statement's bound before 503.
    #[schemars(extend("default" = defaults::DATABASE_STATEMENT_TIMEOUT_MS))]
    pub statement_timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// When set, `GET /metrics` asks for this bearer token (at least 16
    /// characters, `env:NAME` allowed); by default it is open.
    pub token: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// A request head, and then its body, must arrive within this; else 408.
    #[schemars(extend("default" = defaults::LIMITS_READ_TIMEOUT_SECS.default, "minimum" = defaults::LIMITS_READ_TIMEOUT_SECS.min, "maximum" = defaults::LIMITS_READ_TIMEOUT_SECS.max))]
    pub read_timeout_secs: Option<u64>,
    /// Open connections in all; the excess is closed as it is accepted.
    #[schemars(extend("default" = defaults::LIMITS_MAX_CONNECTIONS.default, "minimum" = defaults::LIMITS_MAX_CONNECTIONS.min, "maximum" = defaults::LIMITS_MAX_CONNECTIONS.max))]
    pub max_connections: Option<u64>,
    /// Connections one address may hold once half the places are taken
    /// (at most half of `max_connections`; `0` turns the share off).
    #[schemars(extend("default" = defaults::LIMITS_MAX_CONNECTIONS_PER_ADDRESS.default, "minimum" = defaults::LIMITS_MAX_CONNECTIONS_PER_ADDRESS.min, "maximum" = defaults::LIMITS_MAX_CONNECTIONS_PER_ADDRESS.max))]
    pub max_connections_per_address: Option<u64>,
    /// Addresses or CIDR ranges of your reverse proxies, whose
    /// `X-Forwarded-For` is read.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Failures any client can cause are logged a few times in this window,
    /// then summarised.
    #[schemars(extend("default" = defaults::LIMITS_LOG_SUMMARY_SECS.default, "minimum" = defaults::LIMITS_LOG_SUMMARY_SECS.min, "maximum" = defaults::LIMITS_LOG_SUMMARY_SECS.max))]
    pub log_summary_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    /// Raw payloads of done events older than this are emptied; `0` keeps
    /// them forever.
    #[schemars(extend("default" = defaults::RETENTION_PAYLOAD_DAYS.default, "minimum" = defaults::RETENTION_PAYLOAD_DAYS.min, "maximum" = defaults::RETENTION_PAYLOAD_DAYS.max))]
    pub payload_days: Option<u64>,
    /// Delivered outbox rows older than this are deleted; `0` keeps them.
    #[schemars(extend("default" = defaults::RETENTION_OUTBOX_DAYS.default, "minimum" = defaults::RETENTION_OUTBOX_DAYS.min, "maximum" = defaults::RETENTION_OUTBOX_DAYS.max))]
    pub outbox_days: Option<u64>,
    /// How often the purge runs (also at start-up).
    #[schemars(extend("default" = defaults::RETENTION_PURGE_INTERVAL_SECS.default, "minimum" = defaults::RETENTION_PURGE_INTERVAL_SECS.min, "maximum" = defaults::RETENTION_PURGE_INTERVAL_SECS.max))]
    pub purge_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAnchors {
    /// The key anchors are signed with (HMAC-SHA256; at least 32
    /// characters, `env:NAME` allowed). Never stored in the database; keep
    /// it where a person who can write to the database cannot read it.
    pub key: Option<String>,
    /// A folder each anchor is also written to as a JSON file
    /// (`anchor-<time>.json`), for `hookledger verify --against`; by
    /// default anchors go to the log only.
    pub dir: Option<String>,
    /// How often an anchor is taken (also at start-up).
    #[schemars(extend("default" = defaults::ANCHORS_INTERVAL_SECS.default, "minimum" = defaults::ANCHORS_INTERVAL_SECS.min, "maximum" = defaults::ANCHORS_INTERVAL_SECS.max))]
    pub interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    /// The admin token (at least 16 characters, `env:NAME` allowed); by
    /// default generated into `data_dir`.
    pub token: Option<String>,
    /// More admin tokens, one per holder, named in the audit log.
    #[serde(default)]
    pub tokens: Vec<RawAdminToken>,
    /// The environment variable that set `token`, if one did.
    #[serde(skip)]
    pub token_from: Option<String>,
    /// A browser session's lifetime (at least 60).
    #[schemars(extend("default" = defaults::ADMIN_SESSION_TTL_SECS))]
    pub session_ttl_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdminToken {
    /// The holder, as the audit log records it: 1-64 letters, digits, `-`,
    /// `_` (not `admin`).
    #[schemars(extend("pattern" = "^[A-Za-z0-9_-]{1,64}$"))]
    pub name: String,
    /// At least 16 characters, `env:NAME` allowed, never another holder's.
    pub token: String,
    /// Reads every page and the API and can change nothing.
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    /// The URL segment, `POST /webhooks/<name>`: `a-z`, `0-9`, `-`, `_`, at
    /// most 64.
    #[schemars(extend("pattern" = "^[a-z0-9_-]{1,64}$"))]
    pub name: String,
    /// The provider kind (docs/providers/README.md).
    pub kind: String,
    /// The signing secrets; any one may verify (rotation); `env:NAME` reads
    /// a variable.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Where `secrets` came from when not from the file, for people
    /// (`environment variable HOOKLEDGER_SOURCE_X_SECRETS`).
    #[serde(skip)]
    pub secrets_from: Option<String>,
    /// A signed timestamp must be within this many seconds of now, past or
    /// future; the kind's default otherwise.
    pub tolerance_secs: Option<u64>,
    /// The dotted JSON path of the customer account id; the kind's default
    /// otherwise.
    pub account_path: Option<String>,
    /// How events of one account are ordered (docs/ordering.md).
    #[schemars(extend("default" = "high-water"))]
    pub ordering: Option<OrderingMode>,
    /// What happens to a late event: `hold` it for an operator or `apply`
    /// it, for both effects or per effect.
    pub on_stale: Option<RawOnStale>,
    /// contiguous: the number of each account's first event (0 to 2^53).
    #[schemars(extend("default" = 1, "minimum" = 0, "maximum" = defaults::MAX_FIRST_SEQUENCE))]
    pub first_sequence: Option<i64>,
    /// contiguous: a gap open longer than this is held for an operator.
    #[schemars(extend("default" = 3600, "minimum" = 1, "maximum" = defaults::MAX_GAP_TIMEOUT_SECS))]
    pub gap_timeout_secs: Option<u64>,
    /// contiguous: at most this many parked events applied per transaction.
    #[schemars(extend("default" = 500, "minimum" = 1, "maximum" = defaults::MAX_RELEASE_BATCH))]
    pub release_batch: Option<u64>,
    /// The event types that credit, replacing the kind's list.
    pub credit_types: Option<Vec<String>>,
    /// The event types that debit, replacing the kind's list.
    pub debit_types: Option<Vec<String>>,
    /// The dotted JSON path of the amount, overriding the kind's.
    pub amount_path: Option<String>,
    /// How the amount at `amount_path` is written; the kind's otherwise.
    pub amount_format: Option<AmountFormat>,
    /// The dotted JSON path of the currency, overriding the kind's.
    pub currency_path: Option<String>,
    /// The dotted JSON path of the sender's sequence number.
    pub sequence_path: Option<String>,
    /// The dotted JSON path of the object the event is about.
    pub object_path: Option<String>,
    /// generic-hmac and standard-webhooks: where a credit names the payment
    /// it is.
    pub payment_path: Option<String>,
    /// generic-hmac and standard-webhooks: where a debit names the payment
    /// it reverses.
    pub reverses_path: Option<String>,
    /// A debit that would take a balance below zero: `hold` it for an
    /// operator or `allow` it (by default `hold`, `allow` for contiguous).
    pub negative_balance: Option<NegativeBalance>,
    /// The scope of the intent key: sources sharing one apply each event id,
    /// and each payment, once between them.
    #[schemars(extend("pattern" = "^[a-z0-9_-]{1,64}$"))]
    pub scope: Option<String>,
    /// square: the notification URL exactly as registered with Square,
    /// which signs it.
    pub notification_url: Option<String>,
    /// paypal: this endpoint's webhook id in PayPal's dashboard.
    pub webhook_id: Option<String>,
    /// paypal: the PEM certificate file(s) PayPal signs with (instead of
    /// secrets).
    pub certificates: Option<Vec<String>>,
    /// generic-hmac: the header carrying the signature.
    pub signature_header: Option<String>,
    /// generic-hmac: text before the signature in its header (`sha256=`).
    pub signature_prefix: Option<String>,
    /// generic-hmac: the HMAC's hash.
    #[schemars(extend("enum" = ["sha256", "sha512"], "default" = "sha256"))]
    pub algorithm: Option<String>,
    /// generic-hmac: how the signature is written.
    #[schemars(extend("enum" = ["hex", "base64"], "default" = "hex"))]
    pub encoding: Option<String>,
    /// generic-hmac: what is signed, a template of `{body}`, `{timestamp}`,
    /// `{id}`.
    #[schemars(extend("default" = "{body}"))]
    pub signed_payload: Option<String>,
    /// generic-hmac: the header carrying the signed timestamp.
    pub timestamp_header: Option<String>,
    /// generic-hmac: the header carrying the signed event id.
    pub id_header: Option<String>,
    /// The dotted JSON path of the event id, overriding the kind's.
    pub event_id_path: Option<String>,
    /// The dotted JSON path of the event type, overriding the kind's.
    pub type_path: Option<String>,
    /// Reading the provider's own records for events whose webhook never
    /// arrived.
    pub reconcile: Option<RawReconcile>,
}

/// `[sources.reconcile]`: the provider API key that reads its records, and
/// how often and how far back.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawReconcile {
    /// A read key for the provider's API (`env:NAME` allowed; paypal
    /// `CLIENT_ID:SECRET`); never logged, never shown.
    pub api_key: String,
    /// The provider's API, by default the kind's (shopify: required, the
    /// shop's); `http://` only to a loopback address.
    pub api_base: Option<String>,
    /// The sweep inside `serve`; `0` runs only on demand.
    #[schemars(extend("default" = defaults::RECONCILE_INTERVAL_SECS))]
    pub interval_secs: Option<u64>,
    /// How far back a first run reads, up to the provider's window.
    #[schemars(extend("default" = defaults::RECONCILE_LOOKBACK_SECS.default, "minimum" = defaults::RECONCILE_LOOKBACK_SECS.min, "maximum" = defaults::RECONCILE_LOOKBACK_SECS.max))]
    pub lookback_secs: Option<u64>,
    /// The least time between a run's requests; by default a tenth of the
    /// provider's documented read limit.
    #[schemars(extend("minimum" = *defaults::RECONCILE_REQUEST_GAP_MS.start(), "maximum" = *defaults::RECONCILE_REQUEST_GAP_MS.end()))]
    pub request_gap_ms: Option<u64>,
}

/// `on_stale = "hold"` (both effects, as in the core) or
/// `on_stale = { credit = "apply", debit = "hold" }`; a key left out of the
/// table keeps its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "\"hold\", \"apply\" or a table { credit = \"hold\" | \"apply\", debit = \"hold\" | \"apply\" }"
)]
pub enum RawOnStale {
    Both(StaleAction),
    PerEffect(RawOnStaleTable),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOnStaleTable {
    /// A late credit.
    #[schemars(extend("default" = "apply"))]
    pub credit: Option<StaleAction>,
    /// A late debit.
    #[schemars(extend("default" = "hold"))]
    pub debit: Option<StaleAction>,
}

/// A `[[destinations]]` table: the keys every kind has, and the kind's own
/// (`settings`), which its file reads and checks (unknown keys included).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct RawDestination {
    /// The destination's name, in metrics, pages and the outbox's rows.
    #[schemars(extend("pattern" = "^[a-z0-9_-]{1,64}$"))]
    pub name: String,
    /// How it is told.
    pub kind: String,
    /// The message types it gets; every event type when left out
    /// (`audit.anchor`, the chains' anchors, only when listed).
    pub events: Option<Vec<String>>,
    /// One message in flight per account and currency, in order.
    #[schemars(extend("default" = false))]
    pub ordered_by_account: Option<bool>,
    /// Attempts before a message is dead-lettered.
    #[schemars(extend("default" = defaults::DESTINATION_MAX_ATTEMPTS.default, "minimum" = defaults::DESTINATION_MAX_ATTEMPTS.min, "maximum" = defaults::DESTINATION_MAX_ATTEMPTS.max))]
    pub max_attempts: Option<u64>,
    /// One attempt's bound: connect, send, answer.
    #[schemars(extend("default" = defaults::DESTINATION_TIMEOUT_SECS.default, "minimum" = defaults::DESTINATION_TIMEOUT_SECS.min, "maximum" = defaults::DESTINATION_TIMEOUT_SECS.max))]
    pub timeout_secs: Option<u64>,
    /// The kind's own keys, read by its file in `outbox::destinations`.
    #[serde(flatten)]
    #[schemars(skip)]
    pub settings: toml::Table,
}
