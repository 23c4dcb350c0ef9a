use serde_json::json;

use super::*;
use crate::domain::{Direction, Link, Movement};
use crate::providers::testing;

/// A Polar secret: `whsec_` and unpadded base64 of 32 bytes (the ASCII of
/// "hookledger polar test secret key"), as Polar generates them now.
const SECRET: &str = "whsec_aG9va2xlZGdlciBwb2xhciB0ZXN0IHNlY3JldCBrZXk";
const MSG_ID: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const TS: i64 = 1_765_000_000;
const BODY: &str =
    r#"{"type":"order.paid","timestamp":"2025-12-06T05:46:40.123456Z","data":{"id":"ord_1"}}"#;
/// Polar's SDK has no signer and publishes no vector for its legacy key
/// (UTF-8 of the whole secret), so this one was computed once with Python:
/// `base64.b64encode(hmac.new(SECRET.encode(), f"{MSG_ID}.{TS}.{BODY}".encode(),
/// hashlib.sha256).digest())`.
const LEGACY_SIGNATURE: &str = "v1,3Oru7tBs0EYQCK0OsFgJA+ELlVmc2M/OxCfUv19idKE=";
/// The same with the Standard Webhooks key, computed the same way with
/// `base64.b64decode(SECRET[6:] + "=")` as the HMAC key.
const STANDARD_SIGNATURE: &str = "v1,N+QbYeZwWlb7+wceRe2ZiRYgtpzp3qXZCbe0GUzSxsY=";

/// The Standard Webhooks official vectors (../shared/providers.md 2.2): a
/// Polar secret generated since 2026-09-08 signs exactly so.
const STANDARD_VECTOR: (&str, &str, i64, &str, &str) = (
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "msg_p5jXN8AQM9LWM0D4loKWxJek",
    1_614_265_330,
    r#"{"test": 2432232314}"#,
    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
);

fn keys(secret: &str) -> Vec<KeyBytes> {
    Polar.keys_from_secret(&Secret::new(secret)).unwrap()
}

fn verify(
    id: &str,
    ts: i64,
    signature: &str,
    body: &str,
    keys: &[KeyBytes],
    now: i64,
) -> Result<Verified, VerifyError> {
    let t = ts.to_string();
    let headers = [
        ("webhook-id", id),
        ("webhook-timestamp", t.as_str()),
        ("webhook-signature", signature),
    ];
    testing::verify(&Polar, &headers, body.as_bytes(), keys, now)
}

#[test]
fn a_secret_stands_for_its_legacy_and_its_standard_key() {
    let both = keys(SECRET);
    assert_eq!(both.len(), 2);
    assert_eq!(both[0].expose(), SECRET.as_bytes(), "legacy first");
    assert_eq!(both[1].expose(), keys(SECRET)[1].expose());
    assert_eq!(
        both[1].expose(),
        testing::key(&StandardWebhooks, SECRET).expose()
    );
    // Secrets that are not base64 after `whsec_` have the legacy key only.
    assert_eq!(keys("polar_whs_Zk3o9Qx-7aB").len(), 1);
    assert!(Polar.keys_from_secret(&Secret::new("")).is_err());
}

#[test]
fn the_no_official_vector_python_signatures_verify_and_our_signer_reproduces_legacy() {
    let verified = verify(MSG_ID, TS, LEGACY_SIGNATURE, BODY, &keys(SECRET), TS).unwrap();
    assert_eq!(
        (
            verified.key_index,
            verified.timestamp,
            verified.event_id.as_deref()
        ),
        (0, Some(TS), Some(MSG_ID))
    );
    let standard = verify(MSG_ID, TS, STANDARD_SIGNATURE, BODY, &keys(SECRET), TS).unwrap();
    assert_eq!(standard.key_index, 1);
    let signed = testing::sign(&Polar, &keys(SECRET)[0], BODY.as_bytes(), MSG_ID, TS);
    assert_eq!(
        signed.headers,
        vec![
            ("webhook-id", MSG_ID.to_owned()),
            ("webhook-timestamp", TS.to_string()),
            ("webhook-signature", LEGACY_SIGNATURE.to_owned()),
        ]
    );
}

#[test]
fn the_official_standard_webhooks_vector_verifies_with_the_standard_key() {
    let (secret, id, ts, body, signature) = STANDARD_VECTOR;
    let verified = verify(id, ts, signature, body, &keys(secret), ts).unwrap();
    assert_eq!(verified.key_index, 1, "the second key of the secret");
    // Rotation: another secret's keys first; the index is among all keys.
    let mut rotated = keys(SECRET);
    rotated.extend(keys(secret));
    assert_eq!(
        verify(id, ts, signature, body, &rotated, ts)
            .unwrap()
            .key_index,
        3
    );
    let tampered = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=";
    assert_eq!(
        verify(id, ts, tampered, body, &keys(secret), ts),
        Err(VerifyError::NoMatch { keys: 2 })
    );
}

#[test]
fn the_window_is_five_minutes_each_way() {
    let keys = keys(SECRET);
    for skew in [300, -300] {
        assert!(verify(MSG_ID, TS, LEGACY_SIGNATURE, BODY, &keys, TS + skew).is_ok());
    }
    for skew in [301, -301] {
        assert!(matches!(
            verify(MSG_ID, TS, LEGACY_SIGNATURE, BODY, &keys, TS + skew),
            Err(VerifyError::OutsideTolerance {
                tolerance_secs: 300,
                ..
            })
        ));
    }
}

fn sample(event_type: Option<&str>, amount_minor: i64) -> Sample {
    Sample {
        event_id: MSG_ID.into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("b6f1a7c0-3c3e-4a56-9a7e-1f0b2d3c4e5f".into()),
    }
}

fn body(event_type: Option<&str>, amount_minor: i64) -> Value {
    serde_json::from_slice(&Polar.sample_body(&sample(event_type, amount_minor))).unwrap()
}

fn normalise(payload: &Value, webhook_id: &str) -> NormalisedEvent {
    let verified = testing::verified(Some(webhook_id), Some(TS));
    testing::normalise(&Polar, &verified, &[], payload).unwrap()
}

#[test]
fn a_paid_order_credits_its_total_once_per_order() {
    let event = normalise(&body(None, 2500), "msg_a");
    assert_eq!(
        event.event_id.as_str(),
        "order.paid:b6f1a7c0-3c3e-4a56-9a7e-1f0b2d3c4e5f"
    );
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(posting.direction, Direction::Credit);
    assert_eq!(
        (
            posting.account.as_str(),
            posting.currency.code(),
            posting.amount.minor()
        ),
        ("acct_1", "USD", 2500)
    );
    assert_eq!(
        posting.link,
        Link::Pays("b6f1a7c0-3c3e-4a56-9a7e-1f0b2d3c4e5f".into())
    );
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000, "microseconds");
    // The same order under another webhook id: the same key.
    let again = normalise(&body(None, 2500), "msg_b");
    assert_eq!(again.event_id, event.event_id);
}

#[test]
fn a_refund_reverses_the_running_total_with_its_tax() {
    let mut refund = body(Some(REFUNDED), 1000);
    refund["data"]["refunded_tax_amount"] = json!(200);
    let event = normalise(&refund, "msg_r1");
    assert_eq!(event.event_id.as_str(), "msg_r1");
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal: {:?}", event.movement);
    };
    assert_eq!(request.reversal.basis, Basis::Total);
    assert_eq!(
        request.reversal.payment_ref,
        "b6f1a7c0-3c3e-4a56-9a7e-1f0b2d3c4e5f"
    );
    assert_eq!(request.signed_amount(), -1200, "1000 + 200 of tax so far");
    assert_eq!(request.currency.code(), "USD");
}

#[test]
fn a_refund_without_a_usable_total_is_held() {
    for bad in [json!(null), json!(10.5), json!(-1), json!("1000")] {
        let mut refund = body(Some(REFUNDED), 1000);
        refund["data"]["refunded_amount"] = bad.clone();
        let Movement::Rejected(rejection) = normalise(&refund, "msg_r").movement else {
            panic!("held: {bad}");
        };
        assert!(
            rejection.reason.starts_with("data.refunded_amount"),
            "{}",
            rejection.reason
        );
    }
}

#[test]
fn other_types_are_ignored_under_their_webhook_id() {
    for event_type in ["order.created", "order.updated", "refund.created"] {
        let mut other = body(None, 2500);
        other["type"] = json!(event_type);
        let event = normalise(&other, "msg_other");
        assert_eq!(event.movement, Movement::None, "{event_type}");
        assert_eq!(event.event_id.as_str(), "msg_other");
    }
    let verified = testing::verified(None, Some(TS));
    assert_eq!(
        testing::normalise(&Polar, &verified, &[], &body(None, 1)),
        Err(MapError::MissingEventId("webhook-id"))
    );
}
