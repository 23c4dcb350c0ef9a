//! `generic-hmac`: any sender that signs with an HMAC, described in the
//! source's config instead of in code. The signature is `signature_header`
//! (an optional `signature_prefix` such as `sha256=` stripped), HMAC-SHA256
//! or -SHA512 (`algorithm`), hex or base64 (`encoding`), over
//! `signed_payload`, a template of `{body}` and optionally `{timestamp}`
//! (from `timestamp_header`, checked against `tolerance_secs` both ways) and
//! `{id}` (from `id_header`) with literal separators: `{timestamp}.{body}`.
//! A secret is used as its UTF-8 bytes, or decoded when written
//! `base64:...` or `hex:...`. Several values in the header (comma or space
//! separated) are all tried.
//!
//! The event id comes from `event_id_path` (a signed body field, default
//! `id`) or from `id_header` when the template signs it; the type from
//! `type_path` (default `type`); the source's `credit_types` and
//! `debit_types` (one of them required) say which types move money, and
//! `amount_path` (default `amount`, minor units unless `amount_format`
//! says otherwise), `currency_path` (`currency`), `account_path`
//! (`account_id`) and `sequence_path` (default: the signed timestamp)
//! where it is.

mod scheme;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::delivery::Delivery;
use super::fields::{check_tolerance, event_id_at, event_type_at, parse_unix_seconds, time_of};
pub use super::header_tag::Encoding;
use super::hmac_sha256::{self, HmacSha256, HmacSha512};
use super::mapping::{MapError, Mapping};
use super::provider::{
    KindSettings, Provider, Sample, SettingsError, SignedParts, Unsigned, VerifyPolicy,
};
use super::rules::{Amount, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, EventId, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};
pub use scheme::{Algorithm, Part, Scheme};

/// Where the paths come from: the source's config (required there).
const CONFIGURED: Amount = Amount::Path {
    amount: "amount",
    currency: "currency",
    format: AmountFormat::Minor,
};

/// Templates only: a generic source has no types of its own, so its
/// `credit_types` and `debit_types` select these by class.
static RULES: &[Rule] = &[
    Rule {
        event_type: "",
        effect: Effect::Credit,
        when: &[],
        amount: CONFIGURED,
        payment: "",
        object: "",
        key: Key::EventId,
        optional: true,
    },
    Rule {
        event_type: "",
        effect: Effect::Debit,
        when: &[],
        amount: CONFIGURED,
        payment: "",
        object: "",
        key: Key::EventId,
        optional: true,
    },
];

pub struct GenericHmac;

fn scheme(settings: &KindSettings) -> Result<&Scheme, VerifyError> {
    settings
        .generic
        .as_ref()
        .ok_or_else(|| VerifyError::MalformedBody("the source has no signature scheme".into()))
}

/// The presented signatures: the header's values, prefix stripped, decoded.
fn candidates(scheme: &Scheme, value: &str) -> Vec<Vec<u8>> {
    value
        .split([',', ' '])
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| match &scheme.prefix {
            Some(prefix) => v.strip_prefix(prefix.as_str()).unwrap_or(v),
            None => v,
        })
        .filter_map(|v| scheme.encoding.decode(v))
        .collect()
}

/// The signed payload's pieces, in template order.
fn signed_parts<'a>(
    scheme: &'a Scheme,
    body: &'a [u8],
    timestamp: &'a str,
    id: &'a str,
) -> Vec<&'a [u8]> {
    scheme
        .template
        .iter()
        .map(|part| match part {
            Part::Body => body,
            Part::Timestamp => timestamp.as_bytes(),
            Part::Id => id.as_bytes(),
            Part::Literal(text) => text.as_bytes(),
        })
        .collect()
}

impl Provider for GenericHmac {
    fn kind(&self) -> &'static str {
        "generic-hmac"
    }

    /// Only with `timestamp_header`; config then requires a tolerance.
    fn default_tolerance_secs(&self) -> u64 {
        300
    }

    fn default_account_path(&self) -> &'static str {
        "account_id"
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    /// With `sequence_path` configured, the sender's own number.
    fn carries_sequence(&self) -> bool {
        true
    }

    /// `payment_path` and `reverses_path`: the sender's own payment refs.
    fn payments_configured(&self) -> bool {
        true
    }

    fn own_keys(&self) -> &'static [&'static str] {
        &[
            "signature_header",
            "signature_prefix",
            "algorithm",
            "encoding",
            "signed_payload",
            "timestamp_header",
            "id_header",
        ]
    }

    fn check_settings(&self, settings: &KindSettings) -> Result<(), SettingsError> {
        match &settings.generic {
            Some(_) => Ok(()),
            None => Err(SettingsError {
                key: "signature_header",
                message: "kind generic-hmac needs signature_header (and the rest of its scheme)"
                    .to_owned(),
            }),
        }
    }

    fn keys_from_secret(&self, secret: &Secret) -> Result<Vec<KeyBytes>, String> {
        let text = secret.expose();
        let bytes = if let Some(encoded) = text.strip_prefix("base64:") {
            STANDARD
                .decode(encoded)
                .map_err(|_| "base64: is not followed by base64".to_owned())?
        } else if let Some(encoded) = text.strip_prefix("hex:") {
            hex::decode(encoded).map_err(|_| "hex: is not followed by hex".to_owned())?
        } else {
            text.as_bytes().to_vec()
        };
        if bytes.is_empty() {
            return Err("secret is empty".to_owned());
        }
        Ok(vec![KeyBytes::new(bytes)])
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        policy: &VerifyPolicy<'_>,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let scheme = scheme(policy.settings)?;
        let presented = candidates(scheme, delivery.required(scheme.header)?);
        let (timestamp_text, timestamp) = match scheme.timestamp_header {
            Some(name) => {
                let text = delivery.required(name)?;
                let seconds = parse_unix_seconds(text).ok_or(VerifyError::MalformedHeader {
                    header: name,
                    problem: "not a unix timestamp",
                })?;
                check_tolerance(seconds, policy.tolerance_secs, now)?;
                (text, Some(seconds))
            }
            None => ("", None),
        };
        let id = match scheme.id_header {
            Some(name) => Some(delivery.required(name)?),
            None => None,
        };
        let parts = signed_parts(
            scheme,
            delivery.body,
            timestamp_text,
            id.unwrap_or_default(),
        );
        let key_index = match scheme.algorithm {
            Algorithm::Sha256 => {
                hmac_sha256::find_matching_key_with::<HmacSha256>(keys, &parts, &presented)
            }
            Algorithm::Sha512 => {
                hmac_sha256::find_matching_key_with::<HmacSha512>(keys, &parts, &presented)
            }
        }
        .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        Ok(Verified {
            key_index,
            timestamp,
            // An id header counts only where the signature covers it.
            event_id: id.filter(|_| scheme.signs(&Part::Id)).map(str::to_owned),
        })
    }

    fn normalise(
        &self,
        verified: &Verified,
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let event_id = match (&mapping.event_id_path, &verified.event_id) {
            (Some(path), _) => match path.lookup(payload) {
                Some(Value::String(id)) => EventId::parse(id)?,
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
                    EventId::parse(&n.to_string())?
                }
                _ => return Err(MapError::Unusable(format!("no event id at {path}"))),
            },
            (None, Some(id)) => EventId::parse(id)?,
            (None, None) => event_id_at(payload, "id")?,
        };
        let event_type = match &mapping.type_path {
            Some(path) => match path.lookup(payload) {
                Some(Value::String(t)) if t.len() <= 255 => t.clone(),
                None | Some(Value::Null) => String::new(),
                Some(_) => return Err(MapError::BadEventType),
            },
            None => event_type_at(payload, "type")?,
        };
        let occurred_at = mapping
            .sequence_path
            .as_ref()
            .and_then(|p| time_of(p.lookup(payload)));
        let view = EventView {
            event_id,
            event_type,
            root: payload,
            sequence: verified
                .timestamp
                .ok_or_else(|| "no sequence_path and no signed timestamp".to_owned()),
            explicit_sequence: mapping.sequence_path.is_some(),
            occurred_at,
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let Some(scheme) = unsigned.settings.generic.as_ref() else {
            return SignedParts {
                body: unsigned.body,
                headers: Vec::new(),
            };
        };
        let timestamp = unsigned.timestamp.to_string();
        let parts = signed_parts(scheme, &unsigned.body, &timestamp, unsigned.event_id);
        let tag = match scheme.algorithm {
            Algorithm::Sha256 => hmac_sha256::sign_with::<HmacSha256>(key, &parts),
            Algorithm::Sha512 => hmac_sha256::sign_with::<HmacSha512>(key, &parts),
        };
        let mut headers = vec![(
            scheme.header,
            format!(
                "{}{}",
                scheme.prefix.as_deref().unwrap_or_default(),
                scheme.encoding.encode(&tag)
            ),
        )];
        if let Some(name) = scheme.timestamp_header {
            headers.push((name, timestamp));
        }
        if let Some(name) = scheme.id_header {
            headers.push((name, unsigned.event_id.to_owned()));
        }
        SignedParts {
            headers,
            body: unsigned.body,
        }
    }

    /// A flat body at the default paths (`id`, `type`, `account_id`,
    /// `amount`, `currency`, `sequence`).
    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        json!({
            "id": sample.event_id,
            "type": sample.event_type.as_deref().unwrap_or("payment.succeeded"),
            "account_id": sample.account_id,
            "amount": sample.amount_minor,
            "currency": sample.currency,
            "sequence": sample.sequence.unwrap_or(sample.timestamp),
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
