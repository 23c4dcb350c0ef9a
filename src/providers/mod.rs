//! Source kinds. Each provider module is pure (no I/O, no actix, no sqlx):
//! it verifies a delivery's signature over the raw bytes, maps the provider's
//! JSON into a [`NormalisedEvent`], and can sign a sample event the way the
//! provider would (for `hookledger send` and the tests).
//!
//! Adding a provider is one new file here plus one line in [`REGISTRY`].

pub(crate) mod hmac_sha256;
mod json_path;
mod standard_webhooks;
mod strict_json;
mod stripe;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::domain::{EventId, IdError, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};

pub use json_path::{JsonPath, JsonPathError};

/// Every source kind hookledger knows, by its config name.
static REGISTRY: &[&dyn Provider] = &[&stripe::Stripe, &standard_webhooks::StandardWebhooks];

pub fn provider_for(kind: &str) -> Option<&'static dyn Provider> {
    REGISTRY.iter().copied().find(|p| p.kind() == kind)
}

pub fn known_kinds() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|p| p.kind())
}

pub trait Provider: Sync + 'static {
    /// The `kind` value in the config.
    fn kind(&self) -> &'static str;

    /// The replay window the provider's own SDK uses.
    fn default_tolerance_secs(&self) -> u64;

    /// Where the customer account id lives in this provider's payload.
    fn default_account_path(&self) -> &'static str;

    /// Whether an event of this kind can carry the sender's own sequence
    /// number (needed by `ordering = "contiguous"`). Kinds that only have an
    /// event time say no, and config validation refuses contiguous for them.
    fn carries_sequence(&self) -> bool {
        false
    }

    /// Turns a configured secret into HMAC key bytes, or says why it cannot.
    fn key_from_secret(&self, secret: &Secret) -> Result<KeyBytes, String>;

    /// Checks the signature over the exact raw body, in constant time,
    /// against every configured key (rotation), within `tolerance_secs` of
    /// `now` in either direction where the scheme signs a timestamp.
    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        tolerance_secs: u64,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError>;

    /// Maps the (already verified) JSON into a normalised event.
    fn normalise(
        &self,
        verified: &Verified,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<NormalisedEvent, MapError>;

    /// The headers the provider would send with `body`.
    fn sign(
        &self,
        key: &KeyBytes,
        body: &[u8],
        event_id: &str,
        timestamp: i64,
    ) -> Vec<(&'static str, String)>;

    /// A body the provider could send for `sample`, in its own format.
    fn sample_body(&self, sample: &Sample) -> Vec<u8>;
}

/// Read access to request headers, so providers need no HTTP framework.
pub trait HeaderSource {
    /// The header's value, if present and valid visible ASCII. Names are
    /// case-insensitive.
    fn header(&self, name: &str) -> Option<&str>;
}

/// Headers as plain (name, value) pairs: for tests and the CLI.
pub struct HeaderPairs<'a>(pub &'a [(&'a str, &'a str)]);

impl HeaderSource for HeaderPairs<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// One incoming request, as the provider sees it.
pub struct Delivery<'a> {
    pub headers: &'a dyn HeaderSource,
    pub body: &'a [u8],
}

/// What a successful verification proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Position of the configured secret that verified (never the secret).
    pub key_index: usize,
    /// The signed timestamp, where the scheme signs one.
    pub timestamp: Option<i64>,
    /// The event id, where the scheme signs it outside the body.
    pub event_id: Option<String>,
}

/// Per-source mapping options (from the config, with provider defaults).
#[derive(Debug, Clone)]
pub struct Mapping {
    pub account_path: JsonPath,
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
}

pub use strict_json::Ambiguity;

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

/// Rejects a signed timestamp too far from `now`, in the past or the future.
fn check_tolerance(
    timestamp: i64,
    tolerance_secs: u64,
    now: DateTime<Utc>,
) -> Result<(), VerifyError> {
    let skew_secs = now.timestamp().saturating_sub(timestamp);
    if skew_secs.unsigned_abs() > tolerance_secs {
        return Err(VerifyError::OutsideTolerance {
            skew_secs,
            tolerance_secs,
        });
    }
    Ok(())
}

/// A unix timestamp in seconds, as ASCII digits only (no sign, no spaces).
fn parse_unix_seconds(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 12 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The event id from a JSON string field.
fn event_id_field(payload: &Value, key: &'static str) -> Result<EventId, MapError> {
    match payload.get(key) {
        Some(Value::String(id)) => Ok(EventId::parse(id)?),
        _ => Err(MapError::MissingEventId(key)),
    }
}

/// The event type from a JSON string field; absent means "" (ignored).
fn event_type_field(payload: &Value, key: &str) -> Result<String, MapError> {
    match payload.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(t)) if t.len() <= 255 => Ok(t.clone()),
        Some(_) => Err(MapError::BadEventType),
    }
}

/// A unix time in whole seconds as a UTC time, if it is one.
fn from_unix_seconds(seconds: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_resolvable() {
        let kinds: Vec<_> = known_kinds().collect();
        assert_eq!(kinds, ["stripe", "standard-webhooks"]);
        for kind in kinds {
            assert_eq!(provider_for(kind).map(|p| p.kind()), Some(kind));
        }
        assert!(provider_for("paypal").is_none());
    }

    #[test]
    fn tolerance_applies_both_ways() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        assert!(check_tolerance(1_000_000 - 300, 300, now).is_ok());
        assert!(check_tolerance(1_000_000 + 300, 300, now).is_ok());
        assert_eq!(
            check_tolerance(1_000_000 - 600, 300, now),
            Err(VerifyError::OutsideTolerance {
                skew_secs: 600,
                tolerance_secs: 300
            })
        );
        assert!(check_tolerance(1_000_000 + 301, 300, now).is_err());
        assert!(check_tolerance(i64::MIN, 300, now).is_err());
    }

    #[test]
    fn unix_seconds_are_digits_only() {
        assert_eq!(parse_unix_seconds("1614265330"), Some(1_614_265_330));
        for bad in ["", "-1", "+1", " 1", "1.5", "1e9", "9999999999999"] {
            assert_eq!(parse_unix_seconds(bad), None, "{bad:?}");
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
