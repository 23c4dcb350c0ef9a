//! Provider payloads from `tests/fixtures/<kind>/<type>.json` (fields,
//! nesting and types as each provider documents them), edited per test and
//! signed exactly as the provider signs.

use hookledger::cli::{SignedRequest, sign_body};
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, json_with_status, now};

/// The fixture, parsed.
pub fn fixture(kind: &str, name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/{kind}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Sets the value at a dotted path (an all-digit segment indexes an array),
/// which must exist.
pub fn set(root: &mut Value, path: &str, value: Value) {
    let mut at = root;
    for key in path.split('.') {
        let next = match key.parse::<usize>() {
            Ok(index) if at.is_array() => at.get_mut(index),
            _ => at.get_mut(key),
        };
        at = next.unwrap_or_else(|| panic!("no {key} on the way to {path}"));
    }
    *at = value;
}

/// The fixture with `edits` applied.
pub fn edited(kind: &str, name: &str, edits: &[(&str, Value)]) -> Value {
    let mut value = fixture(kind, name);
    for (path, new) in edits {
        set(&mut value, path, new.clone());
    }
    value
}

/// A Stripe event from its fixture, with its own event id.
pub fn stripe_event(name: &str, event_id: &str, edits: &[(&str, Value)]) -> Value {
    let mut all = vec![("id", serde_json::json!(event_id))];
    all.extend(edits.iter().cloned());
    edited("stripe", name, &all)
}

/// A Stripe `payment_intent.succeeded` crediting `payment` with `amount`.
pub fn stripe_payment(event_id: &str, payment: &str, amount: i64) -> Value {
    stripe_event(
        "payment_intent.succeeded",
        event_id,
        &[
            ("data.object.id", serde_json::json!(payment)),
            ("data.object.amount", serde_json::json!(amount)),
            ("data.object.amount_received", serde_json::json!(amount)),
        ],
    )
}

/// A Stripe `refund.created` of `amount` from `payment`.
pub fn stripe_refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    stripe_event(
        "refund.created",
        event_id,
        &[
            ("data.object.id", serde_json::json!(refund_id)),
            ("data.object.payment_intent", serde_json::json!(payment)),
            ("data.object.amount", serde_json::json!(amount)),
        ],
    )
}

/// Signs `body` as a `kind` sender with `secret`, at the test clock's time.
pub fn signed(kind: &str, secret: &str, body: &Value, event_id: &str) -> SignedRequest {
    sign_body(
        kind,
        &Secret::new(secret),
        body.to_string().into_bytes(),
        event_id,
        now().timestamp(),
    )
    .expect("body signs")
}

/// Delivers a signed body to `source`, expecting 200; the JSON answer.
pub async fn deliver_ok(app: &TestApp, source: &str, request: &SignedRequest) -> Value {
    json_with_status(app.post_signed(source, request).await, StatusCode::OK).await
}
