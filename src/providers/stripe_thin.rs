//! Stripe thin events (event destinations): a small, unversioned
//! notification, `"object": "v2.core.event"`, naming the object that
//! changed (`related_object: {id, type, url}`) instead of carrying it. It
//! is signed exactly as a snapshot event is (`Stripe-Signature`). For a v1
//! type (`v1.payment_intent.succeeded`) hookledger fetches the object and
//! maps the snapshot event of the same type (`payment_intent.succeeded`,
//! the object at `data.object`), so every setting applies unchanged. This
//! file only reads the notification and builds the snapshot; the fetch is
//! `thin`'s. Source: Stripe's docs, "Event destinations: thin events" and
//! the v2 Event object's attributes (`id`, `object`, `type`, `created`, an
//! RFC 3339 time, `livemode`, `context`, `related_object`).

use chrono::DateTime;
use serde_json::{Value, json};

/// A thin notification of a v1 object's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThinEvent {
    pub event_id: String,
    /// The snapshot type it stands for (`payment_intent.succeeded`).
    pub event_type: String,
    /// Unix seconds, when Stripe says.
    pub created: Option<i64>,
    pub livemode: Option<bool>,
    pub related_id: String,
    /// The object's API path (`/v1/payment_intents/pi_...`).
    pub related_url: String,
}

/// `Some` when `body` is a thin notification: the event, or why it cannot
/// be read as one hookledger maps.
pub fn thin_event(body: &[u8]) -> Option<Result<ThinEvent, String>> {
    let json: Value = serde_json::from_slice(body).ok()?;
    if json.get("object").and_then(Value::as_str) != Some("v2.core.event") {
        return None;
    }
    Some(read(&json))
}

fn read(json: &Value) -> Result<ThinEvent, String> {
    let text = |pointer: &str| json.pointer(pointer).and_then(Value::as_str);
    let event_id = text("/id").ok_or("a thin event without a string id")?;
    let thin_type = text("/type").ok_or("a thin event without a string type")?;
    let event_type = thin_type.strip_prefix("v1.").ok_or_else(|| {
        format!("thin event type {thin_type} is not a v1 object's: hookledger maps v1 types")
    })?;
    let related_id = text("/related_object/id").ok_or("a thin event without related_object.id")?;
    let related_url =
        text("/related_object/url").ok_or("a thin event without related_object.url")?;
    if !safe_path(related_url) {
        return Err(format!(
            "related_object.url {related_url:?} is not a /v1/ API path"
        ));
    }
    Ok(ThinEvent {
        event_id: event_id.to_owned(),
        event_type: event_type.to_owned(),
        created: text("/created")
            .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
            .map(|at| at.timestamp()),
        livemode: json.get("livemode").and_then(Value::as_bool),
        related_id: related_id.to_owned(),
        related_url: related_url.to_owned(),
    })
}

/// A path on the API's own host: `/v1/` and plain segments only, so a
/// signed notification can never send the key elsewhere.
fn safe_path(url: &str) -> bool {
    url.starts_with("/v1/")
        && url.len() <= 256
        && !url.contains("..")
        && !url.contains("//")
        && url
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-' | b'.'))
}

/// The snapshot event `thin` stands for, with the fetched `object`.
pub fn snapshot(thin: &ThinEvent, object: Value) -> Value {
    json!({
        "id": thin.event_id,
        "object": "event",
        "type": thin.event_type,
        "created": thin.created,
        "livemode": thin.livemode,
        "data": {"object": object},
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn thin(url: &str, kind: &str) -> Vec<u8> {
        json!({
            "id": "evt_thin_1", "object": "v2.core.event", "type": kind,
            "created": "2026-11-28T04:00:00.000Z", "livemode": false,
            "related_object": {"id": "pi_1", "type": "payment_intent", "url": url},
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_thin_v1_event_names_its_object_and_snapshot_type() {
        let event = thin_event(&thin(
            "/v1/payment_intents/pi_1",
            "v1.payment_intent.succeeded",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(event.event_type, "payment_intent.succeeded");
        assert_eq!(event.related_url, "/v1/payment_intents/pi_1");
        assert_eq!(event.created, Some(1_795_838_400));
        let snapshot = snapshot(&event, json!({"id": "pi_1", "amount": 5}));
        assert_eq!(snapshot["data"]["object"]["amount"], 5);
        assert_eq!(snapshot["type"], "payment_intent.succeeded");
        assert!(
            thin_event(br#"{"object": "event", "id": "evt_1"}"#).is_none(),
            "a snapshot"
        );
    }

    #[test]
    fn a_thin_event_cannot_send_the_key_elsewhere() {
        for url in [
            "https://evil.example/v1/x",
            "//evil.example/v1/x",
            "/v1/../v2/x",
            "/v1/payment_intents/pi_1?expand=x",
            "/v1/payment_intents/pi_1@evil",
            "/v2/core/x",
        ] {
            let read = thin_event(&thin(url, "v1.payment_intent.succeeded")).unwrap();
            assert!(read.is_err(), "{url}");
        }
        let v2 = thin_event(&thin("/v1/x", "v2.core.event_destination.ping")).unwrap();
        assert!(v2.unwrap_err().contains("not a v1"));
    }
}
