//! PayPal: RSA (SHA256withRSA, PKCS#1 v1.5) over
//! `{transmission_id}|{transmission_time}|{webhook_id}|{crc32(raw body)}`,
//! the signature base64 in `PAYPAL-TRANSMISSION-SIG`; `webhook_id` is this
//! endpoint's id in PayPal's developer dashboard (configured per source).
//! Verified offline against the certificate(s) configured per source
//! (`certificates = ["paypal.pem"]`; several while PayPal rotates): the
//! `PAYPAL-CERT-URL` the request names is never fetched, and a request
//! naming one outside PayPal (`https://*.paypal.com/`) is refused.
//! `PAYPAL-AUTH-ALGO` must be `SHA256withRSA`. PayPal's SDK enforces no
//! replay window, and neither does hookledger: the event id makes a replay
//! a duplicate. Source: ../shared/providers.md 2.15, 6.10.
//!
//! `PAYMENT.CAPTURE.COMPLETED` credits `resource.amount.value` (a decimal
//! string) to `resource.custom_id`; the payment is the capture. A
//! `PAYMENT.CAPTURE.REFUNDED` (a v2 Refund) that is `COMPLETED` debits once,
//! keyed by the refund id; its capture is the `links` entry with `rel` `up`
//! (`.../v2/payments/captures/<id>`), read into `resource.capture_id` for
//! the rules. Events are ordered by `create_time`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, SecondsFormat, Utc};
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use rsa::{PrivateKey, PublicKey};
use serde_json::{Value, json};
use sha2::Sha256;
use x509_cert::Certificate;
use x509_cert::der::{DecodePem, Encode};

use super::delivery::Delivery;
use super::fields::{event_id_at, event_type_at, rfc3339, time_order};
use super::mapping::{MapError, Mapping};
use super::provider::{
    KindSettings, Provider, ReconcileApi, Sample, SettingsError, SignedParts, Unsigned,
    VerifyPolicy,
};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};

const ID: &str = "PAYPAL-TRANSMISSION-ID";
const TIME: &str = "PAYPAL-TRANSMISSION-TIME";
const SIGNATURE: &str = "PAYPAL-TRANSMISSION-SIG";
const CERT_URL: &str = "PAYPAL-CERT-URL";
const ALGORITHM: &str = "PAYPAL-AUTH-ALGO";

/// The certificate URL `hookledger send` names (never fetched by anyone).
const SAMPLE_CERT_URL: &str =
    "https://api.paypal.com/v1/notifications/certs/CERT-hookledger-sample";

const AMOUNT: Amount = Amount::Path {
    amount: "resource.amount.value",
    currency: "resource.amount.currency_code",
    format: AmountFormat::Decimal,
};

static RULES: &[Rule] = &[
    Rule {
        event_type: "PAYMENT.CAPTURE.COMPLETED",
        effect: Effect::Credit,
        when: &[Condition {
            path: "resource.status",
            values: &["COMPLETED"],
        }],
        amount: AMOUNT,
        payment: "resource.id",
        object: "resource.id",
        key: Key::EventId,
        optional: false,
    },
    Rule {
        event_type: "PAYMENT.CAPTURE.REFUNDED",
        effect: Effect::Reverse(Basis::Each),
        when: &[Condition {
            path: "resource.status",
            values: &["COMPLETED"],
        }],
        amount: AMOUNT,
        payment: "resource.capture_id",
        object: "resource.id",
        key: Key::Field {
            prefix: "refund",
            path: "resource.id",
        },
        optional: false,
    },
];

pub struct PayPal;

/// Whether a certificate URL is PayPal's: https, on paypal.com or a
/// subdomain of it (api.paypal.com, api.sandbox.paypal.com), default port.
fn is_paypal_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.to_ascii_lowercase();
    !host.contains(['@', ':'])
        && (host == "paypal.com" || host.ends_with(".paypal.com"))
        && !host.starts_with('.')
}

/// The capture a v2 Refund belongs to: the last path segment of its
/// `rel = "up"` link.
fn capture_of(resource: &Value) -> Option<String> {
    let href = resource
        .get("links")?
        .as_array()?
        .iter()
        .find(|link| link.get("rel").and_then(Value::as_str) == Some("up"))?
        .get("href")?
        .as_str()?;
    let id = href.trim_end_matches('/').rsplit('/').next()?;
    (!id.is_empty()).then(|| id.to_owned())
}

/// The signed string for a delivery.
fn signed_string(id: &str, time: &str, webhook_id: &str, body: &[u8]) -> String {
    format!("{id}|{time}|{webhook_id}|{}", crc32fast::hash(body))
}

impl Provider for PayPal {
    fn kind(&self) -> &'static str {
        "paypal"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "resource.custom_id"
    }

    /// PayPal event ids (`WH-`) and refund ids are PayPal-wide.
    fn global_ids(&self) -> bool {
        true
    }

    /// `GET /v1/notifications/webhooks-events` (reconcile/paypal.rs) with
    /// the app's client id and secret. PayPal's reference names no
    /// retention for it: hookledger reads back at most 30 days.
    fn reconcile_api(&self) -> Option<ReconcileApi> {
        Some(ReconcileApi {
            base: Some("https://api-m.paypal.com"),
            retention_days: 30,
            client_credentials: true,
        })
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    fn verifies_with_certificates(&self) -> bool {
        true
    }

    fn own_keys(&self) -> &'static [&'static str] {
        &["webhook_id", "certificates"]
    }

    fn check_settings(&self, settings: &KindSettings) -> Result<(), SettingsError> {
        match settings.webhook_id.as_deref() {
            Some(id) if !id.trim().is_empty() => Ok(()),
            _ => Err(SettingsError {
                key: "webhook_id",
                message: "kind paypal needs webhook_id: this endpoint's webhook id in PayPal's \
                          developer dashboard (it is part of what PayPal signs)"
                    .to_owned(),
            }),
        }
    }

    /// A configured certificate (PEM) gives its public key; a private key
    /// (PEM, PKCS#8) is for `hookledger send` and the tests to sign with.
    fn keys_from_secret(&self, secret: &Secret) -> Result<Vec<KeyBytes>, String> {
        let pem = secret.expose();
        let der = if pem.contains("BEGIN CERTIFICATE") {
            let certificate = Certificate::from_pem(pem.as_bytes())
                .map_err(|e| format!("is not a readable certificate: {e}"))?;
            certificate
                .tbs_certificate()
                .subject_public_key_info()
                .to_der()
                .map_err(|e| format!("has an unreadable public key: {e}"))?
        } else if pem.contains("BEGIN PRIVATE KEY") {
            PrivateKey::from_pkcs8_pem(pem)
                .map_err(|e| format!("is not a readable RSA private key: {e}"))?
                .to_pkcs8_der()
                .map_err(|e| format!("cannot be encoded: {e}"))?
                .as_bytes()
                .to_vec()
        } else {
            return Err("must be a PEM certificate (or, to sign, a PEM private key)".to_owned());
        };
        Ok(vec![KeyBytes::new(der)])
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        policy: &VerifyPolicy<'_>,
        _now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let cert_url = delivery.required(CERT_URL)?;
        if !is_paypal_url(cert_url) {
            return Err(VerifyError::MalformedHeader {
                header: CERT_URL,
                problem: "not a PayPal address (https://*.paypal.com/); it is never fetched",
            });
        }
        if delivery.required(ALGORITHM)? != "SHA256withRSA" {
            return Err(VerifyError::MalformedHeader {
                header: ALGORITHM,
                problem: "only SHA256withRSA is accepted",
            });
        }
        let id = delivery.required(ID)?;
        let time = delivery.required(TIME)?;
        let signature = STANDARD
            .decode(delivery.required(SIGNATURE)?)
            .ok()
            .and_then(|bytes| Signature::try_from(bytes.as_slice()).ok())
            .ok_or(VerifyError::MalformedHeader {
                header: SIGNATURE,
                problem: "not a base64 RSA signature",
            })?;
        let webhook_id = policy.settings.webhook_id.as_deref().unwrap_or_default();
        let signed = signed_string(id, time, webhook_id, delivery.body);
        let key_index = keys
            .iter()
            .position(|key| {
                PublicKey::from_public_key_der(key.expose()).is_ok_and(|public| {
                    VerifyingKey::<Sha256>::new(public)
                        .verify(signed.as_bytes(), &signature)
                        .is_ok()
                })
            })
            .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        Ok(Verified {
            key_index,
            timestamp: rfc3339(time).map(|t| t.timestamp()),
            event_id: None,
        })
    }

    fn normalise(
        &self,
        _verified: &Verified,
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let (sequence, created) = time_order(payload.get("create_time"), "create_time");
        let mut root = payload.clone();
        if let Some(resource) = root.get_mut("resource")
            && let Some(capture) = capture_of(resource)
        {
            resource["capture_id"] = json!(capture);
        }
        let view = EventView {
            event_id: event_id_at(payload, "id")?,
            event_type: event_type_at(payload, "event_type")?,
            root: &root,
            sequence,
            explicit_sequence: false,
            occurred_at: created,
        };
        Ok(vec![map_event(view, RULES, mapping)?])
    }

    /// Signs with a private key (PKCS#8 DER, from a PEM secret).
    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let time = DateTime::from_timestamp(unsigned.timestamp, 0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let webhook_id = unsigned.settings.webhook_id.as_deref().unwrap_or_default();
        let signed = signed_string(unsigned.event_id, &time, webhook_id, &unsigned.body);
        let signature = PrivateKey::from_pkcs8_der(key.expose())
            .ok()
            .and_then(|private| {
                SigningKey::<Sha256>::new(private)
                    .try_sign(signed.as_bytes())
                    .ok()
            })
            .map(|s| STANDARD.encode(s.to_vec()))
            .unwrap_or_default();
        SignedParts {
            headers: vec![
                (ID, unsigned.event_id.to_owned()),
                (TIME, time),
                (SIGNATURE, signature),
                (CERT_URL, SAMPLE_CERT_URL.to_owned()),
                (ALGORITHM, "SHA256withRSA".to_owned()),
            ],
            body: unsigned.body,
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let created = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        let suffix: String = sample
            .event_id
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let capture = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("CAP{suffix}"));
        let value = crate::domain::Currency::parse(&sample.currency).map_or_else(
            |_| sample.amount_minor.to_string(),
            |c| crate::domain::format_minor(sample.amount_minor, c.exponent()),
        );
        let amount = json!({"currency_code": sample.currency, "value": value});
        let event_type = sample
            .event_type
            .as_deref()
            .unwrap_or("PAYMENT.CAPTURE.COMPLETED");
        let resource = if event_type == "PAYMENT.CAPTURE.REFUNDED" {
            json!({
                "id": format!("REF{suffix}"),
                "status": "COMPLETED",
                "amount": amount,
                "links": [
                    {"href": format!("https://api.paypal.com/v2/payments/refunds/REF{suffix}"), "rel": "self", "method": "GET"},
                    {"href": format!("https://api.paypal.com/v2/payments/captures/{capture}"), "rel": "up", "method": "GET"}
                ],
            })
        } else {
            json!({
                "id": capture,
                "status": "COMPLETED",
                "amount": amount,
                "custom_id": sample.account_id,
                "final_capture": true,
            })
        };
        json!({
            "id": sample.event_id,
            "event_version": "1.0",
            "create_time": created,
            "resource_type": if event_type == "PAYMENT.CAPTURE.REFUNDED" { "refund" } else { "capture" },
            "resource_version": "2.0",
            "event_type": event_type,
            "summary": "hookledger sample",
            "resource": resource,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
