//! Helpers for the kinds' unit tests: verify, sign and normalise through
//! the [`Provider`] trait exactly as `receive` and `hookledger send` do.

use chrono::DateTime;
use serde_json::Value;

use super::delivery::{Delivery, HeaderPairs};
use super::json_path::JsonPath;
use super::mapping::{MapError, Mapping};
use super::provider::{KindSettings, Provider, SignedParts, Unsigned, VerifyPolicy};
use super::verification::{Verified, VerifyError};
use crate::domain::NormalisedEvent;
use crate::secret::{KeyBytes, Secret};

/// When [`normalise`] and [`normalise_all`] say a delivery arrived.
pub const RECEIVED_AT: i64 = 1_700_000_000;

/// The secret's first (usually only) key.
pub fn key(provider: &dyn Provider, secret: &str) -> KeyBytes {
    provider
        .keys_from_secret(&Secret::new(secret))
        .unwrap()
        .remove(0)
}

pub fn verify(
    provider: &dyn Provider,
    headers: &[(&str, &str)],
    body: &[u8],
    keys: &[KeyBytes],
    now: i64,
) -> Result<Verified, VerifyError> {
    verify_with(provider, headers, body, keys, now, &KindSettings::default())
}

pub fn verify_with(
    provider: &dyn Provider,
    headers: &[(&str, &str)],
    body: &[u8],
    keys: &[KeyBytes],
    now: i64,
    settings: &KindSettings,
) -> Result<Verified, VerifyError> {
    let delivery = Delivery {
        headers: &HeaderPairs(headers),
        body,
        received_at: DateTime::from_timestamp(now, 0).unwrap(),
    };
    let policy = VerifyPolicy {
        tolerance_secs: provider.default_tolerance_secs(),
        settings,
    };
    provider.verify(
        &delivery,
        keys,
        &policy,
        DateTime::from_timestamp(now, 0).unwrap(),
    )
}

pub fn sign(
    provider: &dyn Provider,
    key: &KeyBytes,
    body: &[u8],
    event_id: &str,
    timestamp: i64,
) -> SignedParts {
    provider.sign(
        key,
        Unsigned {
            body: body.to_vec(),
            event_id,
            timestamp,
            settings: &KindSettings::default(),
        },
    )
}

/// The kind's defaults.
pub fn mapping(provider: &dyn Provider) -> Mapping {
    Mapping::with_account_path(JsonPath::parse(provider.default_account_path()).unwrap())
}

/// Every event of a verified body, under the kind's defaults.
pub fn normalise_all(
    provider: &dyn Provider,
    verified: &Verified,
    headers: &[(&str, &str)],
    payload: &Value,
    mapping: &Mapping,
) -> Result<Vec<NormalisedEvent>, MapError> {
    let body = payload.to_string();
    let delivery = Delivery {
        headers: &HeaderPairs(headers),
        body: body.as_bytes(),
        received_at: DateTime::from_timestamp(RECEIVED_AT, 0).unwrap(),
    };
    provider.normalise(verified, &delivery, payload, mapping)
}

/// The one event of a verified body.
pub fn normalise(
    provider: &dyn Provider,
    verified: &Verified,
    headers: &[(&str, &str)],
    payload: &Value,
) -> Result<NormalisedEvent, MapError> {
    let mut events = normalise_all(provider, verified, headers, payload, &mapping(provider))?;
    assert_eq!(events.len(), 1, "one event expected: {events:?}");
    Ok(events.remove(0))
}

/// A verification result for normalising a body directly.
pub fn verified(event_id: Option<&str>, timestamp: Option<i64>) -> Verified {
    Verified {
        key_index: 0,
        timestamp,
        event_id: event_id.map(str::to_owned),
    }
}
