//! Environment overrides: every scalar in the config file can be set by an
//! environment variable, so a container needs no file at all.
//!
//! Top level and sections: `HOOKLEDGER_<KEY>` and `HOOKLEDGER_<SECTION>_<KEY>`
//! (`HOOKLEDGER_DATABASE_URL`, `HOOKLEDGER_ADMIN_TOKEN`, ...). Sources:
//! `HOOKLEDGER_SOURCE_<NAME>_<KEY>` with the name upper-cased and `-` as `_`;
//! `..._SECRETS` is a comma-separated list.

use std::str::FromStr;

use super::ConfigError;
use super::raw::{RawConfig, RawSource};
use crate::source::OnStale;

/// Reads one environment variable; injected so tests need not touch the
/// process environment.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn parsed<T: FromStr>(env: Env<'_>, var: &str) -> Result<Option<T>, ConfigError> {
    env(var)
        .map(|text| {
            text.trim()
                .parse()
                .map_err(|_| ConfigError::new(var, format!("cannot parse {text:?}")))
        })
        .transpose()
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}

pub fn apply(raw: &mut RawConfig, env: Env<'_>) -> Result<(), ConfigError> {
    set(&mut raw.listen, env("HOOKLEDGER_LISTEN"));
    set(&mut raw.database_url, env("HOOKLEDGER_DATABASE_URL"));
    set(&mut raw.data_dir, env("HOOKLEDGER_DATA_DIR"));
    set(
        &mut raw.max_body_bytes,
        parsed(env, "HOOKLEDGER_MAX_BODY_BYTES")?,
    );
    set(&mut raw.workers, parsed(env, "HOOKLEDGER_WORKERS")?);
    set(
        &mut raw.database.max_connections,
        parsed(env, "HOOKLEDGER_DATABASE_MAX_CONNECTIONS")?,
    );
    set(
        &mut raw.database.acquire_timeout_secs,
        parsed(env, "HOOKLEDGER_DATABASE_ACQUIRE_TIMEOUT_SECS")?,
    );
    set(
        &mut raw.database.busy_timeout_ms,
        parsed(env, "HOOKLEDGER_DATABASE_BUSY_TIMEOUT_MS")?,
    );
    set(
        &mut raw.database.statement_timeout_ms,
        parsed(env, "HOOKLEDGER_DATABASE_STATEMENT_TIMEOUT_MS")?,
    );
    set(&mut raw.admin.token, env("HOOKLEDGER_ADMIN_TOKEN"));
    set(
        &mut raw.admin.session_ttl_secs,
        parsed(env, "HOOKLEDGER_ADMIN_SESSION_TTL_SECS")?,
    );
    for source in &mut raw.sources {
        apply_source(source, env)?;
    }
    Ok(())
}

fn apply_source(source: &mut RawSource, env: Env<'_>) -> Result<(), ConfigError> {
    let prefix = format!(
        "HOOKLEDGER_SOURCE_{}_",
        source.name.to_ascii_uppercase().replace('-', "_")
    );
    let var = |key: &str| format!("{prefix}{key}");
    if let Some(list) = env(&var("SECRETS")) {
        source.secrets = list
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
    }
    set(
        &mut source.tolerance_secs,
        parsed(env, &var("TOLERANCE_SECS"))?,
    );
    set(&mut source.account_path, env(&var("ACCOUNT_PATH")));
    if let Some(text) = env(&var("ON_STALE")) {
        source.on_stale = Some(match text.trim() {
            "hold" => OnStale::Hold,
            "apply" => OnStale::Apply,
            _ => return Err(ConfigError::new(var("ON_STALE"), "must be hold or apply")),
        });
    }
    Ok(())
}
