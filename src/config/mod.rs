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
    pub sources: Vec<Source>,
    /// Secrets hookledger generated and keeps in `data_dir` itself (admin
    /// token, demo secret), shown at start-up to the person running it.
    /// Configured secrets are never listed here.
    pub self_managed: Vec<SelfManaged>,
    /// Things that are allowed but probably wrong (a secret that looks like
    /// a shell variable), logged at start-up and shown by `check-config`.
    pub warnings: Vec<String>,
}

/// How long raw payloads are kept (README "Retention").
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Payloads of done events last received longer ago are emptied; 0
    /// keeps them forever.
    pub payload_days: u32,
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
}

/// What is wrong with a config: the first problem, and every other one found
/// with it, so that one start-up reports all of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
    pub others: Vec<ConfigError>,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            others: Vec::new(),
        }
    }

    /// Every problem, the first one first.
    pub fn all(&self) -> impl Iterator<Item = &ConfigError> {
        std::iter::once(self).chain(&self.others)
    }

    /// Several problems as one error; `None` when there are none.
    fn gather(problems: Vec<ConfigError>) -> Option<ConfigError> {
        let mut problems = problems
            .into_iter()
            .flat_map(|p| {
                let others = p.others.clone();
                std::iter::once(ConfigError::new(p.key, p.message)).chain(others)
            })
            .collect::<Vec<_>>()
            .into_iter();
        let mut first = problems.next()?;
        first.others = problems.collect();
        Some(first)
    }

    fn prefix_keys(mut self, prefix: &str) -> Self {
        self.key = format!("{prefix}: {}", self.key);
        self.others = self
            .others
            .into_iter()
            .map(|o| o.prefix_keys(prefix))
            .collect();
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.others.is_empty() {
            return write!(f, "config error: {}: {}", self.key, self.message);
        }
        write!(f, "{} config errors:", 1 + self.others.len())?;
        for problem in self.all() {
            write!(f, "\n  {}: {}", problem.key, problem.message)?;
        }
        Ok(())
    }
}

/// A parse error's message without the strings it quotes (`invalid type:
/// string "whsec_...", expected a sequence`): the value may be a secret.
fn without_strings(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let quoted = &rest[at + "string \"".len()..];
        let mut end = None;
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i + 1);
                    break;
                }
                _ => escaped = false,
            }
        }
        rest = end.map_or("", |end| &quoted[end..]);
    }
    out.push_str(rest);
    out
}

/// Problems found while building a config, gathered rather than returned at
/// the first.
#[derive(Default)]
struct Problems(Vec<ConfigError>);

impl Problems {
    /// The value, or `None` with its error recorded.
    fn take<T>(&mut self, result: Result<T, ConfigError>) -> Option<T> {
        result.map_err(|e| self.0.push(e)).ok()
    }

    fn push(&mut self, error: ConfigError) {
        self.0.push(error);
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn into_result(self) -> Result<(), ConfigError> {
        ConfigError::gather(self.0).map_or(Ok(()), Err)
    }
}

/// `Err` for a number outside `range`, naming the key.
fn in_range(
    key: &str,
    value: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, ConfigError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::new(
            key,
            format!("must be between {} and {}", range.start(), range.end()),
        ))
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
    let token_origin = match (&raw.admin.token, &raw.admin.token_from) {
        (Some(_), Some(var)) => format!("environment variable {var}"),
        (Some(token), None) => origin_of(token),
        (None, _) => format!(
            "generated, kept in {}",
            data_dir.join("admin_token").display()
        ),
    };
    let configured_token = raw.admin.token.take().map(|token| {
        resolve_secret(&token, env, "admin.token").and_then(|token| {
            if token.expose().len() < 16 {
                Err(ConfigError::new(
                    "admin.token",
                    "must be at least 16 characters",
                ))
            } else {
                Ok(token)
            }
        })
    });
    let configured_token = configured_token.and_then(|t| problems.take(t));
    // Every problem first: a config that is going to be refused must not
    // leave a generated admin token behind.
    let (Some(limits), Some(sources)) = (limits, sources) else {
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
        },
        sources,
        self_managed,
        warnings,
    })
}

/// Secrets written in the file that look like something meant to be
/// replaced (`$STRIPE_WEBHOOK_SECRET`, `<secret>`): taken literally, they
/// would verify nothing, so start-up says so.
fn placeholder_warnings(raw: &RawConfig) -> Vec<String> {
    let mut values: Vec<(String, &str)> = Vec::new();
    if let Some(token) = &raw.admin.token {
        values.push(("admin.token".to_owned(), token));
    }
    for source in &raw.sources {
        for (i, secret) in source.secrets.iter().enumerate() {
            values.push((format!("sources[{}].secrets[{i}]", source.name), secret));
        }
    }
    values
        .into_iter()
        .filter_map(|(key, value)| {
            let variable = value
                .strip_prefix("${")
                .and_then(|v| v.strip_suffix('}'))
                .or_else(|| value.strip_prefix('$'))
                .filter(|v| {
                    !v.is_empty()
                        && v.chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                });
            // Never the value itself: a real secret can match these rules.
            if let Some(variable) = variable {
                return Some(format!(
                    "{key} is a shell variable reference, taken literally; to read the \
                     environment variable write \"env:{variable}\""
                ));
            }
            let lower = value.to_ascii_lowercase();
            let rule = if value.starts_with('<') && value.ends_with('>') {
                Some("is written in <angle brackets>")
            } else {
                [
                    "changeme",
                    "change-me",
                    "replace",
                    "your_",
                    "your-",
                    "xxxx",
                    "todo",
                ]
                .into_iter()
                .find(|p| lower.contains(p))
                .map(|_| "contains a placeholder word")
            };
            rule.map(|rule| {
                format!("{key} {rule}, like a placeholder; it is used as the secret as written")
            })
        })
        .collect()
}

/// The admin token kept in `data_dir`, created if missing (for `init`).
pub fn generate_admin_token(data_dir: &Path) -> Result<Secret, String> {
    generated::load_or_create(data_dir, "admin_token", Flavor::Token)
        .map_err(|e| format!("cannot keep admin_token in {}: {e}", data_dir.display()))
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

/// Where a secret written as `value` comes from, for people.
pub(super) fn origin_of(value: &str) -> String {
    match value.strip_prefix("env:") {
        Some(var) => format!("environment variable {var}"),
        None => "written in the config file".to_owned(),
    }
}

/// `env:NAME` reads the secret from the environment variable NAME.
pub(super) fn resolve_secret(value: &str, env: Env<'_>, key: &str) -> Result<Secret, ConfigError> {
    match value.strip_prefix("env:") {
        Some(var) => match env(var) {
            Some(v) if !v.is_empty() => Ok(Secret::new(v)),
            Some(_) => Err(ConfigError::new(
                key,
                format!("environment variable {var} is empty"),
            )),
            None => Err(ConfigError::new(
                key,
                format!("environment variable {var} is not set"),
            )),
        },
        None => Ok(Secret::new(value)),
    }
}

fn build_sources(raw: Vec<RawSource>, env: Env<'_>) -> Result<Vec<Source>, ConfigError> {
    let mut seen = HashSet::new();
    let mut problems = Problems::default();
    let mut sources = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let key = format!("sources[{i}]");
        let Some(name) = problems.take(
            SourceName::parse(&raw.name)
                .map_err(|e| ConfigError::new(format!("{key}.name"), e.to_string())),
        ) else {
            continue;
        };
        let key = format!("sources[{name}]");
        if !seen.insert(name.clone()) {
            problems.push(ConfigError::new(
                format!("{key}.name"),
                "duplicate source name",
            ));
            continue;
        }
        sources.extend(problems.take(build_source(name, raw, env, &key)));
    }
    problems.into_result()?;
    scopes::check_kinds(&sources)?;
    Ok(sources)
}

/// One source; every problem of it is reported (the kind's first: without a
/// known kind nothing else can be checked).
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
    let mut problems = Problems::default();
    let keys = problems.take(keys::keys(&raw, provider, env, key));
    let tolerance_secs = problems.take(tolerance(&raw, provider, key));
    let ordering = problems.take(ordering::policy(&raw, provider, key));
    let mapping = problems.take(mapping::mapping(&raw, provider, key));
    if let (Some(ordering), Some(mapping)) = (&ordering, &mapping)
        && ordering.mode == crate::domain::OrderingMode::Contiguous
        && mapping::links_payments(provider, mapping)
    {
        problems.push(ConfigError::new(
            format!("{key}.ordering"),
            "this source's types credit or reverse provider payments, which are matched \
             to each other, and contiguous streams are not: use high-water",
        ));
    }
    let scope = problems.take(match &raw.scope {
        Some(scope) => SourceName::parse(scope)
            .map(|scope| (scope.as_str().to_owned(), true))
            .map_err(|_| {
                ConfigError::new(
                    format!("{key}.scope"),
                    "must be 1-64 characters of a-z, 0-9, '-' or '_'",
                )
            }),
        None if provider.global_ids() => Ok((provider.kind().to_owned(), false)),
        None => Ok((name.as_str().to_owned(), false)),
    });
    let negative_balance = ordering
        .as_ref()
        .and_then(|ordering| problems.take(mapping::negative_balance(&raw, ordering.mode, key)));
    let settings = problems.take(mapping::settings(&raw, provider, key));
    problems.into_result()?;
    let (
        Some((keys, key_secrets)),
        Some(tolerance_secs),
        Some(ordering),
        Some(mapping),
        Some((scope, scope_explicit)),
        Some(negative_balance),
        Some(settings),
    ) = (
        keys,
        tolerance_secs,
        ordering,
        mapping,
        scope,
        negative_balance,
        settings,
    )
    else {
        unreachable!("every part is present when no problem was recorded");
    };
    Ok(Source {
        secret_origins: keys::origins(&raw),
        name,
        scope,
        scope_explicit,
        provider,
        keys,
        key_secrets,
        tolerance_secs,
        negative_balance,
        settings,
        ordering,
        mapping,
    })
}

/// The source's replay window: the kind's default, or as set.
fn tolerance(
    raw: &RawSource,
    provider: &dyn crate::providers::Provider,
    key: &str,
) -> Result<u64, ConfigError> {
    match (provider.default_tolerance_secs(), raw.tolerance_secs) {
        (0, Some(_)) => Err(ConfigError::new(
            format!("{key}.tolerance_secs"),
            format!(
                "kind {} signs no timestamp, so there is no replay window to set",
                provider.kind()
            ),
        )),
        (0, None) => Ok(0),
        (default, set) => in_range(
            &format!("{key}.tolerance_secs"),
            set.unwrap_or(default),
            1..=7 * 24 * 3600,
        ),
    }
}

#[cfg(test)]
mod tests;
