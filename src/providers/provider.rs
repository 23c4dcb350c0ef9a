//! The contract every kind implements: the [`Provider`] trait, and the
//! values that pass only through its calls (the source's settings and
//! policy, what to sign and the signed parts, a sample event).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::delivery::Delivery;
use super::generic_hmac::Scheme;
use super::mapping::{MapError, Mapping};
use super::rules::Rule;
use super::verification::{Verified, VerifyError};
use crate::domain::NormalisedEvent;
use crate::secret::{KeyBytes, Secret};

/// Where a kind's events can be read back, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct ReconcileApi {
    /// The API's scheme and host; `None` where each account has its own
    /// (a Shopify shop), so `api_base` must say it.
    pub base: Option<&'static str>,
    /// How long the provider keeps events readable.
    pub retention_days: u64,
    /// The key is an app's `CLIENT_ID:SECRET`, exchanged for a token
    /// (OAuth 2.0 client credentials), not a bearer key itself.
    pub client_credentials: bool,
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

    /// Whether a source of this kind says in its config where its events
    /// name payments (`payment_path`, `reverses_path`): kinds whose payloads
    /// are the sender's own design, so no rule of the kind can know.
    fn payments_configured(&self) -> bool {
        false
    }

    /// The provider API a source of this kind reconciles against by default
    /// and how long it keeps events readable (docs/operating/reconcile.md); `None`
    /// for a kind with no reconcile yet.
    fn reconcile_api(&self) -> Option<ReconcileApi> {
        None
    }

    /// Whether the kind verifies with certificates configured per source
    /// (`certificates`, PEM files) instead of shared secrets (PayPal).
    fn verifies_with_certificates(&self) -> bool {
        false
    }

    /// The source keys only this kind reads (Square's `notification_url`,
    /// PayPal's `webhook_id` and `certificates`, generic-hmac's scheme):
    /// check-config refuses them on a source of another kind, and the
    /// config's JSON Schema says the same.
    fn own_keys(&self) -> &'static [&'static str] {
        &[]
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
    pub generic: Option<Scheme>,
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

/// A secret used as its UTF-8 bytes, as written. An empty one is refused:
/// no provider issues one, so it can only be a configuration mistake.
pub(crate) fn utf8_key(secret: &Secret) -> Result<KeyBytes, String> {
    if secret.expose().is_empty() {
        return Err("secret is empty".to_owned());
    }
    Ok(KeyBytes::new(secret.expose().as_bytes().to_vec()))
}
