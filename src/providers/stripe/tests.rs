use super::*;
use crate::domain::{Direction, Link, Movement, Posting};
use crate::providers::testing;

const SECRET: &str = "whsec_test_secret";
const BODY: &[u8] = br#"{"id":"evt_test_1","type":"payment_intent.succeeded"}"#;
/// Stripe publishes no fixed vector (its SDK tests sign at run time), so
/// this one was computed once with Stripe's own signer, stripe-python
/// 16.1.0: `WebhookSignature.generate_signature_header(BODY,
/// "whsec_test_secret", timestamp=1700000000)`.
const SDK_HEADER: &str =
    "t=1700000000,v1=510a6b23c205185db14dd02988bce5939164d8e977341d096cb9c4305b367fb8";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Stripe, secret)
}

fn verify_at(
    header: &str,
    body: &[u8],
    keys: &[KeyBytes],
    now: i64,
) -> Result<Verified, VerifyError> {
    testing::verify(&Stripe, &[("stripe-signature", header)], body, keys, now)
}

#[test]
fn sdk_vector_verifies_and_our_signer_reproduces_it() {
    let verified = verify_at(SDK_HEADER, BODY, &[key(SECRET)], 1_700_000_000).unwrap();
    assert_eq!(verified.timestamp, Some(1_700_000_000));
    let signed = testing::sign(&Stripe, &key(SECRET), BODY, "", 1_700_000_000);
    assert_eq!(signed.headers, vec![(HEADER, SDK_HEADER.to_owned())]);
    assert_eq!(signed.body, BODY);
}

#[test]
fn tampered_body_wrong_secret_and_stale_time_fail() {
    let tampered = br#"{"id":"evt_test_1","type":"payment_intent.succeeded" }"#;
    assert_eq!(
        verify_at(SDK_HEADER, tampered, &[key(SECRET)], 1_700_000_000),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    assert!(verify_at(SDK_HEADER, BODY, &[key("whsec_other")], 1_700_000_000).is_err());
    assert!(matches!(
        verify_at(SDK_HEADER, BODY, &[key(SECRET)], 1_700_000_000 + 600),
        Err(VerifyError::OutsideTolerance { skew_secs: 600, .. })
    ));
}

#[test]
fn any_v1_and_any_secret_may_match() {
    let v1 = SDK_HEADER.split_once(",v1=").unwrap().1;
    let header = format!(
        "t=1700000000,v0=abc,v1=zz-not-hex,v1={},v1={v1}",
        "00".repeat(32)
    );
    let keys = [key("whsec_rotated_out"), key(SECRET)];
    assert_eq!(
        verify_at(&header, BODY, &keys, 1_700_000_000)
            .unwrap()
            .key_index,
        1
    );
}

#[test]
fn malformed_headers_are_named() {
    for (header, problem) in [
        ("garbage", "expected key=value items"),
        ("v1=00", "no t= timestamp"),
        ("t=1700000000", "no v1= signature"),
        ("t=abc,v1=00", "t= is not a unix timestamp"),
        ("t=1,t=2,v1=00", "more than one t= item"),
    ] {
        assert_eq!(
            verify_at(header, BODY, &[key(SECRET)], 1_700_000_000),
            Err(malformed(problem))
        );
    }
    assert_eq!(
        testing::verify(&Stripe, &[], BODY, &[key(SECRET)], 1_700_000_000),
        Err(VerifyError::MissingHeader(HEADER))
    );
}

fn sample() -> Sample {
    Sample {
        event_id: "evt_1".into(),
        event_type: None,
        account_id: "acct_1".into(),
        amount_minor: 1999,
        currency: "EUR".into(),
        sequence: Some(1_700_000_123),
        timestamp: 1_700_000_200,
        payment: None,
    }
}

fn normalise(payload: &Value) -> Result<NormalisedEvent, MapError> {
    testing::normalise(&Stripe, &testing::verified(None, Some(1)), &[], payload)
}

#[test]
fn payment_intent_succeeded_credits_amount_received() {
    let payload: Value = serde_json::from_slice(&Stripe.sample_body(&sample())).unwrap();
    let event = normalise(&payload).unwrap();
    assert_eq!(event.event_id.as_str(), "evt_1");
    assert_eq!(event.object_id.as_deref(), Some("pi_1"));
    let Movement::Post(Posting {
        direction,
        account,
        currency,
        amount,
        sequence,
        explicit_sequence,
        link,
    }) = event.movement
    else {
        panic!("expected a posting, got {:?}", event.movement);
    };
    assert_eq!(direction, Direction::Credit);
    assert_eq!(
        (account.as_str(), currency.code(), amount.minor()),
        ("acct_1", "EUR", 1999)
    );
    assert_eq!((sequence, explicit_sequence), (1_700_000_123, false));
    assert_eq!(link, Link::Pays("pi_1".into()));
    assert!(
        !Stripe.carries_sequence(),
        "created is a time, not a number"
    );
}

#[test]
fn other_types_are_ignored_and_the_id_is_required() {
    let mut payload: Value = serde_json::from_slice(&Stripe.sample_body(&sample())).unwrap();
    payload["type"] = json!("checkout.session.completed");
    assert_eq!(normalise(&payload).unwrap().movement, Movement::None);
    payload.as_object_mut().unwrap().remove("id");
    assert_eq!(normalise(&payload), Err(MapError::MissingEventId("id")));
}
