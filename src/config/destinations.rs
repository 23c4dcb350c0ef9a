//! `[[destinations]]`: where the outbox sends (README "Telling your other
//! systems"). The keys every kind has are validated here, each kind's own
//! by its file in `outbox::destinations`, all at start-up: a relay never
//! meets a destination it cannot use.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::error::{Problems, in_range, without_strings};
use super::{ConfigError, Env};
use crate::domain::{MessageType, Route, Routes, SourceName};
use crate::outbox::destinations::{self, DestinationKind};

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

/// A key that takes one string or several (a secret, for rotation).
#[derive(Debug, Deserialize)]
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

/// A validated destination.
#[derive(Debug, Clone)]
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
    /// Where and how: the kind's own settings.
    pub target: Arc<dyn DestinationKind>,
}

/// One line for people (`check-config`, the banner): never a secret.
pub fn describe_destination(destination: &Destination) -> String {
    let types: Vec<_> = destination.types.iter().map(|t| t.as_str()).collect();
    format!(
        "{}; {}; {}; {} attempts, {} s timeout",
        destination.target.describe(),
        types.join(", "),
        if destination.ordered_by_account {
            "in order per account"
        } else {
            "unordered"
        },
        destination.max_attempts,
        destination.timeout.as_secs()
    )
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
        if let Some(destination) = problems.take(build_one(raw, env, &key)) {
            built.push(destination);
        }
    }
    problems.into_result().map(|()| built)
}

fn build_one(raw: RawDestination, env: Env<'_>, key: &str) -> Result<Destination, ConfigError> {
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
        raw.max_attempts.unwrap_or(25),
        1..=1000,
    )?;
    let timeout_secs = in_range(
        &format!("{key}.timeout_secs"),
        raw.timeout_secs.unwrap_or(10),
        1..=300,
    )?;
    let Some(parse) = destinations::parser_for(&raw.kind) else {
        let known: Vec<_> = destinations::known_kinds().collect();
        return Err(ConfigError::new(
            format!("{key}.kind"),
            format!("unknown kind {:?} (known: {})", raw.kind, known.join(", ")),
        ));
    };
    let target = parse(raw.settings, env, &key)?;
    Ok(Destination {
        name: name.as_str().to_owned(),
        types,
        ordered_by_account: raw.ordered_by_account.unwrap_or(false),
        max_attempts: max_attempts as u32,
        timeout: Duration::from_secs(timeout_secs),
        target,
    })
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
