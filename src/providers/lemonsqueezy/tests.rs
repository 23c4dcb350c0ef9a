use serde_json::json;

use super::*;
use crate::domain::{Direction, Link, Movement};
use crate::providers::testing;

const SECRET: &str = "Lemon-Test-Secret-42";
const BODY: &[u8] = br#"{"meta":{"event_name":"order_created","custom_data":{"account_id":"acct_1"}},"data":{"type":"orders","id":"1","attributes":{"currency":"USD","total":1199,"status":"paid"}}}"#;
/// Lemon Squeezy publishes no vector and no signer (providers.md 2.9), so
/// this one was computed once with Python's own HMAC:
/// `hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()`.
const COMPUTED_SIGNATURE: &str = "e6c1b53fd8ad1fd1ce07cfa576bc5b8e49c70603569a03853374d4f728c23932";

fn key(secret: &str) -> KeyBytes {
    testing::key(&LemonSqueezy, secret)
}

fn verify(signature: &str, body: &[u8], keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&LemonSqueezy, &[(HEADER, signature)], body, keys, 0)
}

#[test]
fn the_no_official_vector_python_signature_verifies_and_our_signer_reproduces_it() {
    let verified = verify(COMPUTED_SIGNATURE, BODY, &[key(SECRET)]).unwrap();
    assert_eq!(verified, testing::verified(None, None));
    let signed = testing::sign(&LemonSqueezy, &key(SECRET), BODY, "", 1_700_000_000);
    assert_eq!(
        signed.headers,
        vec![
            (HEADER, COMPUTED_SIGNATURE.to_owned()),
            ("X-Event-Name", "order_created".to_owned())
        ]
    );
    let keys = [key("retired-secret"), key(SECRET)];
    assert_eq!(
        verify(COMPUTED_SIGNATURE, BODY, &keys).unwrap().key_index,
        1
    );
}

#[test]
fn a_tampered_body_or_a_malformed_signature_fails() {
    let tampered = String::from_utf8(BODY.to_vec())
        .unwrap()
        .replace("1199", "9199");
    assert_eq!(
        verify(COMPUTED_SIGNATURE, tampered.as_bytes(), &[key(SECRET)]),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    assert_eq!(
        verify("sha256=e6c1", BODY, &[key(SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "not hex"
        })
    );
    assert_eq!(
        testing::verify(&LemonSqueezy, &[], BODY, &[key(SECRET)], 0),
        Err(VerifyError::MissingHeader(HEADER))
    );
    assert_eq!(LemonSqueezy.default_tolerance_secs(), 0);
}

fn sample(event_type: Option<&str>, amount_minor: i64) -> Sample {
    Sample {
        event_id: "d4f2a0c6-7b1e-4c3a-9a55-0e8f6b2d1c97".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("1826953".into()),
    }
}

fn body(event_type: Option<&str>, amount_minor: i64) -> Value {
    serde_json::from_slice(&LemonSqueezy.sample_body(&sample(event_type, amount_minor))).unwrap()
}

fn normalise(payload: &Value, headers: &[(&str, &str)]) -> NormalisedEvent {
    testing::normalise(
        &LemonSqueezy,
        &testing::verified(None, None),
        headers,
        payload,
    )
    .unwrap()
}

#[test]
fn a_paid_order_credits_its_total_once_per_order() {
    let event = normalise(&body(None, 1199), &[]);
    assert_eq!(event.event_id.as_str(), "order:1826953");
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
        ("acct_1", "USD", 1199)
    );
    assert_eq!(posting.link, Link::Pays("1826953".into()));
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000, "microseconds");
}

#[test]
fn an_order_not_paid_is_ignored_under_a_key_its_payment_never_has() {
    for status in ["pending", "failed"] {
        let mut order = body(None, 1199);
        order["data"]["attributes"]["status"] = json!(status);
        let event = normalise(&order, &[]);
        assert_eq!(event.movement, Movement::None, "{status}");
        let key = event.event_id.as_str();
        assert!(key.starts_with("order_created:1826953:"), "{key}");
        assert_ne!(key, "order:1826953");
    }
}

#[test]
fn the_signed_event_name_counts_not_the_header() {
    // A refund body announced as an order by the unsigned header is still
    // a refund; an order announced as a refund is still an order.
    let refund = body(Some(REFUNDED), 500);
    let event = normalise(&refund, &[("X-Event-Name", CREATED)]);
    assert_eq!(event.event_type, REFUNDED);
    assert!(matches!(event.movement, Movement::Reverse(_)));
    let order = body(None, 1199);
    let event = normalise(&order, &[("X-Event-Name", REFUNDED)]);
    assert_eq!(event.event_id.as_str(), "order:1826953");
}

#[test]
fn a_refund_states_the_running_total_keyed_by_it() {
    let event = normalise(&body(Some(REFUNDED), 500), &[]);
    assert_eq!(event.event_id.as_str(), "order_refunded:1826953:500");
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal: {:?}", event.movement);
    };
    assert_eq!(request.reversal.payment_ref, "1826953");
    assert_eq!(request.reversal.basis, Basis::Total);
    assert_eq!(request.signed_amount(), -500, "the total so far");
    assert_eq!(request.account.as_ref().map(|a| a.as_str()), Some("acct_1"));
    // A second partial refund raises the total: a new key.
    let later = normalise(&body(Some(REFUNDED), 800), &[]);
    assert_eq!(later.event_id.as_str(), "order_refunded:1826953:800");
}

#[test]
fn a_refund_without_a_usable_total_is_held() {
    let mut refund = body(Some(REFUNDED), 500);
    refund["data"]["attributes"]["refunded_amount"] = json!("5.00");
    let event = normalise(&refund, &[]);
    assert!(
        event
            .event_id
            .as_str()
            .starts_with("order_refunded:1826953:")
    );
    let Movement::Rejected(rejection) = event.movement else {
        panic!("held: {:?}", event.movement);
    };
    assert!(rejection.reason.contains("amount"), "{}", rejection.reason);
}

#[test]
fn other_events_are_ignored_and_a_bad_time_is_named() {
    let mut subscription = body(None, 1199);
    subscription["meta"]["event_name"] = json!("subscription_created");
    subscription["data"]["type"] = json!("subscriptions");
    assert_eq!(normalise(&subscription, &[]).movement, Movement::None);
    let mut order = body(None, 1199);
    order["data"]["attributes"]["updated_at"] = json!("yesterday");
    let Movement::Rejected(rejection) = normalise(&order, &[]).movement else {
        panic!("no order to apply it in");
    };
    assert_eq!(
        rejection.reason,
        "data.attributes.updated_at is not an RFC 3339 time"
    );
}
