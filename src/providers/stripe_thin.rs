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
//!
//! An event Stripe failed to generate never comes, is never listed, and no
//! reconcile can find it; Stripe says so afterwards with a
//! `v2.core.health.event_generation_failure.resolved` thin event ("Handle
//! webhook event generation failures"). Its data, fetched from
//! `/v2/core/events/{id}`, names the missing event's type
//! (`impact.event_type`) and object (`impact.related_object`, else the
//! event's `related_object`; its API path made from its type and id, since
//! the guide shows the url as a Dashboard link): hookledger fetches the
//! object and maps the snapshot event it stands for, under the health
//! event's id.

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
    /// A health event saying an event failed to generate: its type and
    /// object are in its data, still to be fetched (`related_*` empty).
    pub generation_failed: bool,
}

/// The thin type of Stripe's notice that it failed to generate an event.
pub const GENERATION_FAILED: &str = "v2.core.health.event_generation_failure.resolved";

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
    let created = text("/created")
        .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.timestamp());
    let livemode = json.get("livemode").and_then(Value::as_bool);
    if thin_type == GENERATION_FAILED {
        return Ok(ThinEvent {
            event_id: event_id.to_owned(),
            event_type: thin_type.to_owned(),
            created,
            livemode,
            related_id: String::new(),
            related_url: String::new(),
            generation_failed: true,
        });
    }
    let event_type = thin_type.strip_prefix("v1.").ok_or_else(|| {
        format!("thin event type {thin_type} is not a v1 object's: hookledger maps v1 types")
    })?;
    let (related_id, related_url) = related(json, "/related_object")?;
    Ok(ThinEvent {
        event_id: event_id.to_owned(),
        event_type: event_type.to_owned(),
        created,
        livemode,
        related_id,
        related_url,
        generation_failed: false,
    })
}

/// The object an event names at `at` (`{id, type, url}`): its id and
/// path, a `/v1/` one only.
fn related(json: &Value, at: &str) -> Result<(String, String), String> {
    let text = |field: &str| {
        json.pointer(&format!("{at}/{field}"))
            .and_then(Value::as_str)
    };
    let id = text("id").ok_or_else(|| format!("an event without {at}/id"))?;
    let url = text("url").ok_or_else(|| format!("an event without {at}/url"))?;
    if !safe_path(url) {
        return Err(format!("{at}/url {url:?} is not a /v1/ API path"));
    }
    Ok((id.to_owned(), url.to_owned()))
}

/// The object a generation failure names at `at`: its `/v1/` path if it
/// gives one, else the path its `type` and `id` make (Stripe's guide shows
/// the impact's `url` as a Dashboard link, not an API path).
fn impact_object(event: &Value, at: &str) -> Result<(String, String), String> {
    if let Ok(found) = related(event, at) {
        return Ok(found);
    }
    let text = |field: &str| {
        event
            .pointer(&format!("{at}/{field}"))
            .and_then(Value::as_str)
    };
    let id = text("id").ok_or_else(|| format!("an event without {at}/id"))?;
    let kind = text("type").ok_or_else(|| format!("an event without {at}/type"))?;
    let collection = match kind {
        "payment_intent" => "payment_intents",
        "charge" => "charges",
        "refund" => "refunds",
        "dispute" => "disputes",
        "invoice" => "invoices",
        "checkout.session" => "checkout/sessions",
        other => {
            return Err(format!(
                "{at}/type {other:?} is not an object hookledger fetches"
            ));
        }
    };
    let path = format!("/v1/{collection}/{id}");
    if !safe_path(&path) || id.contains('/') {
        return Err(format!("{at}/id {id:?} is not a Stripe id"));
    }
    Ok((id.to_owned(), path))
}

/// `health`, a generation-failure notice, as the event that failed: the
/// type and object its fetched v2 event (`event`) names, under the
/// notice's id.
pub fn failed_event(health: &ThinEvent, event: &Value) -> Result<ThinEvent, String> {
    let event_type = event
        .pointer("/data/impact/event_type")
        .and_then(Value::as_str)
        .ok_or("the generation failure names no data.impact.event_type")?;
    let (related_id, related_url) = impact_object(event, "/data/impact/related_object")
        .or_else(|_| impact_object(event, "/related_object"))?;
    Ok(ThinEvent {
        event_type: event_type.to_owned(),
        related_id,
        related_url,
        generation_failed: false,
        ..health.clone()
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
    fn a_generation_failure_stands_for_the_event_it_names() {
        let notice = json!({"id": "evt_health_1", "object": "v2.core.event",
            "type": GENERATION_FAILED, "created": "2026-11-28T04:00:00.000Z"});
        let health = thin_event(notice.to_string().as_bytes()).unwrap().unwrap();
        assert!(health.generation_failed);
        let fetched = json!({"id": "evt_health_1", "type": GENERATION_FAILED,
            "related_object": {"id": "pi_9", "type": "payment_intent",
                               "url": "/v1/payment_intents/pi_9"},
            "data": {"impact": {"event_type": "payment_intent.succeeded"}}});
        let failed = failed_event(&health, &fetched).unwrap();
        assert_eq!(failed.event_id, "evt_health_1");
        assert_eq!(failed.event_type, "payment_intent.succeeded");
        assert_eq!(failed.related_url, "/v1/payment_intents/pi_9");
        assert!(!failed.generation_failed);
        // The object named in the impact, its url a Dashboard link: the
        // path comes from its type and id.
        let inner = json!({"data": {"impact": {"event_type": "charge.refunded",
            "related_object": {"id": "ch_1", "type": "charge",
                               "url": "https://dashboard.stripe.com/charges/ch_1"}}}});
        let failed = failed_event(&health, &inner).unwrap();
        assert_eq!(failed.related_id, "ch_1");
        assert_eq!(failed.related_url, "/v1/charges/ch_1");
        for bad in [
            json!({"data": {}}),
            json!({"data": {"impact": {"event_type": "x"}}}),
            json!({"data": {"impact": {"event_type": "x",
                "related_object": {"id": "a", "url": "https://evil.example/v1/x"}}}}),
            json!({"data": {"impact": {"event_type": "x",
                "related_object": {"id": "../v1/customers", "type": "charge"}}}}),
            json!({"data": {"impact": {"event_type": "x",
                "related_object": {"id": "acct_1", "type": "account"}}}}),
        ] {
            assert!(failed_event(&health, &bad).is_err(), "{bad}");
        }
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
