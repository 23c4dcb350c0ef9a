//! Configuration: TOML file + environment -> a validated [`Config`]. Every
//! error names the offending key, so a bad deployment fails with one line.

mod admins;
mod build;
mod defaults;
mod destinations;
mod env;
mod error;
mod generated;
mod generic;
mod keys;
pub mod kind_keys;
mod limits;
mod mapping;
mod ordering;
mod payments;
mod raw;
mod reconcile;
pub mod schema;
mod scopes;
mod secrets;
mod settings;
mod sources;

use std::path::{Path, PathBuf};

pub use admins::{AdminToken, MAIN_ADMIN};
pub use build::DEMO_ORDERED_SOURCE;
pub use destinations::{
    CheckKind, Destination, OneOrMany, kind_settings, kinds_at_start_up, plain_url, routes,
};
pub use env::{Env, process_env};
pub use error::ConfigError;
use error::without_strings;
pub use generated::random_bytes;
pub use limits::Limits;
use raw::RawConfig;
pub use scopes::scope_warnings;
pub use secrets::{SelfManaged, generate_admin_token, resolve_secret};
pub use settings::{AdminSettings, Anchors, Config, Retention};

/// The file read when neither `--config` nor `HOOKLEDGER_CONFIG` is given.
pub const DEFAULT_CONFIG_FILE: &str = "hookledger.toml";

/// Loads the config: `explicit` (from `--config` or `HOOKLEDGER_CONFIG`) must
/// exist; otherwise `hookledger.toml` is read if present; with no file at all
/// a `demo` Standard Webhooks source is configured so `cargo run` just works.
/// `kinds` reads each destination's own keys.
pub fn load(
    explicit: Option<&Path>,
    env: Env<'_>,
    kinds: CheckKind<'_>,
) -> Result<Config, ConfigError> {
    let path = match explicit {
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.exists()),
    };
    let Some(path) = path else {
        return build::build(RawConfig::default(), env, true, kinds);
    };
    let key = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError::new(&key, format!("cannot read: {e}")))?;
    let mut config = from_toml_reading(&text, env, kinds).map_err(|e| e.prefix_keys(&key))?;
    config.file = Some(path);
    Ok(config)
}

/// Parses and validates a config text (no demo source), leaving the
/// destinations' own keys to be read at start-up (`Application::build`
/// refuses a destination its kind refuses; the admin token this generated
/// if none was configured stays in `data_dir`). The commands read them
/// here, with [`load`].
pub fn from_toml(text: &str, env: Env<'_>) -> Result<Config, ConfigError> {
    from_toml_reading(text, env, &kinds_at_start_up)
}

/// [`from_toml`], with each destination's own keys read by `kinds`.
pub fn from_toml_reading(
    text: &str,
    env: Env<'_>,
    kinds: CheckKind<'_>,
) -> Result<Config, ConfigError> {
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
    build::build(raw, env, false, kinds)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_payments;
#[cfg(test)]
mod tests_problems;
#[cfg(test)]
mod tests_reconcile;
