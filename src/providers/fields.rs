//! Reading the common parts of a provider's JSON and headers: ids, types,
//! times, and the replay window.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::mapping::MapError;
use super::verification::VerifyError;
use crate::domain::EventId;

/// A dotted path into `root` (see [`JsonPath`](super::JsonPath)); for the
/// kinds' own constant paths.
pub(crate) fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(root, |value, segment| match value {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// Rejects a signed timestamp too far from `now`, in the past or the future.
pub(crate) fn check_tolerance(
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
pub(crate) fn parse_unix_seconds(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 12 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A unix time in whole seconds as a UTC time, if it is one within the
/// years 1 to 9999: what RFC 3339 can write, and inside both backends'
/// timestamp ranges (chrono's reaches further back than PostgreSQL's).
pub(crate) fn from_unix_seconds(seconds: i64) -> Option<DateTime<Utc>> {
    const YEAR_1: i64 = -62_135_596_800;
    const YEAR_9999_END: i64 = 253_402_300_799;
    (YEAR_1..=YEAR_9999_END)
        .contains(&seconds)
        .then(|| DateTime::from_timestamp(seconds, 0))
        .flatten()
}

/// An event id from a JSON string (or integer) field.
pub(crate) fn event_id_at(payload: &Value, path: &'static str) -> Result<EventId, MapError> {
    match lookup(payload, path) {
        Some(Value::String(id)) => Ok(EventId::parse(id)?),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(EventId::parse(&n.to_string())?),
        _ => Err(MapError::MissingEventId(path)),
    }
}

/// The event type from a JSON string field; absent means "" (ignored).
pub(crate) fn event_type_at(payload: &Value, path: &str) -> Result<String, MapError> {
    match lookup(payload, path) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(t)) if t.len() <= 255 => Ok(t.clone()),
        Some(_) => Err(MapError::BadEventType),
    }
}

/// An id-like JSON value as text: a non-empty string, or an integer (as
/// Shopify and Lemon Squeezy write some ids).
pub(crate) fn id_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

/// The id of an event from a kind whose event id is unsigned (Shopify,
/// Razorpay) or absent (Lemon Squeezy), built from the signed body alone:
/// `{type}:{resource id}:{first 16 hex of sha256(body)}`. The same body is
/// the same id whatever headers come with it, so a replay is a duplicate.
/// It is the intent key of an event that moves no money: the digest part
/// keeps it from ever equalling a money key (`{prefix}:{id}`), so a harmless
/// early event (an unpaid order) can never hold the key its later credit
/// needs.
pub(crate) fn body_digest_id(
    event_type: &str,
    resource_id: Option<&Value>,
    body: &[u8],
) -> Result<EventId, MapError> {
    let resource = id_text(resource_id).unwrap_or_default();
    let digest = Sha256::digest(body);
    Ok(EventId::parse(&format!(
        "{event_type}:{resource}:{}",
        hex::encode(&digest[..8])
    ))?)
}

/// An RFC 3339 time.
pub(crate) fn rfc3339(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// An ordering key from a JSON value: an integer as it is, or an RFC 3339
/// time in microseconds since the epoch (keeps the sub-second order Paddle
/// and Square send; whole-second kinds use integers).
pub(crate) fn sequence_of(value: Option<&Value>, path: &str) -> Result<i64, String> {
    match value {
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| format!("{path} must be an integer")),
        Some(Value::String(text)) => rfc3339(text)
            .map(|t| t.timestamp_micros())
            .ok_or_else(|| format!("{path} is not an RFC 3339 time")),
        None | Some(Value::Null) => Err(format!("{path} is missing")),
        Some(_) => Err(format!("{path} must be an integer or an RFC 3339 time")),
    }
}

/// The order and time of an event that carries an RFC 3339 time (and
/// nothing else) at `value`: (the time in microseconds since the epoch,
/// which keeps sub-second order; the time). Without a readable time the
/// event cannot be ordered, and the reason names `what`.
pub(crate) fn time_order(
    value: Option<&Value>,
    what: &str,
) -> (Result<i64, String>, Option<DateTime<Utc>>) {
    let time = value.and_then(Value::as_str).and_then(rfc3339);
    let sequence = time
        .map(|t| t.timestamp_micros())
        .ok_or_else(|| format!("{what} is missing or not an RFC 3339 time"));
    (sequence, time)
}

/// The event time from an integer of unix seconds or an RFC 3339 string.
pub(crate) fn time_of(value: Option<&Value>) -> Option<DateTime<Utc>> {
    match value? {
        Value::Number(n) => n.as_i64().and_then(from_unix_seconds),
        Value::String(text) => rfc3339(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
    fn unix_times_stay_within_years_1_to_9999() {
        assert!(from_unix_seconds(-62_135_596_800).is_some());
        assert!(from_unix_seconds(253_402_300_799).is_some());
        for outside in [-62_135_596_801, 253_402_300_800, i64::MIN, i64::MAX] {
            assert_eq!(from_unix_seconds(outside), None, "{outside}");
        }
    }

    #[test]
    fn body_digest_ids_depend_on_the_body_only() {
        let id = body_digest_id("orders/create", Some(&json!(450789469)), b"{}").unwrap();
        // printf '{}' | sha256sum
        assert_eq!(id.as_str(), "orders/create:450789469:44136fa355b3678a");
        let other = body_digest_id("orders/create", Some(&json!(450789469)), b"{ }").unwrap();
        assert_ne!(id, other);
        let none = body_digest_id("x", None, b"{}").unwrap();
        assert_eq!(none.as_str(), "x::44136fa355b3678a");
    }

    #[test]
    fn sequences_keep_sub_second_order() {
        let a = sequence_of(Some(&json!("2024-04-12T10:18:49.621022Z")), "t").unwrap();
        let b = sequence_of(Some(&json!("2024-04-12T10:18:49.621023Z")), "t").unwrap();
        assert_eq!(b - a, 1);
        assert_eq!(sequence_of(Some(&json!(7)), "t"), Ok(7));
        assert!(sequence_of(Some(&json!("yesterday")), "t").is_err());
        assert!(sequence_of(None, "t").is_err());
    }

    #[test]
    fn time_orders_are_rfc_3339_only() {
        let time = json!("2024-04-12T10:18:49.621022Z");
        let (sequence, at) = time_order(Some(&time), "t");
        assert_eq!(sequence, Ok(1_712_917_129_621_022));
        assert_eq!(at.map(|t| t.timestamp_micros()), sequence.ok());
        let refused = Err("t is missing or not an RFC 3339 time".to_owned());
        for other in [
            None,
            Some(json!(7)),
            Some(json!("yesterday")),
            Some(Value::Null),
        ] {
            assert_eq!(time_order(other.as_ref(), "t"), (refused.clone(), None));
        }
    }
}
