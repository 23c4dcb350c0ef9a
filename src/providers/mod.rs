//! Source kinds. Each provider module is pure (no I/O, no actix, no sqlx):
//! it verifies a delivery's signature over the raw bytes, maps the provider's
//! JSON into [`NormalisedEvent`]s through its [`Rule`]s, and can sign a
//! sample event the way the provider would (for `hookledger send` and the
//! tests).
//!
//! Adding a provider is one new file here plus one line in [`REGISTRY`].

mod adyen;
mod checkout;
mod coinbase;
mod delivery;
mod fields;
pub mod generic_hmac;
mod header_tag;
pub(crate) mod hmac_sha256;
mod json_path;
mod lemonsqueezy;
mod mollie;
mod paddle;
mod paypal;
mod paystack;
mod polar;
mod razorpay;
mod rules;
mod shopify;
mod square;
mod standard_webhooks;
mod strict_json;
mod stripe;
#[cfg(test)]
mod tamper_tests;
#[cfg(test)]
mod testing;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::domain::{AmountFormat, IdError, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};

pub use delivery::{Delivery, HeaderPairs, HeaderSource, RecordingHeaders};
pub use json_path::{JsonPath, JsonPathError};
pub use rules::{
    Amount, Condition, Effect, EventView, Key, Rule, enabled_rules, map_event, mapped_types,
};
pub use strict_json::Ambiguity;

/// Every source kind hookledger knows, by its config name.
static REGISTRY: &[&dyn Provider] = &[
    &stripe::Stripe,
    &standard_webhooks::StandardWebhooks,
    &paddle::Paddle,
    &adyen::Adyen,
    &paypal::PayPal,
    &generic_hmac::GenericHmac,
    &square::Square,
    &checkout::Checkout,
    &coinbase::Coinbase,
    &mollie::Mollie,
    &paystack::Paystack,
    &shopify::Shopify,
    &razorpay::Razorpay,
    &lemonsqueezy::LemonSqueezy,
    &polar::Polar,
];

pub fn provider_for(kind: &str) -> Option<&'static dyn Provider> {
    REGISTRY.iter().copied().find(|p| p.kind() == kind)
}

pub fn known_kinds() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|p| p.kind())
}

pub trait Provider: Sync + 'static {
    /// The `kind` value in the config.
    fn kind(&self) -> &'static str;

    /// The replay window the provider's own SDK uses; 0 where the scheme
    /// signs no time.
    fn default_tolerance_secs(&self) -> u64;

    /// Where the customer account id lives in this provider's payload: the
    /// provider's own metadata or custom-data field.
    fn default_account_path(&self) -> &'static str;

    /// The event types this kind maps, and how.
    fn rules(&self) -> &'static [Rule];

    /// Whether an event of this kind can carry the sender's own sequence
    /// number (needed by `ordering = "contiguous"`). Kinds that only have an
    /// event time say no, and config validation refuses contiguous for them.
    fn carries_sequence(&self) -> bool {
        false
    }

    /// Whether the intent keys of this kind (its event ids, and the object
    /// ids its rules key by) are unique across the whole provider, not
    /// only within one account or endpoint. Then every source of the kind
    /// shares one scope by default (the kind's name), so the same event
    /// sent to two endpoints applies once; otherwise each source is its own
    /// scope. Say yes only with the provider's word for it.
    fn global_ids(&self) -> bool {
        false
    }

    /// Whether the kind verifies with certificates configured per source
    /// (`certificates`, PEM files) instead of shared secrets (PayPal).
    fn verifies_with_certificates(&self) -> bool {
        false
    }

    /// What the kind needs configured besides secrets (Square's
    /// notification URL, say), checked at start-up.
    fn check_settings(&self, _settings: &KindSettings) -> Result<(), SettingsError> {
        Ok(())
    }

    /// The key bytes a configured secret stands for. Usually one; Polar's
    /// secrets have two possible derivations and both are tried. By default
    /// the secret's UTF-8 bytes as written (`utf8_key`), as most providers
    /// key their HMAC; kinds that decode their secrets (hex, base64, PEM)
    /// override it.
    fn keys_from_secret(&self, secret: &Secret) -> Result<Vec<KeyBytes>, String> {
        Ok(vec![utf8_key(secret)?])
    }

    /// Checks the signature over the exact raw body, in constant time,
    /// against every key (rotation), within the tolerance of `now` in either
    /// direction where the scheme signs a timestamp.
    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        policy: &VerifyPolicy<'_>,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError>;

    /// Maps the (verified) JSON into its events: one, or for a kind that
    /// batches (Adyen) several, each its own intent.
    fn normalise(
        &self,
        verified: &Verified,
        delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError>;

    /// The bytes a replay maps for an event stored as `stored`: what was
    /// received, unless the kind stores each event of a batch on its own
    /// (Adyen), where the item goes back into a delivery of one.
    fn replay_body(&self, stored: &[u8]) -> Vec<u8> {
        stored.to_vec()
    }

    /// The body a successful delivery is answered with, where the provider
    /// expects one of its own: (content type, body).
    fn acknowledgement(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// Signs `body` as the provider would; a kind that signs inside the body
    /// (Adyen) returns it changed.
    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts;

    /// A body the provider could send for `sample`, in its own format.
    fn sample_body(&self, sample: &Sample) -> Vec<u8>;
}

/// Per-source settings some kinds need besides their secrets.
#[derive(Debug, Clone, Default)]
pub struct KindSettings {
    /// Square signs the notification URL exactly as registered with it.
    pub notification_url: Option<String>,
    /// PayPal signs this endpoint's webhook id.
    pub webhook_id: Option<String>,
    /// generic-hmac: the signature scheme, from the source's config.
    pub generic: Option<generic_hmac::Scheme>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SettingsError {
    /// The config key at fault (`notification_url`).
    pub key: &'static str,
    pub message: String,
}

/// How a source verifies.
pub struct VerifyPolicy<'a> {
    pub tolerance_secs: u64,
    pub settings: &'a KindSettings,
}

/// What to sign: a body for an event, at a time.
pub struct Unsigned<'a> {
    pub body: Vec<u8>,
    pub event_id: &'a str,
    pub timestamp: i64,
    pub settings: &'a KindSettings,
}

/// A signed request: the body (changed only where the kind signs inside
/// it) and the headers to send with it.
#[derive(Debug, Clone)]
pub struct SignedParts {
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

/// What a successful verification proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Position of the key that verified (the source maps it to the
    /// configured secret; never the secret).
    pub key_index: usize,
    /// The signed timestamp, where the scheme signs one.
    pub timestamp: Option<i64>,
    /// The event id, where the scheme signs it outside the body.
    pub event_id: Option<String>,
}

/// Per-source mapping options: the kind's defaults, overridden by the
/// source's config.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub account_path: JsonPath,
    pub amount_path: Option<JsonPath>,
    /// How the amount at `amount_path` is written (with an amount path of
    /// the source's own; else the kind's rule says).
    pub amount_format: Option<AmountFormat>,
    pub currency_path: Option<JsonPath>,
    pub sequence_path: Option<JsonPath>,
    pub object_path: Option<JsonPath>,
    /// Types that credit, replacing the kind's list.
    pub credit_types: Option<Vec<String>>,
    /// Types that debit, replacing the kind's list.
    pub debit_types: Option<Vec<String>>,
    /// generic-hmac: where the event id and type are.
    pub event_id_path: Option<JsonPath>,
    pub type_path: Option<JsonPath>,
}

impl Mapping {
    /// The kind's defaults only.
    pub fn with_account_path(account_path: JsonPath) -> Self {
        Self {
            account_path,
            amount_path: None,
            amount_format: None,
            currency_path: None,
            sequence_path: None,
            object_path: None,
            credit_types: None,
            debit_types: None,
            event_id_path: None,
            type_path: None,
        }
    }
}

/// The fields of a sample event for `hookledger send` and the tests.
#[derive(Debug, Clone)]
pub struct Sample {
    pub event_id: String,
    pub event_type: Option<String>,
    pub account_id: String,
    pub amount_minor: i64,
    pub currency: String,
    pub sequence: Option<i64>,
    pub timestamp: i64,
    /// The provider payment a credit is, or a reversal reverses; default:
    /// one derived from the event id.
    pub payment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("{0} header is missing")]
    MissingHeader(&'static str),
    #[error("{header} header is malformed: {problem}")]
    MalformedHeader {
        header: &'static str,
        problem: &'static str,
    },
    /// The signature is inside the body (Adyen), and the body is unusable.
    #[error("the signed fields cannot be read: {0}")]
    MalformedBody(String),
    #[error(
        "signed timestamp is {skew_secs} s from now, outside the tolerance of {tolerance_secs} s"
    )]
    OutsideTolerance { skew_secs: i64, tolerance_secs: u64 },
    #[error("no signature matched any of the {keys} configured secret(s)")]
    NoMatch { keys: usize },
}

impl VerifyError {
    /// A stable code for metrics and the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::MissingHeader(_) => "missing_signature_header",
            VerifyError::MalformedHeader { .. } => "malformed_signature_header",
            VerifyError::MalformedBody(_) => "malformed_signed_body",
            VerifyError::OutsideTolerance { .. } => "timestamp_outside_tolerance",
            VerifyError::NoMatch { .. } => "signature_mismatch",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("body is not valid JSON: {0}")]
    NotJson(String),
    #[error("body must be a JSON object")]
    NotAnObject,
    #[error("event id is missing ({0})")]
    MissingEventId(&'static str),
    #[error(transparent)]
    BadEventId(#[from] IdError),
    #[error("event type must be a string of at most 255 bytes")]
    BadEventType,
    #[error("{0}")]
    Unusable(String),
}

/// Parses the raw body as a JSON object. Shared by all providers' callers so
/// the error is the same everywhere; serde_json's recursion limit bounds
/// nesting. A body that can be read more than one way (a duplicate key, a
/// number no float holds) parses, with the [`Ambiguity`] named: the caller
/// must never apply it.
pub fn parse_json(body: &[u8]) -> Result<(Value, Option<Ambiguity>), MapError> {
    let (value, ambiguity) =
        strict_json::parse(body).map_err(|e| MapError::NotJson(e.to_string()))?;
    if value.is_object() {
        Ok((value, ambiguity))
    } else {
        Err(MapError::NotAnObject)
    }
}

/// A secret used as its UTF-8 bytes, as written. An empty one is refused:
/// no provider issues one, so it can only be a configuration mistake.
pub(crate) fn utf8_key(secret: &Secret) -> Result<KeyBytes, String> {
    if secret.expose().is_empty() {
        return Err("secret is empty".to_owned());
    }
    Ok(KeyBytes::new(secret.expose().as_bytes().to_vec()))
}

/// A dotted path into `root` (see [`JsonPath`]); for the kinds' own
/// constant paths.
pub(crate) fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(root, |value, segment| match value {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_resolvable() {
        let kinds: Vec<_> = known_kinds().collect();
        let mut unique = kinds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), kinds.len());
        for kind in kinds {
            assert_eq!(provider_for(kind).map(|p| p.kind()), Some(kind));
        }
        assert!(provider_for("bitcoin-by-fax").is_none());
    }

    #[test]
    fn every_rule_reads_paths_that_parse() {
        for provider in REGISTRY {
            JsonPath::parse(provider.default_account_path()).unwrap();
            for rule in provider.rules() {
                for path in [rule.payment, rule.object] {
                    assert!(path.is_empty() || JsonPath::parse(path).is_ok(), "{path}");
                }
            }
        }
    }

    #[test]
    fn json_must_be_an_object() {
        assert_eq!(parse_json(b"{}"), Ok((serde_json::json!({}), None)));
        assert_eq!(parse_json(b"[1]"), Err(MapError::NotAnObject));
        assert!(matches!(parse_json(b""), Err(MapError::NotJson(_))));
        assert!(matches!(parse_json(b"\xff\xfe"), Err(MapError::NotJson(_))));
    }
}
