//! Configuration: TOML file + environment -> a validated [`Config`]. Every
//! error names the offending key, so a bad deployment fails with one line.

mod env;
mod generated;
mod generic;
mod keys;
mod limits;
mod mapping;
mod ordering;
mod raw;
mod scopes;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use env::{Env, process_env};
pub use generated::random_bytes;
pub use limits::Limits;
pub use scopes::scope_warnings;

use crate::domain::SourceName;
use crate::providers::provider_for;
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
    pub listen: String,
    pub database_url: String,
    pub data_dir: PathBuf,
    pub max_body_bytes: usize,
    pub limits: Limits,
    /// How often the drain task looks for parked events to release when no
    /// delivery woke it (a backlog another instance left, a mode switch).
    pub release_sweep: Duration,
    /// actix worker threads; `None` means one per core.
    pub workers: Option<usize>,
    pub database: PoolSettings,
    pub admin: AdminSettings,
    pub sources: Vec<Source>,
    /// Secrets hookledger generated and keeps in `data_dir` itself (admin
    /// token, demo secret), shown at start-up to the person running it.
    /// Configured secrets are never listed here.
    pub self_managed: Vec<SelfManaged>,
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
    pub session_ttl_secs: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config error: {}: {}", self.key, self.message)
    }
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
    from_toml(&text, env).map_err(|mut e| {
        e.key = format!("{key}: {}", e.key);
        e
    })
}

/// Parses and validates a config text (no demo source).
pub fn from_toml(text: &str, env: Env<'_>) -> Result<Config, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let message = e.message().to_owned();
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
        raw.sources.push(RawSource {
            name: "demo".into(),
            kind: "standard-webhooks".into(),
            secrets: vec![secret.expose().to_owned()],
            ..RawSource::default()
        });
        // The same sender, numbering its events: to watch a gap park events
        // and release them in order (README's walkthrough).
        raw.sources.push(RawSource {
            name: DEMO_ORDERED_SOURCE.into(),
            kind: "standard-webhooks".into(),
            secrets: vec![secret.expose().to_owned()],
            ordering: Some(crate::domain::OrderingMode::Contiguous),
            ..RawSource::default()
        });
    }
    env::apply(&mut raw, env)?;

    let max_body_bytes = raw.max_body_bytes.unwrap_or(256 * 1024);
    if !(1..=64 * 1024 * 1024).contains(&max_body_bytes) {
        return Err(ConfigError::new(
            "max_body_bytes",
            "must be between 1 and 67108864",
        ));
    }
    let release_sweep_secs = raw.release_sweep_secs.unwrap_or(10);
    if !(1..=86_400).contains(&release_sweep_secs) {
        return Err(ConfigError::new(
            "release_sweep_secs",
            "must be between 1 and 86400",
        ));
    }
    let limits = limits::build(&raw.limits)?;
    let max_connections = raw.database.max_connections.unwrap_or(10);
    if !(1..=1000).contains(&max_connections) {
        return Err(ConfigError::new(
            "database.max_connections",
            "must be between 1 and 1000",
        ));
    }
    let database_url = raw
        .database_url
        .unwrap_or_else(|| format!("sqlite://{}/hookledger.db", data_dir.display()));
    if !["sqlite:", "postgres:", "postgresql:"]
        .iter()
        .any(|s| database_url.starts_with(s))
    {
        return Err(ConfigError::new(
            "database_url",
            "must start with sqlite:, postgres: or postgresql:",
        ));
    }

    // Sources first: a config that is going to be refused must not leave a
    // generated admin token behind.
    let sources = build_sources(raw.sources, env)?;
    let token = match raw.admin.token.take() {
        Some(token) => {
            let token = resolve_secret(&token, env, "admin.token")?;
            if token.expose().len() < 16 {
                return Err(ConfigError::new(
                    "admin.token",
                    "must be at least 16 characters",
                ));
            }
            token
        }
        None => generate(
            &data_dir,
            "admin_token",
            Flavor::Token,
            "admin token",
            &mut self_managed,
        )?,
    };

    Ok(Config {
        listen: raw.listen.unwrap_or_else(|| "127.0.0.1:8080".into()),
        database_url,
        data_dir,
        max_body_bytes: max_body_bytes as usize,
        limits,
        release_sweep: Duration::from_secs(release_sweep_secs),
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
            session_ttl_secs: raw.admin.session_ttl_secs.unwrap_or(12 * 3600).max(60),
        },
        sources,
        self_managed,
    })
}

/// Loads or creates a self-managed secret and records it for the banner.
fn generate(
    dir: &Path,
    file: &str,
    flavor: Flavor,
    what: &'static str,
    into: &mut Vec<SelfManaged>,
) -> Result<Secret, ConfigError> {
    let secret = generated::load_or_create(dir, file, flavor).map_err(|e| {
        ConfigError::new(
            "data_dir",
            format!("cannot keep {file} in {}: {e}", dir.display()),
        )
    })?;
    into.push(SelfManaged {
        what,
        file: dir.join(file),
        secret: secret.clone(),
    });
    Ok(secret)
}

/// `env:NAME` reads the secret from the environment variable NAME.
pub(super) fn resolve_secret(value: &str, env: Env<'_>, key: &str) -> Result<Secret, ConfigError> {
    match value.strip_prefix("env:") {
        Some(var) => env(var)
            .filter(|v| !v.is_empty())
            .map(Secret::new)
            .ok_or_else(|| ConfigError::new(key, format!("environment variable {var} is not set"))),
        None => Ok(Secret::new(value)),
    }
}

fn build_sources(raw: Vec<RawSource>, env: Env<'_>) -> Result<Vec<Source>, ConfigError> {
    let mut seen = HashSet::new();
    raw.into_iter()
        .enumerate()
        .map(|(i, raw)| {
            let key = format!("sources[{i}]");
            let name = SourceName::parse(&raw.name)
                .map_err(|e| ConfigError::new(format!("{key}.name"), e.to_string()))?;
            let key = format!("sources[{name}]");
            if !seen.insert(name.clone()) {
                return Err(ConfigError::new(
                    format!("{key}.name"),
                    "duplicate source name",
                ));
            }
            build_source(name, raw, env, &key)
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|sources| scopes::check_kinds(&sources).map(|()| sources))
}

fn build_source(
    name: SourceName,
    raw: RawSource,
    env: Env<'_>,
    key: &str,
) -> Result<Source, ConfigError> {
    let provider = provider_for(&raw.kind).ok_or_else(|| {
        let known: Vec<_> = crate::providers::known_kinds().collect();
        ConfigError::new(
            format!("{key}.kind"),
            format!("unknown kind {:?} (known: {})", raw.kind, known.join(", ")),
        )
    })?;
    let (keys, key_secrets) = keys::keys(&raw, provider, env, key)?;
    let tolerance_secs = match (provider.default_tolerance_secs(), raw.tolerance_secs) {
        (0, Some(_)) => {
            return Err(ConfigError::new(
                format!("{key}.tolerance_secs"),
                format!(
                    "kind {} signs no timestamp, so there is no replay window to set",
                    provider.kind()
                ),
            ));
        }
        (0, None) => 0,
        (default, set) => {
            let secs = set.unwrap_or(default);
            if !(1..=7 * 24 * 3600).contains(&secs) {
                return Err(ConfigError::new(
                    format!("{key}.tolerance_secs"),
                    "must be between 1 and 604800",
                ));
            }
            secs
        }
    };
    let ordering = ordering::policy(&raw, provider, key)?;
    let mapping = mapping::mapping(&raw, provider, key)?;
    if ordering.mode == crate::domain::OrderingMode::Contiguous
        && mapping::links_payments(provider, &mapping)
    {
        return Err(ConfigError::new(
            format!("{key}.ordering"),
            "this source's types credit or reverse provider payments, which are matched \
             to each other, and contiguous streams are not: use high-water",
        ));
    }
    let (scope, scope_explicit) = match &raw.scope {
        Some(scope) => {
            let scope = SourceName::parse(scope).map_err(|_| {
                ConfigError::new(
                    format!("{key}.scope"),
                    "must be 1-64 characters of a-z, 0-9, '-' or '_'",
                )
            })?;
            (scope.as_str().to_owned(), true)
        }
        None if provider.global_ids() => (provider.kind().to_owned(), false),
        None => (name.as_str().to_owned(), false),
    };
    Ok(Source {
        name,
        scope,
        scope_explicit,
        provider,
        keys,
        key_secrets,
        tolerance_secs,
        negative_balance: mapping::negative_balance(&raw, ordering.mode, key)?,
        settings: mapping::settings(&raw, provider, key)?,
        ordering,
        mapping,
    })
}

#[cfg(test)]
mod tests;
