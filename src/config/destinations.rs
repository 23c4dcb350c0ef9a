//! `[[destinations]]`: where the outbox sends (docs/other-systems.md). The keys
//! every kind has are validated here. Each kind's own
//! keys are kept as written and read by the kind's file in
//! `outbox::destinations`, which `load` is given as [`CheckKind`]: a
//! destination its kind refuses fails the config with every other problem,
//! at start-up, so a relay never meets a destination it cannot use.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::error::{Problems, in_range, without_strings};
use super::raw::RawDestination;
use super::{ConfigError, Env, defaults};
use crate::domain::{MessageType, Route, Routes, SourceName};

/// Reads one destination's kind and that kind's own keys (the destination
/// named `key` in errors; `env` for `env:` secrets): the outbox's
/// `destinations::check`, given by whoever loads the config, since the
/// kinds (and what they send with) stand above the config.
pub type CheckKind<'a> = &'a dyn Fn(&Destination, Env<'_>, &str) -> Result<(), ConfigError>;

/// Leaves every destination's kind to be read at start-up (tests that
/// build a config and start the application with it).
pub fn kinds_at_start_up(_: &Destination, _: Env<'_>, _: &str) -> Result<(), ConfigError> {
    Ok(())
}

/// A key that takes one string or several (a secret, for rotation).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged, expecting = "a string or a list of strings")]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

/// A kind's own keys, read from `settings` into `T` (which denies unknown
/// keys); an error names the destination and never quotes a value. No
/// kind takes a date, and serde would read an unquoted one
/// (`stream = 2026-11-27`) as a string: it is refused here.
pub fn kind_settings<T: serde::de::DeserializeOwned>(
    settings: toml::Table,
    key: &str,
) -> Result<T, ConfigError> {
    if let Some((name, _)) = settings.iter().find(|(_, v)| holds_a_date(v)) {
        return Err(ConfigError::new(
            format!("{key}.{name}"),
            "is a date: quote it if it is meant as text",
        ));
    }
    T::deserialize(settings).map_err(|e| ConfigError::new(key, without_strings(e.message().trim())))
}

fn holds_a_date(value: &toml::Value) -> bool {
    match value {
        toml::Value::Datetime(_) => true,
        toml::Value::Array(items) => items.iter().any(holds_a_date),
        toml::Value::Table(table) => table.values().any(holds_a_date),
        _ => false,
    }
}

/// A validated destination: the keys every kind has, and the kind's own
/// as written.
#[derive(Clone)]
pub struct Destination {
    pub name: String,
    pub types: Vec<MessageType>,
    /// One message in flight per account and currency, in `account_seq`
    /// order.
    pub ordered_by_account: bool,
    /// Attempts before a message is dead-lettered.
    pub max_attempts: u32,
    /// One attempt's bound (connect, send, answer).
    pub timeout: Duration,
    /// `kind = "..."`: which file of `outbox::destinations` reads
    /// `settings`.
    pub kind: String,
    /// The kind's own keys as written (a secret as its value or its
    /// `env:` name).
    pub settings: toml::Table,
}

/// The kind's keys are named, never their values: one may be a secret.
impl fmt::Debug for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Destination")
            .field("name", &self.name)
            .field("types", &self.types)
            .field("ordered_by_account", &self.ordered_by_account)
            .field("max_attempts", &self.max_attempts)
            .field("timeout", &self.timeout)
            .field("kind", &self.kind)
            .field("settings", &self.settings.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The write path's view of the destinations.
pub fn routes(destinations: &[Destination]) -> Routes {
    Routes::new(
        destinations
            .iter()
            .map(|d| Route {
                destination: d.name.clone(),
                types: d.types.clone(),
                ordered: d.ordered_by_account,
            })
            .collect(),
    )
}

pub(super) fn build_destinations(
    raw: Vec<RawDestination>,
    env: Env<'_>,
    kinds: CheckKind<'_>,
) -> Result<Vec<Destination>, ConfigError> {
    let mut seen = HashSet::new();
    let mut problems = Problems::default();
    let mut built = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let key = format!("destinations[{i}]");
        if !seen.insert(raw.name.clone()) {
            problems.push(ConfigError::new(
                format!("{key}.name"),
                format!("{:?} is used by another destination", raw.name),
            ));
            continue;
        }
        if let Some(destination) = problems.take(build_one(raw, env, &key, kinds)) {
            built.push(destination);
        }
    }
    problems.into_result().map(|()| built)
}

fn build_one(
    raw: RawDestination,
    env: Env<'_>,
    key: &str,
    kinds: CheckKind<'_>,
) -> Result<Destination, ConfigError> {
    let name = SourceName::parse(&raw.name)
        .map_err(|e| ConfigError::new(format!("{key}.name"), e.to_string()))?;
    let key = format!("destinations[{}]", name.as_str());
    let types = match &raw.events {
        None => MessageType::ALL.to_vec(),
        Some(names) if names.is_empty() => {
            return Err(ConfigError::new(
                format!("{key}.events"),
                "is empty: leave it out for every type",
            ));
        }
        Some(names) => names
            .iter()
            .map(|n| n.parse())
            .collect::<Result<_, String>>()
            .map_err(|e| ConfigError::new(format!("{key}.events"), e))?,
    };
    let max_attempts = in_range(
        &format!("{key}.max_attempts"),
        raw.max_attempts
            .unwrap_or(defaults::DESTINATION_MAX_ATTEMPTS.default),
        defaults::DESTINATION_MAX_ATTEMPTS.range(),
    )?;
    let timeout_secs = in_range(
        &format!("{key}.timeout_secs"),
        raw.timeout_secs
            .unwrap_or(defaults::DESTINATION_TIMEOUT_SECS.default),
        defaults::DESTINATION_TIMEOUT_SECS.range(),
    )?;
    let destination = Destination {
        name: name.as_str().to_owned(),
        types,
        ordered_by_account: raw.ordered_by_account.unwrap_or(false),
        max_attempts: max_attempts as u32,
        timeout: Duration::from_secs(timeout_secs),
        kind: raw.kind,
        settings: raw.settings,
    };
    kinds(&destination, env, &key)?;
    Ok(destination)
}

/// A URL with the given schemes and no credentials in it (they would reach
/// logs and pages with the URL).
pub fn plain_url(url: &str, schemes: &[&str], key: &str) -> Result<String, ConfigError> {
    let rest = schemes
        .iter()
        .find_map(|s| url.strip_prefix(s).and_then(|r| r.strip_prefix("://")))
        .ok_or_else(|| {
            ConfigError::new(
                format!("{key}.url"),
                format!("must start with {}://", schemes.join(":// or ")),
            )
        })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Err(ConfigError::new(format!("{key}.url"), "names no host"));
    }
    if authority.contains('@') {
        return Err(ConfigError::new(
            format!("{key}.url"),
            "must not contain credentials",
        ));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::new(
            format!("{key}.url"),
            "must not contain spaces",
        ));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
#[path = "tests_destinations.rs"]
mod tests;
