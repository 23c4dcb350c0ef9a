//! One file per destination kind, and one line for it in `KINDS`: the
//! file reads and checks the kind's own config keys ([`DestinationKind`])
//! and sends ([`Deliver`]): a destination gets a rendered message and says
//! whether the other side acknowledged it. It never touches the database;
//! the relay never builds a request. The config keeps a kind's keys as
//! written; they are read here, at load ([`check`], which `config::load`
//! is given) and again when the relays start.

mod amqp;
mod deliver;
mod http;
mod kafka;
mod nats;
mod sqs;
mod template;

use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::config::{ConfigError, Destination, Env, process_env};

pub use deliver::{Deliver, DestinationKind, Outgoing, SendError, Sending};

/// Reads a kind's own keys of one `[[destinations]]` table (named `key` in
/// errors), `env` for `env:` secrets.
pub type Parse = fn(toml::Table, Env<'_>, &str) -> Result<Arc<dyn DestinationKind>, ConfigError>;

/// Every kind, by its `kind = "..."` name. A kind's settings refuse keys
/// they do not know (`#[serde(deny_unknown_fields)]`): the keys every
/// destination has are read first, so a mistyped one reaches the kind
/// (a test holds every kind to it).
static KINDS: &[Kind] = &[
    Kind {
        name: "http",
        parse: http::parse,
        settings: <http::Settings as JsonSchema>::json_schema,
    },
    Kind {
        name: "nats",
        parse: nats::parse,
        settings: <nats::Settings as JsonSchema>::json_schema,
    },
    Kind {
        name: "amqp",
        parse: amqp::parse,
        settings: <amqp::Settings as JsonSchema>::json_schema,
    },
    Kind {
        name: "kafka",
        parse: kafka::parse,
        settings: <kafka::Settings as JsonSchema>::json_schema,
    },
    Kind {
        name: "sqs",
        parse: sqs::parse,
        settings: <sqs::Settings as JsonSchema>::json_schema,
    },
];

/// A kind: its name, what reads its keys, and their JSON Schema (the
/// config's schema, `hookledger config-schema`).
struct Kind {
    name: &'static str,
    parse: Parse,
    settings: fn(&mut SchemaGenerator) -> Schema,
}

pub fn parser_for(kind: &str) -> Option<Parse> {
    KINDS.iter().find(|k| k.name == kind).map(|k| k.parse)
}

pub fn known_kinds() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|k| k.name)
}

/// Each kind's own keys as a JSON Schema object, by kind name.
pub fn settings_schemas(generator: &mut SchemaGenerator) -> Vec<(&'static str, Schema)> {
    KINDS
        .iter()
        .map(|k| (k.name, (k.settings)(generator)))
        .collect()
}

/// What `config::load` is given to read each destination's own keys: the
/// kind must be known, and its file must accept them.
pub fn check(destination: &Destination, env: Env<'_>, key: &str) -> Result<(), ConfigError> {
    read(destination, env, key).map(drop)
}

/// Every configured destination read again, as at load, with the
/// process's environment: what start-up refuses before anything runs,
/// every problem at once.
pub fn check_all(destinations: &[Destination]) -> Result<(), ConfigError> {
    let mut problems = destinations
        .iter()
        .filter_map(|d| read(d, &process_env, &key_of(d)).err())
        .flat_map(|error| {
            error
                .all()
                .map(|p| ConfigError::new(&p.key, &p.message))
                .collect::<Vec<_>>()
        });
    match problems.next() {
        None => Ok(()),
        Some(mut first) => {
            first.others = problems.collect();
            Err(first)
        }
    }
}

/// A destination's kind, reading its own keys.
fn read(
    destination: &Destination,
    env: Env<'_>,
    key: &str,
) -> Result<Arc<dyn DestinationKind>, ConfigError> {
    let Some(parse) = parser_for(&destination.kind) else {
        let known: Vec<_> = known_kinds().collect();
        return Err(ConfigError::new(
            format!("{key}.kind"),
            format!(
                "unknown kind {:?} (known: {})",
                destination.kind,
                known.join(", ")
            ),
        ));
    };
    parse(destination.settings.clone(), env, key)
}

/// How the config names a destination in errors.
fn key_of(destination: &Destination) -> String {
    format!("destinations[{}]", destination.name)
}

/// One line for people (`check-config`): never a secret.
pub fn describe(destination: &Destination, env: Env<'_>) -> Result<String, ConfigError> {
    let target = read(destination, env, &key_of(destination))?;
    let types: Vec<_> = destination.types.iter().map(|t| t.as_str()).collect();
    Ok(format!(
        "{}; {}; {}; {} attempts, {} s timeout",
        target.describe(),
        types.join(", "),
        if destination.ordered_by_account {
            "in order per account"
        } else {
            "unordered"
        },
        destination.max_attempts,
        destination.timeout.as_secs()
    ))
}

/// The sender for a configured destination, its keys read with the
/// process's environment (an `env:` secret is read when the relay starts,
/// as every command read it at load). Start-up refuses a destination they fail for
/// ([`check_all`]); one that reaches a relay anyway (a config built
/// without the check and not started) fails every attempt, saying why.
pub fn sender(destination: &Destination) -> Box<dyn Deliver> {
    match read(destination, &process_env, &key_of(destination)) {
        Ok(target) => target.sender(destination.timeout),
        Err(error) => Box::new(Unusable(error.to_string())),
    }
}

/// A destination whose keys its kind refused.
struct Unusable(String);

impl Deliver for Unusable {
    fn deliver<'a>(&'a self, _: &'a Outgoing<'a>) -> Sending<'a> {
        let reason = format!("this destination cannot be used: {}", self.0);
        Box::pin(async move { Err(SendError::new(reason)) })
    }
}

#[cfg(test)]
mod tests;
