//! Adyen standard (payment) notifications: one request carries a batch,
//! `{"live": "...", "notificationItems": [{"NotificationRequestItem":
//! {...}}]}`, and each item is signed inside the body: its
//! `additionalData.hmacSignature` is base64 HMAC-SHA256, keyed with the
//! hex-decoded HMAC key, over eight of its fields joined with `:` (no
//! escaping): `pspReference:originalReference:merchantAccountCode:
//! merchantReference:value:currency:eventCode:success`. Every item must
//! verify, or the delivery is refused whole. No time is signed. Adyen
//! expects the body `[accepted]`. Source: ../shared/providers.md 2.7, 6.5.
//!
//! Each item is an event of its own (its own intent, all in the delivery's
//! one transaction, duplicates handled per item), stored with the item's
//! JSON as its payload. Adyen has no event id: the key is `{pspReference}:
//! {eventCode}:{success}` (a refund's `pspReference` is its own), and a
//! chargeback's is `CHARGEBACK:{pspReference}` (the dispute's reference,
//! shared by its events) so that `CHARGEBACK_REVERSED` can name the one it
//! undoes. `AUTHORISATION` with success credits `amount.value` (minor units)
//! to `additionalData.metadata.account_id` (Adyen's `metadata.<key>`
//! additional data); `REFUND` with success and `CHARGEBACK` debit the
//! payment named by `originalReference`. Items are ordered by `eventDate`.
//!
//! Adyen signs only the eight fields: `additionalData`, and so the default
//! account path, is not covered by the signature. Amounts, references and
//! the event are; a source whose merchant reference can carry the account
//! id should map `account_path = "merchantReference"`, which is signed.
//! README says so.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::delivery::Delivery;
use super::fields::{event_type_at, lookup, time_order};
use super::hmac_sha256;
use super::mapping::{MapError, Mapping, parse_json};
use super::provider::{Provider, Sample, SignedParts, Unsigned, VerifyPolicy};
use super::rules::{Amount, Condition, Effect, EventView, Key, Rule, map_event};
use super::verification::{Verified, VerifyError};
use crate::domain::{AmountFormat, Basis, EventId, NormalisedEvent};
use crate::secret::{KeyBytes, Secret};

const AMOUNT: Amount = Amount::Path {
    amount: "amount.value",
    currency: "amount.currency",
    format: AmountFormat::Minor,
};

const SUCCESS: &[Condition] = &[Condition {
    path: "success",
    values: &["true"],
}];

static RULES: &[Rule] = &[
    Rule {
        event_type: "AUTHORISATION",
        effect: Effect::Credit,
        when: SUCCESS,
        amount: AMOUNT,
        payment: "pspReference",
        object: "pspReference",
        key: Key::EventId,
        optional: false,
    },
    Rule {
        event_type: "REFUND",
        effect: Effect::Reverse(Basis::Each),
        when: SUCCESS,
        amount: AMOUNT,
        payment: "originalReference",
        object: "pspReference",
        key: Key::EventId,
        optional: false,
    },
    Rule {
        event_type: "CHARGEBACK",
        effect: Effect::Reverse(Basis::Each),
        when: SUCCESS,
        amount: AMOUNT,
        payment: "originalReference",
        object: "pspReference",
        key: Key::Field {
            prefix: "CHARGEBACK",
            path: "pspReference",
        },
        optional: false,
    },
    Rule {
        event_type: "CHARGEBACK_REVERSED",
        effect: Effect::Reinstate {
            undoes: "CHARGEBACK",
        },
        when: SUCCESS,
        amount: AMOUNT,
        payment: "originalReference",
        object: "pspReference",
        key: Key::Field {
            prefix: "CHARGEBACK_REVERSED",
            path: "pspReference",
        },
        optional: false,
    },
];

pub struct Adyen;

/// The items of a notification, each the `NotificationRequestItem` object.
fn items(payload: &Value) -> Result<Vec<&Map<String, Value>>, String> {
    let list = payload
        .get("notificationItems")
        .and_then(Value::as_array)
        .ok_or("notificationItems is missing or not an array")?;
    if list.is_empty() {
        return Err("notificationItems is empty".to_owned());
    }
    list.iter()
        .map(|entry| {
            entry
                .get("NotificationRequestItem")
                .and_then(Value::as_object)
                .ok_or_else(|| "an item lacks NotificationRequestItem".to_owned())
        })
        .collect()
}

/// A signed field as text: strings as they are, integers in decimal,
/// booleans as `true`/`false`, anything missing as empty.
fn field(item: &Map<String, Value>, path: &str) -> String {
    let (first, rest) = path
        .split_once('.')
        .map_or((path, None), |(f, r)| (f, Some(r)));
    let value = item
        .get(first)
        .and_then(|v| rest.map_or(Some(v), |rest| lookup(v, rest)));
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(flag)) => flag.to_string(),
        _ => String::new(),
    }
}

/// The string Adyen signs for an item.
fn signed_string(item: &Map<String, Value>) -> String {
    [
        "pspReference",
        "originalReference",
        "merchantAccountCode",
        "merchantReference",
        "amount.value",
        "amount.currency",
        "eventCode",
        "success",
    ]
    .map(|path| field(item, path))
    .join(":")
}

/// Which key signed this item, if any.
fn verify_item(item: &Map<String, Value>, keys: &[KeyBytes]) -> Result<usize, VerifyError> {
    let presented = item
        .get("additionalData")
        .and_then(|a| a.get("hmacSignature"))
        .and_then(Value::as_str)
        .ok_or_else(|| VerifyError::MalformedBody("an item has no hmacSignature".to_owned()))?;
    let candidates: Vec<Vec<u8>> = STANDARD.decode(presented).into_iter().collect();
    hmac_sha256::find_matching_key(keys, &[signed_string(item).as_bytes()], &candidates)
        .ok_or(VerifyError::NoMatch { keys: keys.len() })
}

/// The item as the rules read it: Adyen sends metadata as flat additional
/// data keys (`"metadata.account_id": "..."`); they are nested here
/// (`additionalData.metadata.account_id`) so a dotted path reaches them.
fn with_metadata_nested(item: &Map<String, Value>) -> Value {
    let mut item = item.clone();
    if let Some(Value::Object(additional)) = item.get_mut("additionalData") {
        let flat: Vec<(String, Value)> = additional
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("metadata.")
                    .map(|k| (k.to_owned(), v.clone()))
            })
            .collect();
        if !flat.is_empty() {
            let metadata = additional.entry("metadata").or_insert_with(|| json!({}));
            if let Value::Object(metadata) = metadata {
                metadata.extend(flat);
            }
        }
    }
    Value::Object(item)
}

fn sign_item(item: &mut Map<String, Value>, key: &KeyBytes) {
    let tag = hmac_sha256::sign(key, &[signed_string(item).as_bytes()]);
    let additional = item.entry("additionalData").or_insert_with(|| json!({}));
    if let Value::Object(additional) = additional {
        additional.insert("hmacSignature".to_owned(), json!(STANDARD.encode(tag)));
    }
}

impl Provider for Adyen {
    fn kind(&self) -> &'static str {
        "adyen"
    }

    fn default_tolerance_secs(&self) -> u64 {
        0
    }

    fn default_account_path(&self) -> &'static str {
        "additionalData.metadata.account_id"
    }

    /// Keys are built on `pspReference`, Adyen's own unique reference for a
    /// payment or modification.
    fn global_ids(&self) -> bool {
        true
    }

    fn rules(&self) -> &'static [Rule] {
        RULES
    }

    fn keys_from_secret(&self, secret: &Secret) -> Result<Vec<KeyBytes>, String> {
        match hex::decode(secret.expose()) {
            Ok(bytes) if !bytes.is_empty() => Ok(vec![KeyBytes::new(bytes)]),
            _ => Err("must be the HMAC key in hex, as Adyen's Customer Area shows it".to_owned()),
        }
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        _policy: &VerifyPolicy<'_>,
        _now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        // The same reading normalise gets: strict, last key wins; a body with
        // two readings verifies as this one and is then rejected.
        let (payload, _) =
            parse_json(delivery.body).map_err(|e| VerifyError::MalformedBody(e.to_string()))?;
        let items = items(&payload).map_err(VerifyError::MalformedBody)?;
        let mut first = None;
        for item in items {
            let index = verify_item(item, keys)?;
            first.get_or_insert(index);
        }
        Ok(Verified {
            key_index: first.unwrap_or_default(),
            timestamp: None,
            event_id: None,
        })
    }

    fn replay_body(&self, stored: &[u8]) -> Vec<u8> {
        // An item stored on its own goes back into a delivery of one; a
        // whole delivery (stored unreadable) is mapped as it came.
        match serde_json::from_slice::<Value>(stored) {
            // Nothing reads `live`; it is left out rather than guessed.
            Ok(Value::Object(item)) if !item.contains_key("notificationItems") => json!({
                "notificationItems": [{ "NotificationRequestItem": item }],
            })
            .to_string()
            .into_bytes(),
            _ => stored.to_vec(),
        }
    }

    fn normalise(
        &self,
        _verified: &Verified,
        _delivery: &Delivery<'_>,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<Vec<NormalisedEvent>, MapError> {
        let items = items(payload).map_err(MapError::Unusable)?;
        items
            .into_iter()
            .map(|item| {
                let root = with_metadata_nested(item);
                let (sequence, occurred) = time_order(item.get("eventDate"), "eventDate");
                let key = format!(
                    "{}:{}:{}",
                    field(item, "pspReference"),
                    field(item, "eventCode"),
                    field(item, "success")
                );
                let view = EventView {
                    event_id: EventId::parse(&key)?,
                    event_type: event_type_at(&root, "eventCode")?,
                    root: &root,
                    sequence,
                    explicit_sequence: false,
                    occurred_at: occurred,
                };
                let mut event = map_event(view, RULES, mapping)?;
                event.payload = Some(Value::Object(item.clone()).to_string());
                Ok(event)
            })
            .collect()
    }

    fn acknowledgement(&self) -> Option<(&'static str, &'static str)> {
        Some(("text/plain", "[accepted]"))
    }

    fn sign(&self, key: &KeyBytes, unsigned: Unsigned<'_>) -> SignedParts {
        let mut payload: Value = match serde_json::from_slice(&unsigned.body) {
            Ok(payload) => payload,
            Err(_) => {
                return SignedParts {
                    body: unsigned.body,
                    headers: Vec::new(),
                };
            }
        };
        if let Some(list) = payload
            .get_mut("notificationItems")
            .and_then(Value::as_array_mut)
        {
            for entry in list {
                if let Some(Value::Object(item)) = entry.get_mut("NotificationRequestItem") {
                    sign_item(item, key);
                }
            }
        }
        SignedParts {
            body: payload.to_string().into_bytes(),
            headers: Vec::new(),
        }
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let event_code = sample.event_type.as_deref().unwrap_or("AUTHORISATION");
        let suffix: String = sample
            .event_id
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let payment = sample
            .payment
            .clone()
            .unwrap_or_else(|| format!("PSP{suffix}"));
        let (psp, original) = if event_code == "AUTHORISATION" {
            (payment, String::new())
        } else {
            (format!("{event_code}{suffix}"), payment)
        };
        let date = DateTime::from_timestamp(sample.sequence.unwrap_or(sample.timestamp), 0)
            .unwrap_or_default()
            .to_rfc3339();
        json!({
            "live": "false",
            "notificationItems": [{"NotificationRequestItem": {
                "additionalData": {"metadata.account_id": sample.account_id},
                "amount": {"currency": sample.currency, "value": sample.amount_minor},
                "eventCode": event_code,
                "eventDate": date,
                "merchantAccountCode": "HookledgerECOM",
                "merchantReference": format!("order-{suffix}"),
                "originalReference": original,
                "paymentMethod": "visa",
                "pspReference": psp,
                "reason": "",
                "success": "true"
            }}]
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
