//! Configuration: TOML file + environment -> a validated [`Config`]. Every
//! error names the offending key, so a bad deployment fails with one line.

mod admins;
mod destinations;
mod env;
mod error;
mod generated;
mod generic;
mod keys;
mod limits;
mod mapping;
mod ordering;
mod raw;
mod scopes;
mod secrets;
mod sources;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use admins::{AdminToken, MAIN_ADMIN};
pub use destinations::{
    Destination, OneOrMany, describe_destination, kind_settings, plain_url, routes,
};
pub use env::{Env, process_env};
pub use error::ConfigError;
use error::{Problems, in_range, without_strings};
pub use generated::random_bytes;
pub use limits::Limits;
pub use scopes::scope_warnings;
use secrets::{generate, placeholder_warnings};
pub use secrets::{generate_admin_token, resolve_secret};
use secrets::{origin_of, resolve_token};
use sources::build_sources;

use crate::secret::Secret;
use crate::source::Source;
use crate::store::PoolSettings;
use generated::Flavor;
use raw::{RawConfig, RawSource};

/// The contiguous demo source configured when there is no config file.
pub const DEMO_ORDERED_SOURCE: &str = "demo-ordered";

/// The file read when neither `--config` nor `HOOKLEDGER_CONFIG` is given.
pub const DEFAULT_CONFIG_FILE: &str = "hookledger.toml";

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
    pub retention: Retention,
    /// actix worker threads; `None` means one per core.
    pub workers: Option<usize>,
    pub database: PoolSettings,
    pub admin: AdminSettings,
    /// `GET /metrics` asks for this bearer token when set; open otherwise.
    pub metrics_token: Option<Secret>,
    pub sources: Vec<Source>,
    /// Where the outbox sends (README "Telling your other systems").
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

/// How long raw payloads are kept (README "Retention").
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

#[derive(Debug, Clone)]
pub struct SelfManaged {
    pub what: &'static str,
    pub file: PathBuf,
    pub secret: Secret,
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

/// Loads the config: `explicit` (from `--config` or `HOOKLEDGER_CONFIG`) must
/// exist; otherwise `hookledger.toml` is read if present; with no file at all
/// a `demo` Standard Webhooks source is configured so `cargo run` just works.
pub fn load(explicit: Option<&Path>, env: Env<'_>) -> Result<Config, ConfigError> {
    let path = match explicit {
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.exists()),
    };
    let Some(path) = path else {
        return build(RawConfig::default(), env, true);
    };
    let key = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError::new(&key, format!("cannot read: {e}")))?;
    let mut config = from_toml(&text, env).map_err(|e| e.prefix_keys(&key))?;
    config.file = Some(path);
    Ok(config)
}

/// Parses and validates a config text (no demo source).
pub fn from_toml(text: &str, env: Env<'_>) -> Result<Config, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let message = without_strings(e.message());
        let line = e
            .span()
            .map(|span| 1 + text[..span.start].matches('\n').count());
        ConfigError::new(
            line.map_or("toml".to_owned(), |l| format!("line {l}")),
            message,
        )
    })?;
    build(raw, env, false)
}

fn build(mut raw: RawConfig, env: Env<'_>, demo: bool) -> Result<Config, ConfigError> {
    let data_dir = PathBuf::from(
        env("HOOKLEDGER_DATA_DIR")
            .or(raw.data_dir.take())
            .unwrap_or_else(|| "data".into()),
    );
    let mut self_managed = Vec::new();
    if demo {
        let secret = generate(
            &data_dir,
            "demo_secret",
            Flavor::WebhookSecret,
            "demo source secret",
            &mut self_managed,
        )?;
        let generated = format!(
            "generated, kept in {}",
            data_dir.join("demo_secret").display()
        );
        raw.sources.push(RawSource {
            name: "demo".into(),
            kind: "standard-webhooks".into(),
            secrets: vec![secret.expose().to_owned()],
            secrets_from: Some(generated.clone()),
            ..RawSource::default()
        });
        // The same sender, numbering its events: to watch a gap park events
        // and release them in order (README's walkthrough).
        raw.sources.push(RawSource {
            name: DEMO_ORDERED_SOURCE.into(),
            kind: "standard-webhooks".into(),
            secrets: vec![secret.expose().to_owned()],
            secrets_from: Some(generated),
            ordering: Some(crate::domain::OrderingMode::Contiguous),
            ..RawSource::default()
        });
    }
    let mut problems = Problems::default();
    for error in env::apply(&mut raw, env) {
        problems.push(error);
    }
    let mut warnings = placeholder_warnings(&raw);

    let max_body_bytes = problems
        .take(in_range(
            "max_body_bytes",
            raw.max_body_bytes.unwrap_or(256 * 1024),
            1..=64 * 1024 * 1024,
        ))
        .unwrap_or(1);
    let release_sweep_secs = problems
        .take(in_range(
            "release_sweep_secs",
            raw.release_sweep_secs.unwrap_or(10),
            1..=86_400,
        ))
        .unwrap_or(1);
    let shutdown_timeout_secs = problems
        .take(in_range(
            "shutdown_timeout_secs",
            raw.shutdown_timeout_secs.unwrap_or(25),
            1..=3600,
        ))
        .unwrap_or(1);
    let payload_days = problems
        .take(in_range(
            "retention.payload_days",
            raw.retention.payload_days.unwrap_or(90),
            0..=36_500,
        ))
        .unwrap_or(0);
    let outbox_days = problems
        .take(in_range(
            "retention.outbox_days",
            raw.retention.outbox_days.unwrap_or(7),
            0..=36_500,
        ))
        .unwrap_or(0);
    let purge_interval_secs = problems
        .take(in_range(
            "retention.purge_interval_secs",
            raw.retention.purge_interval_secs.unwrap_or(3600),
            1..=86_400,
        ))
        .unwrap_or(1);
    let limits = problems.take(limits::build(&raw.limits));
    let max_connections = problems
        .take(in_range(
            "database.max_connections",
            raw.database.max_connections.unwrap_or(10),
            1..=1000,
        ))
        .unwrap_or(1);
    let database_url = raw
        .database_url
        .unwrap_or_else(|| format!("sqlite://{}/hookledger.db", data_dir.display()));
    if !["sqlite:", "postgres:", "postgresql:"]
        .iter()
        .any(|s| database_url.starts_with(s))
    {
        problems.push(ConfigError::new(
            "database_url",
            "must start with sqlite:, postgres: or postgresql:",
        ));
    }
    let sources = problems.take(build_sources(raw.sources, env));
    let destinations = problems.take(destinations::build_destinations(
        std::mem::take(&mut raw.destinations),
        env,
    ));
    let token_origin = match (&raw.admin.token, &raw.admin.token_from) {
        (Some(_), Some(var)) => format!("environment variable {var}"),
        (Some(token), None) => origin_of(token),
        (None, _) => format!(
            "generated, kept in {}",
            data_dir.join("admin_token").display()
        ),
    };
    let configured_token = raw
        .admin
        .token
        .take()
        .and_then(|token| problems.take(resolve_token(&token, env, "admin.token")));
    let named_tokens = admins::build_admin_tokens(
        std::mem::take(&mut raw.admin.tokens),
        configured_token.as_ref(),
        env,
        &mut problems,
    );
    let metrics_token = raw
        .metrics
        .token
        .take()
        .and_then(|token| problems.take(resolve_token(&token, env, "metrics.token")));
    // The metrics token sits in scraper configs: never an admin's.
    if let Some(metrics) = &metrics_token {
        let admin = configured_token
            .iter()
            .chain(named_tokens.iter().map(|t| &t.token));
        if admin.into_iter().any(|t| t.expose() == metrics.expose()) {
            problems.push(ConfigError::new(
                "metrics.token",
                "is an admin token: give scrapers a token of their own",
            ));
        }
    }
    // Every problem first: a config that is going to be refused must not
    // leave a generated admin token behind.
    let (Some(limits), Some(sources), Some(destinations)) = (limits, sources, destinations) else {
        return Err(problems.into_result().expect_err("a part failed"));
    };
    if !problems.is_empty() {
        return Err(problems.into_result().expect_err("not empty"));
    }
    warnings.extend(scope_warnings(&sources));
    let token = match configured_token {
        Some(token) => token,
        None => generate(
            &data_dir,
            "admin_token",
            Flavor::Token,
            "admin token",
            &mut self_managed,
        )?,
    };

    Ok(Config {
        file: None,
        listen: raw.listen.unwrap_or_else(|| "127.0.0.1:8080".into()),
        database_url,
        data_dir,
        max_body_bytes: max_body_bytes as usize,
        limits,
        release_sweep: Duration::from_secs(release_sweep_secs),
        shutdown_timeout: Duration::from_secs(shutdown_timeout_secs),
        retention: Retention {
            payload_days: payload_days as u32,
            outbox_days: outbox_days as u32,
            purge_interval: Duration::from_secs(purge_interval_secs),
        },
        workers: raw.workers.filter(|w| *w > 0).map(|w| w as usize),
        database: PoolSettings {
            max_connections: max_connections as u32,
            acquire_timeout: Duration::from_secs(
                raw.database.acquire_timeout_secs.unwrap_or(5).max(1),
            ),
            busy_timeout: Duration::from_millis(raw.database.busy_timeout_ms.unwrap_or(5000)),
            statement_timeout: Duration::from_millis(
                raw.database.statement_timeout_ms.unwrap_or(15_000),
            ),
        },
        admin: AdminSettings {
            token,
            token_origin,
            session_ttl_secs: raw.admin.session_ttl_secs.unwrap_or(12 * 3600).max(60),
            tokens: named_tokens,
        },
        metrics_token,
        sources,
        destinations,
        run_relays: true,
        self_managed,
        warnings,
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_problems;
