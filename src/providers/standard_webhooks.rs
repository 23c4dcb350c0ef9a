//! Standard Webhooks (the spec behind Svix, Polar and others), also
//! hookledger's own format for in-house senders. Headers `webhook-id`,
//! `webhook-timestamp`, `webhook-signature` (a space-separated list of
//! `v1,<base64>`); HMAC-SHA256 over `{id}.{timestamp}.{raw body}` keyed with
//! the base64-decoded secret after `whsec_`. Svix's `svix-*` header names are
//! accepted as a set too. Source: ../shared/providers.md 2.2.
//!
//! hookledger's payload: `{"type": "balance.credit" | "balance.debit",
//! "timestamp"?, "data": {"account_id", "amount_minor", "currency",
//! "sequence"?}}`. The sequence is `data.sequence`; without it, the event time
//! in the body's `timestamp` (the spec's recommended field, whole seconds);
//! without that, the signed delivery timestamp. The body time comes first
//! because a provider re-signs every retry with a fresh timestamp: an old
//! event retried after a newer one would otherwise look newer.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_PAD_INDIFFERENT};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{
    Delivery, MapError, Mapping, Provider, Sample, Verified, VerifyError, check_tolerance,
    event_type_field, from_unix_seconds, hmac_sha256, parse_unix_seconds,
};
use crate::domain::{Direction, EventId, Movement, NormalisedEvent, PostingFields};
use crate::secret::{KeyBytes, Secret};

const CREDIT_TYPE: &str = "balance.credit";
const DEBIT_TYPE: &str = "balance.debit";

pub struct StandardWebhooks;

/// The three headers, under one naming scheme.
struct HeaderNames {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const STANDARD_NAMES: HeaderNames = HeaderNames {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};
const SVIX_NAMES: HeaderNames = HeaderNames {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

fn required<'a>(delivery: &'a Delivery<'_>, name: &'static str) -> Result<&'a str, VerifyError> {
    delivery
        .headers
        .header(name)
        .ok_or(VerifyError::MissingHeader(name))
}

/// `data.sequence`, else the body's event time, else the signed timestamp.
fn sequence(
    data: Option<&Value>,
    event_time: &Result<Option<DateTime<Utc>>, String>,
    signed_timestamp: Option<i64>,
) -> Result<i64, String> {
    match data.and_then(|d| d.get("sequence")) {
        Some(Value::Null) | None => match event_time {
            Ok(Some(time)) => Ok(time.timestamp()),
            Ok(None) => signed_timestamp.ok_or_else(|| "no sequence and no timestamp".to_owned()),
            Err(problem) => Err(problem.clone()),
        },
        Some(value) => value
            .as_i64()
            .ok_or_else(|| "sequence must be an integer".to_owned()),
    }
}

impl Provider for StandardWebhooks {
    fn kind(&self) -> &'static str {
        "standard-webhooks"
    }

    fn default_tolerance_secs(&self) -> u64 {
        300
    }

    fn default_account_path(&self) -> &'static str {
        "data.account_id"
    }

    fn key_from_secret(&self, secret: &Secret) -> Result<KeyBytes, String> {
        let encoded = secret
            .expose()
            .strip_prefix("whsec_")
            .unwrap_or(secret.expose());
        match STANDARD_PAD_INDIFFERENT.decode(encoded) {
            Ok(bytes) if !bytes.is_empty() => Ok(KeyBytes::new(bytes)),
            _ => Err("must be whsec_ followed by base64 key bytes".to_owned()),
        }
    }

    fn verify(
        &self,
        delivery: &Delivery<'_>,
        keys: &[KeyBytes],
        tolerance_secs: u64,
        now: DateTime<Utc>,
    ) -> Result<Verified, VerifyError> {
        let names = if delivery.headers.header(STANDARD_NAMES.signature).is_none()
            && delivery.headers.header(SVIX_NAMES.signature).is_some()
        {
            &SVIX_NAMES
        } else {
            &STANDARD_NAMES
        };
        let id = required(delivery, names.id)?;
        let timestamp_text = required(delivery, names.timestamp)?;
        let signature = required(delivery, names.signature)?;
        // The spec forbids '.' in the id: it separates the signed parts.
        if id.is_empty() || id.contains('.') {
            return Err(VerifyError::MalformedHeader {
                header: names.id,
                problem: "must be non-empty and contain no '.'",
            });
        }
        let timestamp = parse_unix_seconds(timestamp_text).ok_or(VerifyError::MalformedHeader {
            header: names.timestamp,
            problem: "not a unix timestamp",
        })?;
        let mut saw_v1 = false;
        let candidates: Vec<Vec<u8>> = signature
            .split_whitespace()
            .filter_map(|entry| entry.strip_prefix("v1,"))
            .inspect(|_| saw_v1 = true)
            .filter_map(|tag| STANDARD.decode(tag).ok())
            .collect();
        if !saw_v1 {
            return Err(VerifyError::MalformedHeader {
                header: names.signature,
                problem: "no v1,<base64> signature",
            });
        }
        check_tolerance(timestamp, tolerance_secs, now)?;
        let signed = [
            id.as_bytes(),
            b".",
            timestamp_text.as_bytes(),
            b".",
            delivery.body,
        ];
        let key_index = hmac_sha256::find_matching_key(keys, &signed, &candidates)
            .ok_or(VerifyError::NoMatch { keys: keys.len() })?;
        Ok(Verified {
            key_index,
            timestamp: Some(timestamp),
            event_id: Some(id.to_owned()),
        })
    }

    fn normalise(
        &self,
        verified: &Verified,
        payload: &Value,
        mapping: &Mapping,
    ) -> Result<NormalisedEvent, MapError> {
        let event_id = EventId::parse(
            verified
                .event_id
                .as_deref()
                .ok_or(MapError::MissingEventId("webhook-id"))?,
        )?;
        let event_type = event_type_field(payload, "type")?;
        let direction = match event_type.as_str() {
            CREDIT_TYPE => Some(Direction::Credit),
            DEBIT_TYPE => Some(Direction::Debit),
            _ => None,
        };
        let data = payload.get("data");
        let event_time = match payload.get("timestamp") {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| Some(t.with_timezone(&Utc)))
                .ok_or_else(|| "timestamp is not an RFC 3339 time".to_owned()),
        };
        let movement = match direction {
            None => Movement::None,
            Some(direction) => PostingFields {
                direction,
                account_path: mapping.account_path.as_str(),
                account: mapping.account_path.lookup(payload),
                currency: data.and_then(|d| d.get("currency")),
                amount: data.and_then(|d| d.get("amount_minor")),
                sequence: sequence(data, &event_time, verified.timestamp),
            }
            .into_movement(),
        };
        let occurred_at = event_time
            .ok()
            .flatten()
            .or_else(|| verified.timestamp.and_then(from_unix_seconds));
        Ok(NormalisedEvent {
            event_id,
            event_type,
            object_id: None,
            occurred_at,
            movement,
        })
    }

    fn sign(
        &self,
        key: &KeyBytes,
        body: &[u8],
        event_id: &str,
        timestamp: i64,
    ) -> Vec<(&'static str, String)> {
        let t = timestamp.to_string();
        let tag = hmac_sha256::sign(key, &[event_id.as_bytes(), b".", t.as_bytes(), b".", body]);
        vec![
            (STANDARD_NAMES.id, event_id.to_owned()),
            (STANDARD_NAMES.timestamp, t),
            (
                STANDARD_NAMES.signature,
                format!("v1,{}", STANDARD.encode(tag)),
            ),
        ]
    }

    fn sample_body(&self, sample: &Sample) -> Vec<u8> {
        let mut data = json!({
            "account_id": sample.account_id,
            "amount_minor": sample.amount_minor,
            "currency": sample.currency,
        });
        if let Some(sequence) = sample.sequence {
            data["sequence"] = json!(sequence);
        }
        let timestamp = from_unix_seconds(sample.timestamp).map(|t| t.to_rfc3339());
        json!({
            "type": sample.event_type.as_deref().unwrap_or(CREDIT_TYPE),
            "timestamp": timestamp,
            "data": data,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{HeaderPairs, JsonPath};

    /// Official vectors from the Standard Webhooks repository
    /// (../shared/providers.md 2.2): (secret, msg_id, timestamp, payload, signature).
    const VECTORS: [(&str, &str, i64, &str, &str); 2] = [
        (
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            r#"{"test": 2432232314}"#,
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ),
        (
            "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1_649_367_553,
            r#"{"email":"test@example.com","username":"test_user"}"#,
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
        ),
    ];

    fn key(secret: &str) -> KeyBytes {
        StandardWebhooks
            .key_from_secret(&Secret::new(secret))
            .unwrap()
    }

    fn verify(
        headers: &[(&str, &str)],
        body: &str,
        keys: &[KeyBytes],
        now: i64,
    ) -> Result<Verified, VerifyError> {
        let delivery = Delivery {
            headers: &HeaderPairs(headers),
            body: body.as_bytes(),
        };
        StandardWebhooks.verify(
            &delivery,
            keys,
            300,
            DateTime::from_timestamp(now, 0).unwrap(),
        )
    }

    #[test]
    fn official_vectors_verify_and_are_reproduced_by_our_signer() {
        for (secret, id, ts, body, signature) in VECTORS {
            let t = ts.to_string();
            let headers = [
                ("webhook-id", id),
                ("webhook-timestamp", t.as_str()),
                ("webhook-signature", signature),
            ];
            let verified = verify(&headers, body, &[key(secret)], ts).unwrap();
            assert_eq!(verified.event_id.as_deref(), Some(id));
            let signed = StandardWebhooks.sign(&key(secret), body.as_bytes(), id, ts);
            assert_eq!(signed[2], ("webhook-signature", signature.to_owned()));
        }
    }

    #[test]
    fn official_negative_vectors_fail() {
        let (secret, id, ts, body, _) = VECTORS[0];
        let t = ts.to_string();
        for bad in [
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=",
            "v1,R3PTzyfHASBKHH98a7yexTwaJ4yNIcGhFQc1yuN+BPU=",
        ] {
            let headers = [
                ("webhook-id", id),
                ("webhook-timestamp", t.as_str()),
                ("webhook-signature", bad),
            ];
            assert_eq!(
                verify(&headers, body, &[key(secret)], ts),
                Err(VerifyError::NoMatch { keys: 1 })
            );
        }
    }

    #[test]
    fn any_listed_signature_and_svix_names_are_accepted() {
        let (secret, id, ts, body, signature) = VECTORS[0];
        let t = ts.to_string();
        let list = format!("v1a,AAAA v1,bm90LWl0 {signature}");
        let headers = [
            ("svix-id", id),
            ("svix-timestamp", t.as_str()),
            ("svix-signature", list.as_str()),
        ];
        let keys = [key("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"), key(secret)];
        assert_eq!(verify(&headers, body, &keys, ts).unwrap().key_index, 1);
    }

    #[test]
    fn bad_headers_and_times_are_refused() {
        let (secret, id, ts, body, signature) = VECTORS[0];
        let t = ts.to_string();
        let keys = [key(secret)];
        let with = |id: &'static str, t: &str, sig: &str| -> Result<Verified, VerifyError> {
            verify(
                &[
                    ("webhook-id", id),
                    ("webhook-timestamp", t),
                    ("webhook-signature", sig),
                ],
                body,
                &keys,
                ts,
            )
        };
        assert!(matches!(
            with("a.b", &t, signature),
            Err(VerifyError::MalformedHeader {
                header: "webhook-id",
                ..
            })
        ));
        assert!(matches!(
            with(id, "soon", signature),
            Err(VerifyError::MalformedHeader {
                header: "webhook-timestamp",
                ..
            })
        ));
        assert!(matches!(
            with(id, &t, "garbage"),
            Err(VerifyError::MalformedHeader {
                header: "webhook-signature",
                ..
            })
        ));
        let old = (ts - 600).to_string();
        assert!(matches!(
            with(id, &old, signature),
            Err(VerifyError::OutsideTolerance { skew_secs: 600, .. })
        ));
        assert_eq!(
            verify(&[("webhook-id", id)], body, &keys, ts),
            Err(VerifyError::MissingHeader("webhook-timestamp"))
        );
    }

    #[test]
    fn secrets_must_be_base64() {
        assert!(
            StandardWebhooks
                .key_from_secret(&Secret::new("whsec_not base64!"))
                .is_err()
        );
        assert!(
            StandardWebhooks
                .key_from_secret(&Secret::new("whsec_"))
                .is_err()
        );
        // Padding is optional, as in the reference libraries.
        assert_eq!(key("whsec_YWJj").expose(), b"abc");
        assert_eq!(key("YWI").expose(), b"ab");
    }

    fn normalise(body: &str, timestamp: i64) -> NormalisedEvent {
        let payload: Value = serde_json::from_str(body).unwrap();
        let verified = Verified {
            key_index: 0,
            timestamp: Some(timestamp),
            event_id: Some("msg_1".into()),
        };
        let mapping = Mapping {
            account_path: JsonPath::parse("data.account_id").unwrap(),
        };
        StandardWebhooks
            .normalise(&verified, &payload, &mapping)
            .unwrap()
    }

    #[test]
    fn credits_and_debits_with_sequence_defaulting_to_the_timestamp() {
        let body = r#"{"type":"balance.debit","data":{"account_id":"a","amount_minor":5,"currency":"JPY"}}"#;
        let Movement::Post(posting) = normalise(body, 1_700_000_000).movement else {
            panic!("expected a posting");
        };
        assert_eq!(posting.direction, Direction::Debit);
        assert_eq!(
            (posting.amount.minor(), posting.sequence),
            (5, 1_700_000_000)
        );
        let body = r#"{"type":"balance.credit","data":{"account_id":"a","amount_minor":5,"currency":"USD","sequence":42}}"#;
        let Movement::Post(posting) = normalise(body, 1_700_000_000).movement else {
            panic!("expected a posting");
        };
        assert_eq!(
            (posting.direction, posting.sequence),
            (Direction::Credit, 42)
        );
    }

    #[test]
    fn the_body_event_time_outranks_the_signed_delivery_time() {
        // A retry is re-signed later; the event time in the body does not move.
        let body = r#"{"type":"balance.credit","timestamp":"2023-11-14T22:13:20.750Z","data":{"account_id":"a","amount_minor":5,"currency":"USD"}}"#;
        let event = normalise(body, 1_800_000_000);
        let Movement::Post(posting) = event.movement else {
            panic!("expected a posting");
        };
        assert_eq!(posting.sequence, 1_700_000_000);
        assert_eq!(
            event.occurred_at.map(|t| t.timestamp_millis()),
            Some(1_700_000_000_750)
        );
        let body = r#"{"type":"balance.credit","timestamp":"yesterday","data":{"account_id":"a","amount_minor":5,"currency":"USD"}}"#;
        let Movement::Rejected(rejection) = normalise(body, 1).movement else {
            panic!("expected a rejection");
        };
        assert_eq!(rejection.reason, "timestamp is not an RFC 3339 time");
    }

    #[test]
    fn unknown_types_are_ignored_and_bad_fields_rejected() {
        assert_eq!(
            normalise(r#"{"type":"user.created","data":{}}"#, 1).movement,
            Movement::None
        );
        let body = r#"{"type":"balance.credit","data":{"account_id":"a","amount_minor":"15","currency":"USD","sequence":1.5}}"#;
        let Movement::Rejected(rejection) = normalise(body, 1).movement else {
            panic!("expected a rejection");
        };
        assert_eq!(
            rejection.reason,
            "amount must be a JSON integer of minor units, not a string; sequence must be an integer"
        );
    }
}
