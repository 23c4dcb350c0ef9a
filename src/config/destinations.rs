//! `[[destinations]]`: where the outbox sends (README "Telling your other
//! systems"). Validated here, so a relay never meets a destination it cannot
//! use.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;

use super::error::{Problems, in_range};
use super::secrets::resolve_secret;
use super::{ConfigError, Env};
use crate::domain::{MessageType, Route, Routes, SourceName};
use crate::providers::provider_for;
use crate::secret::{KeyBytes, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDestination {
    pub name: String,
    pub kind: String,
    pub url: Option<String>,
    /// One secret, or several (rotation).
    pub secret: Option<OneOrMany>,
    pub events: Option<Vec<String>>,
    pub ordered_by_account: Option<bool>,
    pub max_attempts: Option<u64>,
    pub timeout_secs: Option<u64>,
    pub subject: Option<String>,
    pub stream: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "a string or a list of strings")]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
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
    pub target: Target,
}

#[derive(Debug, Clone)]
pub enum Target {
    /// POST, signed with Standard Webhooks headers by every key (the first
    /// configured secret's signature first).
    Http { url: String, keys: Vec<KeyBytes> },
    /// JetStream publish, acknowledged by `stream`.
    Nats {
        url: String,
        subject: String,
        stream: String,
    },
}

impl Destination {
    pub fn kind(&self) -> &'static str {
        match self.target {
            Target::Http { .. } => "http",
            Target::Nats { .. } => "nats",
        }
    }
}

/// One line for people (`check-config`, the banner): never a secret.
pub fn describe_destination(destination: &Destination) -> String {
    let target = match &destination.target {
        Target::Http { url, keys } => {
            // The query may carry a token: never shown.
            let shown = url.split(['?', '#']).next().unwrap_or_default();
            format!("http POST {shown} ({} signing key(s))", keys.len())
        }
        Target::Nats {
            url,
            subject,
            stream,
        } => format!("nats {url}, subject {subject}, stream {stream}"),
    };
    let types: Vec<_> = destination.types.iter().map(|t| t.as_str()).collect();
    format!(
        "{target}; {}; {}; {} attempts, {} s timeout",
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
    let url = raw
        .url
        .as_deref()
        .ok_or_else(|| ConfigError::new(format!("{key}.url"), "is required"))?;
    let target = match raw.kind.as_str() {
        "http" => http_target(&raw, url, env, &key)?,
        "nats" => nats_target(&raw, url, &key)?,
        other => {
            return Err(ConfigError::new(
                format!("{key}.kind"),
                format!("unknown kind {other:?} (known: http, nats)"),
            ));
        }
    };
    Ok(Destination {
        name: name.as_str().to_owned(),
        types,
        ordered_by_account: raw.ordered_by_account.unwrap_or(false),
        max_attempts: max_attempts as u32,
        timeout: Duration::from_secs(timeout_secs),
        target,
    })
}

fn refuse_other_kind(key: &str, what: &str, set: bool, kind: &str) -> Result<(), ConfigError> {
    if set {
        return Err(ConfigError::new(
            format!("{key}.{what}"),
            format!("is not used by kind = \"{kind}\""),
        ));
    }
    Ok(())
}

/// A URL with the given schemes and no credentials in it (they would reach
/// logs and pages with the URL).
fn plain_url(url: &str, schemes: &[&str], key: &str) -> Result<String, ConfigError> {
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

fn http_target(
    raw: &RawDestination,
    url: &str,
    env: Env<'_>,
    key: &str,
) -> Result<Target, ConfigError> {
    refuse_other_kind(key, "subject", raw.subject.is_some(), "http")?;
    refuse_other_kind(key, "stream", raw.stream.is_some(), "http")?;
    let url = plain_url(url, &["https", "http"], key)?;
    let written = match &raw.secret {
        None => Vec::new(),
        Some(OneOrMany::One(one)) => vec![one.clone()],
        Some(OneOrMany::Many(many)) => many.clone(),
    };
    if written.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.secret"),
            "is required: the Standard Webhooks secret the receiver verifies with",
        ));
    }
    let provider = provider_for("standard-webhooks").expect("a registered kind");
    let mut keys = Vec::new();
    for (i, value) in written.iter().enumerate() {
        let at = format!("{key}.secret[{i}]");
        let secret: Secret = resolve_secret(value, env, &at)?;
        let mut decoded = provider
            .keys_from_secret(&secret)
            .map_err(|e| ConfigError::new(&at, e))?;
        // hookledger signs with it: a short key is a guessable one.
        if decoded.iter().any(|key| key.expose().len() < 16) {
            return Err(ConfigError::new(
                &at,
                "must decode to at least 16 bytes (for example whsec_ followed by \
                 `openssl rand -base64 32`)",
            ));
        }
        keys.append(&mut decoded);
    }
    Ok(Target::Http { url, keys })
}

const PLACEHOLDERS: [&str; 3] = ["{type}", "{source}", "{currency}"];

fn nats_target(raw: &RawDestination, url: &str, key: &str) -> Result<Target, ConfigError> {
    refuse_other_kind(key, "secret", raw.secret.is_some(), "nats")?;
    let url = plain_url(url, &["nats", "tls"], key)?;
    let subject = raw
        .subject
        .clone()
        .unwrap_or_else(|| "hookledger.{type}".to_owned());
    check_subject(&subject).map_err(|e| ConfigError::new(format!("{key}.subject"), e))?;
    let stream = raw
        .stream
        .clone()
        .unwrap_or_else(|| "HOOKLEDGER".to_owned());
    if stream.is_empty()
        || stream.len() > 64
        || !stream
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ConfigError::new(
            format!("{key}.stream"),
            "must be 1-64 letters, digits, '_' or '-'",
        ));
    }
    Ok(Target::Nats {
        url,
        subject,
        stream,
    })
}

/// A subject template: dot-separated tokens, the first one literal (the
/// stream listens on `<literal tokens>.>`), placeholders only whole-token.
fn check_subject(subject: &str) -> Result<(), String> {
    let tokens: Vec<&str> = subject.split('.').collect();
    if tokens.iter().any(|t| t.is_empty()) {
        return Err("has an empty token (two dots, or a dot at an end)".into());
    }
    if tokens[0].contains('{') {
        return Err("must start with a literal token, like hookledger.{type}".into());
    }
    for token in &tokens {
        if token.contains('{') || token.contains('}') {
            if !PLACEHOLDERS.contains(token) {
                return Err(format!(
                    "{token:?}: a placeholder must be a whole token, one of {}",
                    PLACEHOLDERS.join(", ")
                ));
            }
        } else if token
            .chars()
            .any(|c| c == '*' || c == '>' || c.is_whitespace() || c.is_control())
        {
            return Err(format!("{token:?} must not contain wildcards or spaces"));
        }
    }
    Ok(())
}

/// The subjects a stream must listen on for `subject`: its literal tokens
/// up to the first placeholder, then `>`.
pub fn stream_subject(subject: &str) -> String {
    let literal: Vec<&str> = subject
        .split('.')
        .take_while(|t| !t.contains('{'))
        .collect();
    if literal.len() == subject.split('.').count() {
        subject.to_owned()
    } else {
        format!("{}.>", literal.join("."))
    }
}

#[cfg(test)]
#[path = "tests_destinations.rs"]
mod tests;
