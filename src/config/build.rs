//! From the file as written and the environment to a validated [`Config`]:
//! a short sequence of steps, each reading its keys and recording what is
//! wrong with them, so that one start-up reports every problem, in the
//! order the keys are read. Nothing is written to `data_dir` (a generated
//! admin token) for a config that is going to be refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::admins::{AdminToken, build_admin_tokens};
use super::destinations::{CheckKind, build_destinations};
use super::env::{self, Env};
use super::error::{ConfigError, Problems};
use super::generated::Flavor;
use super::raw::{RawConfig, RawSource};
use super::scopes::scope_warnings;
use super::secrets::{
    SelfManaged, generate, origin_of, placeholder_warnings, resolve_secret, resolve_token,
};
use super::settings::{AdminSettings, Anchors, Config, Retention};
use super::sources::build_sources;
use super::{defaults, limits};
use crate::secret::Secret;
use crate::store::PoolSettings;

/// The contiguous demo source configured when there is no config file.
pub const DEMO_ORDERED_SOURCE: &str = "demo-ordered";

/// `demo`: no file was found, so the demo sources are configured.
/// `kinds` reads each destination's own keys (see [`CheckKind`]).
pub(super) fn build(
    mut raw: RawConfig,
    env: Env<'_>,
    demo: bool,
    kinds: CheckKind<'_>,
) -> Result<Config, ConfigError> {
    let data_dir = data_dir(&mut raw, env);
    let mut self_managed = Vec::new();
    if demo {
        add_demo_sources(&mut raw, &data_dir, &mut self_managed)?;
    }
    let mut problems = Problems::default();
    for error in env::apply(&mut raw, env) {
        problems.push(error);
    }
    let mut warnings = placeholder_warnings(&raw);
    let server = server(&mut raw, &mut problems);
    let retention = retention(&raw, &mut problems);
    let anchors = anchors(&mut raw, env, &mut problems);
    let limits = problems.take(limits::build(&raw.limits));
    let (database_url, database) = database(&mut raw, &data_dir, &mut problems);
    let sources = problems.take(build_sources(std::mem::take(&mut raw.sources), env));
    let destinations = problems.take(build_destinations(
        std::mem::take(&mut raw.destinations),
        env,
        kinds,
    ));
    let tokens = tokens(&mut raw, env, &data_dir, &mut problems);
    // Every problem first: a config that is going to be refused must not
    // leave a generated admin token behind.
    let (Some(limits), Some(sources), Some(destinations)) = (limits, sources, destinations) else {
        return Err(problems.into_result().expect_err("a part failed"));
    };
    if !problems.is_empty() {
        return Err(problems.into_result().expect_err("not empty"));
    }
    warnings.extend(scope_warnings(&sources));
    let token = match tokens.configured {
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
        listen: server.listen,
        database_url,
        data_dir,
        max_body_bytes: server.max_body_bytes,
        limits,
        release_sweep: server.release_sweep,
        shutdown_timeout: server.shutdown_timeout,
        drain: server.drain,
        retention,
        anchors,
        workers: server.workers,
        database,
        admin: AdminSettings {
            token,
            token_origin: tokens.origin,
            session_ttl_secs: raw
                .admin
                .session_ttl_secs
                .unwrap_or(defaults::ADMIN_SESSION_TTL_SECS)
                .max(60),
            tokens: tokens.named,
        },
        metrics_token: tokens.metrics,
        sources,
        destinations,
        run_relays: true,
        self_managed,
        warnings,
    })
}

/// `HOOKLEDGER_DATA_DIR`, else `data_dir`, else `data`.
fn data_dir(raw: &mut RawConfig, env: Env<'_>) -> PathBuf {
    PathBuf::from(
        env("HOOKLEDGER_DATA_DIR")
            .or(raw.data_dir.take())
            .unwrap_or_else(|| "data".into()),
    )
}

/// The demo's two Standard Webhooks sources, sharing a secret hookledger
/// generates and keeps in `data_dir`.
fn add_demo_sources(
    raw: &mut RawConfig,
    data_dir: &Path,
    self_managed: &mut Vec<SelfManaged>,
) -> Result<(), ConfigError> {
    let secret = generate(
        data_dir,
        "demo_secret",
        Flavor::WebhookSecret,
        "demo source secret",
        self_managed,
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
    Ok(())
}

/// The server's own settings.
struct Server {
    listen: String,
    max_body_bytes: usize,
    release_sweep: Duration,
    shutdown_timeout: Duration,
    drain: Duration,
    workers: Option<usize>,
}

fn server(raw: &mut RawConfig, problems: &mut Problems) -> Server {
    let max_body_bytes = problems
        .within(
            "max_body_bytes",
            raw.max_body_bytes
                .unwrap_or(defaults::MAX_BODY_BYTES.default),
            defaults::MAX_BODY_BYTES.range(),
        )
        .unwrap_or(1);
    let release_sweep_secs = problems
        .within(
            "release_sweep_secs",
            raw.release_sweep_secs
                .unwrap_or(defaults::RELEASE_SWEEP_SECS.default),
            defaults::RELEASE_SWEEP_SECS.range(),
        )
        .unwrap_or(1);
    let shutdown_timeout_secs = problems
        .within(
            "shutdown_timeout_secs",
            raw.shutdown_timeout_secs
                .unwrap_or(defaults::SHUTDOWN_TIMEOUT_SECS.default),
            defaults::SHUTDOWN_TIMEOUT_SECS.range(),
        )
        .unwrap_or(1);
    let drain_secs = problems
        .within(
            "drain_secs",
            raw.drain_secs.unwrap_or(defaults::DRAIN_SECS.default),
            defaults::DRAIN_SECS.range(),
        )
        .unwrap_or(0);
    Server {
        listen: raw.listen.take().unwrap_or_else(|| "127.0.0.1:8080".into()),
        max_body_bytes: max_body_bytes as usize,
        release_sweep: Duration::from_secs(release_sweep_secs),
        shutdown_timeout: Duration::from_secs(shutdown_timeout_secs),
        drain: Duration::from_secs(drain_secs),
        workers: raw.workers.filter(|w| *w > 0).map(|w| w as usize),
    }
}

fn anchors(raw: &mut RawConfig, env: Env<'_>, problems: &mut Problems) -> Anchors {
    let key = raw.anchors.key.take().and_then(|key| {
        problems.take(resolve_secret(&key, env, "anchors.key").and_then(|key| {
            match key.expose().len() {
                32.. => Ok(key),
                _ => Err(ConfigError::new(
                    "anchors.key",
                    "must be at least 32 characters",
                )),
            }
        }))
    });
    let interval_secs = problems
        .within(
            "anchors.interval_secs",
            raw.anchors
                .interval_secs
                .unwrap_or(defaults::ANCHORS_INTERVAL_SECS.default),
            defaults::ANCHORS_INTERVAL_SECS.range(),
        )
        .unwrap_or(defaults::ANCHORS_INTERVAL_SECS.default);
    Anchors {
        key,
        dir: raw.anchors.dir.take().map(PathBuf::from),
        interval: Duration::from_secs(interval_secs),
    }
}

fn retention(raw: &RawConfig, problems: &mut Problems) -> Retention {
    let payload_days = problems
        .within(
            "retention.payload_days",
            raw.retention
                .payload_days
                .unwrap_or(defaults::RETENTION_PAYLOAD_DAYS.default),
            defaults::RETENTION_PAYLOAD_DAYS.range(),
        )
        .unwrap_or(0);
    let outbox_days = problems
        .within(
            "retention.outbox_days",
            raw.retention
                .outbox_days
                .unwrap_or(defaults::RETENTION_OUTBOX_DAYS.default),
            defaults::RETENTION_OUTBOX_DAYS.range(),
        )
        .unwrap_or(0);
    let purge_interval_secs = problems
        .within(
            "retention.purge_interval_secs",
            raw.retention
                .purge_interval_secs
                .unwrap_or(defaults::RETENTION_PURGE_INTERVAL_SECS.default),
            defaults::RETENTION_PURGE_INTERVAL_SECS.range(),
        )
        .unwrap_or(1);
    Retention {
        payload_days: payload_days as u32,
        outbox_days: outbox_days as u32,
        purge_interval: Duration::from_secs(purge_interval_secs),
    }
}

/// The database's URL (an SQLite file in `data_dir` by default) and pool.
fn database(
    raw: &mut RawConfig,
    data_dir: &Path,
    problems: &mut Problems,
) -> (String, PoolSettings) {
    let max_connections = problems
        .within(
            "database.max_connections",
            raw.database
                .max_connections
                .unwrap_or(defaults::DATABASE_MAX_CONNECTIONS.default),
            defaults::DATABASE_MAX_CONNECTIONS.range(),
        )
        .unwrap_or(1);
    let database_url = raw
        .database_url
        .take()
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
    let database = &raw.database;
    let pool = PoolSettings {
        max_connections: max_connections as u32,
        acquire_timeout: Duration::from_secs(
            database
                .acquire_timeout_secs
                .unwrap_or(defaults::DATABASE_ACQUIRE_TIMEOUT_SECS)
                .max(1),
        ),
        busy_timeout: Duration::from_millis(
            database
                .busy_timeout_ms
                .unwrap_or(defaults::DATABASE_BUSY_TIMEOUT_MS),
        ),
        statement_timeout: Duration::from_millis(
            database
                .statement_timeout_ms
                .unwrap_or(defaults::DATABASE_STATEMENT_TIMEOUT_MS),
        ),
    };
    (database_url, pool)
}

/// The bearer tokens: the admin's (if configured; generated at the end
/// otherwise), the named ones beside it, and the metrics scraper's.
struct Tokens {
    configured: Option<Secret>,
    /// Where the admin token came from, for people (never the token).
    origin: String,
    named: Vec<AdminToken>,
    metrics: Option<Secret>,
}

fn tokens(raw: &mut RawConfig, env: Env<'_>, data_dir: &Path, problems: &mut Problems) -> Tokens {
    let origin = match (&raw.admin.token, &raw.admin.token_from) {
        (Some(_), Some(var)) => format!("environment variable {var}"),
        (Some(token), None) => origin_of(token),
        (None, _) => format!(
            "generated, kept in {}",
            data_dir.join("admin_token").display()
        ),
    };
    let configured = raw
        .admin
        .token
        .take()
        .and_then(|token| problems.take(resolve_token(&token, env, "admin.token")));
    let named = build_admin_tokens(
        std::mem::take(&mut raw.admin.tokens),
        configured.as_ref(),
        env,
        problems,
    );
    let metrics = raw
        .metrics
        .token
        .take()
        .and_then(|token| problems.take(resolve_token(&token, env, "metrics.token")));
    // The metrics token sits in scraper configs: never an admin's.
    if let Some(metrics) = &metrics {
        let admin = configured.iter().chain(named.iter().map(|t| &t.token));
        if admin.into_iter().any(|t| t.expose() == metrics.expose()) {
            problems.push(ConfigError::new(
                "metrics.token",
                "is an admin token: give scrapers a token of their own",
            ));
        }
    }
    Tokens {
        configured,
        origin,
        named,
        metrics,
    }
}
