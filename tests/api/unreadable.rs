//! Verified means stored, for bodies that cannot be read as events at all:
//! kept byte for byte as one `rejected` event keyed by their digest.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hookledger::cli::sign_body;
use hookledger::secret::Secret;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{Backend, STRIPE_SECRET, TestApp, json_with_status, now};

/// The payload the admin API shows, as bytes: text when it is UTF-8, else
/// base64.
pub fn stored_bytes(event: &Value) -> Vec<u8> {
    match event["payload"].as_str() {
        Some(text) => text.as_bytes().to_vec(),
        None => STANDARD
            .decode(
                event["payload_base64"]
                    .as_str()
                    .expect("payload or payload_base64"),
            )
            .unwrap(),
    }
}

/// Verified means stored: an authentic body that cannot be read as events
/// is kept, bytes and all, as one `rejected` event keyed by its bytes,
/// answered 200, never applied.
async fn authentic_bodies_that_are_not_usable_json_are_stored_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let cases: [(&str, &[u8], &str); 5] = [
        ("msg_empty", b"", "unreadable: body is not valid JSON"),
        (
            "msg_bytes",
            b"\xff\xfe\x00not utf-8",
            "unreadable: body is not valid JSON",
        ),
        (
            "msg_comma",
            b"{\"type\": \"balance.credit\",}",
            "unreadable: body is not valid JSON",
        ),
        (
            "msg_array",
            b"[1, 2]",
            "unreadable: body must be a JSON object",
        ),
        (
            "msg_type",
            b"{\"type\": 7}",
            "unreadable: event type must be a string of at most 255 bytes",
        ),
    ];
    for (id, body, reason) in cases {
        let answer =
            json_with_status(app.deliver_body("demo", id, body).await, StatusCode::OK).await;
        assert_eq!(answer["status"], "rejected", "{id}: {answer}");
        let key = format!("unreadable:{}", hookledger::receive::sha256_hex(body));
        assert_eq!(answer["event_id"], key.as_str(), "{id}: keyed by its bytes");
        let event = app.event("demo", &key).await;
        assert_eq!(event["status"], "rejected", "{id}: {event}");
        assert_eq!(event["event_type"], "unreadable", "{id}");
        assert!(
            event["reason"].as_str().unwrap().starts_with(reason),
            "{id}: {event}"
        );
        assert_eq!(
            stored_bytes(&event),
            body,
            "{id}: the bytes are kept exactly"
        );
        // A redelivery is a duplicate, not a second row, even under another
        // per-attempt id.
        let retry = format!("{id}-retry");
        let again =
            json_with_status(app.deliver_body("demo", &retry, body).await, StatusCode::OK).await;
        assert_eq!(again["duplicate"], true, "{id}: {again}");
    }
    assert_eq!(app.events().await.len(), cases.len());
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

/// A Stripe body without an id has nothing signed to key it by but its
/// bytes: stored under `unreadable:{sha256}`, so the same body again is a
/// duplicate.
async fn a_stripe_event_without_an_id_is_stored_rejected(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = br#"{"type":"payment_intent.succeeded","created":1,"data":{"object":{}}}"#.to_vec();
    let key = format!("unreadable:{}", hookledger::receive::sha256_hex(&body));
    for duplicate in [false, true] {
        let request = sign_body(
            "stripe",
            &Secret::new(STRIPE_SECRET),
            body.clone(),
            "",
            now().timestamp(),
        )
        .unwrap();
        let answer =
            json_with_status(app.post_signed("stripe", &request).await, StatusCode::OK).await;
        assert_eq!(answer["status"], "rejected", "{answer}");
        assert_eq!(answer["event_id"], key.as_str(), "{answer}");
        assert_eq!(answer["duplicate"], duplicate, "{answer}");
    }
    let event = app.event("stripe", &key).await;
    assert_eq!(event["reason"], "unreadable: event id is missing (id)");
    assert_eq!(app.events().await.len(), 1);
    app.assert_invariants().await;
}

crate::both_backends!(
    authentic_bodies_that_are_not_usable_json_are_stored_rejected,
    a_stripe_event_without_an_id_is_stored_rejected,
);
