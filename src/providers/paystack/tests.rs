use serde_json::json;

use super::*;
use crate::domain::{Link, Movement};
use crate::providers::{hmac_sha256, testing};

/// Paystack publishes no vector and no SDK verifier (../shared/providers.md
/// 2.10), so this one was computed once with Python's standard library
/// instead of our code: `python3 -c 'import hmac, hashlib;
/// print(hmac.new(b"sk_test_0c9b1f3a7e5d4c2b8a6f0e1d9c7b5a3f2e4d6c8b",
/// open("body", "rb").read(), hashlib.sha512).hexdigest())'` with `body`
/// holding exactly `BODY`.
const BODY: &str = r#"{"event":"charge.success","data":{"id":302961,"domain":"live","status":"success","reference":"qTPrJoy9Bx","amount":10000,"paid_at":"2016-09-30T21:10:19.000Z","currency":"NGN","metadata":{"account_id":"acct_1"}}}"#;
const SECRET: &str = "sk_test_0c9b1f3a7e5d4c2b8a6f0e1d9c7b5a3f2e4d6c8b";
const SIGNATURE: &str = "f0a26ab0b1263623bcde2b119a94863c09e60d8046ebf7a8068dc87fc4aeae6f8e6511218886744d30ab552b1be708f55db845ae08637cc24002e088807e87ee";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Paystack, secret)
}

fn verify(signature: &str, body: &str, keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(
        &Paystack,
        &[(HEADER, signature)],
        body.as_bytes(),
        keys,
        1_700_000_000,
    )
}

#[test]
fn no_official_vector_a_python_computed_sha512_one_verifies_and_our_signer_reproduces_it() {
    let verified = verify(SIGNATURE, BODY, &[key(SECRET)]).unwrap();
    assert_eq!(verified.key_index, 0);
    assert_eq!(verified.timestamp, None, "Paystack signs no time");
    let signed = testing::sign(&Paystack, &key(SECRET), BODY.as_bytes(), "", 0);
    assert_eq!(signed.headers, vec![(HEADER, SIGNATURE.to_owned())]);
    assert_eq!(SIGNATURE.len(), 128, "SHA-512, not SHA-256");
}

#[test]
fn tampered_bodies_wrong_keys_and_sha256_fail_and_any_key_may_match() {
    let no_match = Err(VerifyError::NoMatch { keys: 1 });
    assert_eq!(
        verify(SIGNATURE, &BODY.replace("10000", "100000"), &[key(SECRET)]),
        no_match
    );
    assert_eq!(verify(SIGNATURE, BODY, &[key("sk_test_other")]), no_match);
    let sha256 = hex::encode(hmac_sha256::sign(&key(SECRET), &[BODY.as_bytes()]));
    assert_eq!(verify(&sha256, BODY, &[key(SECRET)]), no_match);
    let keys = [key("sk_test_rolled"), key(SECRET)];
    assert_eq!(verify(SIGNATURE, BODY, &keys).unwrap().key_index, 1);
}

#[test]
fn malformed_and_missing_headers_are_named() {
    assert_eq!(
        verify("sha512=abc", BODY, &[key(SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "not hex"
        })
    );
    assert_eq!(
        testing::verify(&Paystack, &[], BODY.as_bytes(), &[key(SECRET)], 0),
        Err(VerifyError::MissingHeader(HEADER))
    );
    assert_eq!(Paystack.default_tolerance_secs(), 0, "no time is signed");
}

/// When the test deliveries arrive (`testing::normalise`'s clock).
const ARRIVED: i64 = testing::RECEIVED_AT;

fn normalise(payload: &Value) -> NormalisedEvent {
    testing::normalise(&Paystack, &testing::verified(None, None), &[], payload).unwrap()
}

#[test]
fn a_successful_charge_credits_its_subunits_once_per_reference() {
    let event = normalise(&serde_json::from_str(BODY).unwrap());
    assert_eq!(event.event_id.as_str(), "charge.success:qTPrJoy9Bx");
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(
        (posting.account.as_str(), posting.currency.code()),
        ("acct_1", "NGN")
    );
    assert_eq!(posting.amount.minor(), 10_000);
    assert_eq!(posting.link, Link::Pays("qTPrJoy9Bx".into()));
    assert_eq!(posting.sequence, 1_475_269_819_000_000, "paid_at");
}

fn refund(amount: Value) -> Value {
    json!({"event": "refund.processed", "data": {
        "status": "processed",
        "transaction_reference": "qTPrJoy9Bx",
        "refund_reference": "132013318360",
        "amount": amount,
        "currency": "NGN",
        "processor": "mpgs_zen",
        "integration": 412_829,
        "domain": "live",
    }})
}

#[test]
fn a_processed_refund_reverses_its_transaction_whether_its_amount_is_a_string_or_not() {
    for amount in [json!("5000"), json!(5000)] {
        let event = normalise(&refund(amount));
        assert_eq!(event.event_id.as_str(), "refund:132013318360");
        let Movement::Reverse(request) = event.movement else {
            panic!("a reversal: {:?}", event.movement);
        };
        assert_eq!(request.reversal.payment_ref, "qTPrJoy9Bx");
        assert_eq!(request.signed_amount(), -5000);
        assert_eq!(request.sequence, ARRIVED * 1_000_000, "no time of its own");
    }
    let mut decimal = refund(json!("50.00"));
    let Movement::Rejected(rejection) = normalise(&decimal).movement else {
        panic!("subunits only");
    };
    assert!(rejection.reason.contains("50.00"), "{}", rejection.reason);
    decimal["data"]["status"] = json!("pending");
    assert_eq!(normalise(&decimal).movement, Movement::None);
}

#[test]
fn events_that_move_no_money_get_keys_no_money_event_can_have() {
    let key = |payload: &Value| normalise(payload).event_id.as_str().to_owned();
    let mut failed: Value = serde_json::from_str(BODY).unwrap();
    failed["data"]["status"] = json!("failed");
    assert_eq!(normalise(&failed).movement, Movement::None);
    let digest = hex::encode(&Sha256::digest(failed.to_string().as_bytes())[..8]);
    assert_eq!(
        key(&failed),
        format!("event:charge.success:302961:{digest}")
    );
    failed["event"] = json!("charge.failed");
    assert!(key(&failed).starts_with("event:charge.failed:302961:"));
    let transfer = json!({"event": "transfer.success",
        "data": {"reference": "1976435206", "amount": 30000, "currency": "NGN"}});
    assert!(key(&transfer).starts_with("event:transfer.success:1976435206:"));
    // A pending refund has neither id nor reference; the digest keeps
    // another refund's pending event from passing for its redelivery.
    let mut pending = refund(json!("5000"));
    pending["event"] = json!("refund.pending");
    pending["data"]["status"] = json!("pending");
    pending["data"]["refund_reference"] = Value::Null;
    let first = key(&pending);
    assert!(first.starts_with("event:refund.pending::"), "{first}");
    assert_eq!(key(&pending), first, "the same bytes, the same key");
    pending["data"]["amount"] = json!("2500");
    assert_ne!(key(&pending), first);
}

#[test]
fn the_sample_is_the_documented_shape() {
    let sample = Sample {
        event_id: "msg_1".into(),
        event_type: Some("refund.processed".into()),
        account_id: "acct_1".into(),
        amount_minor: 5000,
        currency: "NGN".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("qTPrJoy9Bx".into()),
    };
    let body: Value = serde_json::from_slice(&Paystack.sample_body(&sample)).unwrap();
    assert_eq!(body["data"]["amount"], "5000", "a string, as documented");
    assert!(matches!(normalise(&body).movement, Movement::Reverse(_)));
    let credit: Value = serde_json::from_slice(&Paystack.sample_body(&Sample {
        event_type: None,
        ..sample
    }))
    .unwrap();
    let Movement::Post(posting) = normalise(&credit).movement else {
        panic!("a credit");
    };
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000, "paid_at");
}
