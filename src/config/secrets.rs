//! Secrets in the config: `env:` references, where each came from, the
//! ones hookledger generates itself, and warnings for placeholders.

use std::path::{Path, PathBuf};

use super::generated::{self, Flavor};
use super::raw::RawConfig;
use super::{ConfigError, Env};
use crate::secret::Secret;

/// A secret hookledger generated and keeps in `data_dir` itself.
#[derive(Debug, Clone)]
pub struct SelfManaged {
    pub what: &'static str,
    pub file: PathBuf,
    pub secret: Secret,
}

/// Secrets written in the file that look like something meant to be
/// replaced (`$STRIPE_WEBHOOK_SECRET`, `<secret>`): taken literally, they
/// would verify nothing, so start-up says so.
pub(super) fn placeholder_warnings(raw: &RawConfig) -> Vec<String> {
    let mut values: Vec<(String, &str)> = Vec::new();
    if let Some(token) = &raw.admin.token {
        values.push(("admin.token".to_owned(), token));
    }
    for (i, named) in raw.admin.tokens.iter().enumerate() {
        values.push((format!("admin.tokens[{i}].token"), &named.token));
    }
    if let Some(token) = &raw.metrics.token {
        values.push(("metrics.token".to_owned(), token));
    }
    if let Some(key) = &raw.anchors.key {
        values.push(("anchors.key".to_owned(), key));
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
pub(super) fn generate(
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
/// A bearer token (admin, metrics): resolved like any secret, and long
/// enough that guessing it is hopeless.
pub(super) fn resolve_token(value: &str, env: Env<'_>, key: &str) -> Result<Secret, ConfigError> {
    let token = resolve_secret(value, env, key)?;
    if token.expose().len() < 16 {
        return Err(ConfigError::new(key, "must be at least 16 characters"));
    }
    Ok(token)
}

pub fn resolve_secret(value: &str, env: Env<'_>, key: &str) -> Result<Secret, ConfigError> {
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
