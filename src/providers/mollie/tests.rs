use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// Mollie publishes no fixed vector: its PHP SDK's `SignatureValidatorTest`
/// signs at run time. Its inputs are used here, with the signature computed
/// once by Python's standard library instead of our code:
/// `python3 -c 'import hmac, hashlib; print(hmac.new(b"test_webhook_secret",
/// b"{\"id\":\"tr_12345\",\"event_type\":\"payment-link.paid\"}",
/// hashlib.sha256).hexdigest())'`.
const BODY: &str = r#"{"id":"tr_12345","event_type":"payment-link.paid"}"#;
const SECRET: &str = "test_webhook_secret";
const SIGNATURE: &str = "e479a5e4aaa17db94cfc546071e10e91c0b37f21e464e751ebdd7d7ad2ffd146";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Mollie, secret)
}

fn verify(header: &str, keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&Mollie, &[(HEADER, header)], BODY.as_bytes(), keys, 0)
}

#[test]
fn no_official_vector_a_python_computed_one_verifies_with_or_without_its_prefix() {
    for header in [format!("sha256={SIGNATURE}"), SIGNATURE.to_owned()] {
        let verified = verify(&header, &[key(SECRET)]).unwrap();
        assert_eq!((verified.key_index, verified.timestamp), (0, None));
    }
    let signed = testing::sign(&Mollie, &key(SECRET), BODY.as_bytes(), "", 0);
    assert_eq!(
        signed.headers,
        vec![(HEADER, format!("sha256={SIGNATURE}"))]
    );
}

#[test]
fn wrong_keys_fail_and_any_key_or_folded_signature_may_match() {
    assert_eq!(
        verify(
            &format!("sha256={SIGNATURE}"),
            &[key("alternate_webhook_secret")]
        ),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    let tampered = testing::verify(
        &Mollie,
        &[(HEADER, SIGNATURE)],
        br#"{"id":"tr_12346","event_type":"payment-link.paid"}"#,
        &[key(SECRET)],
        0,
    );
    assert_eq!(tampered, Err(VerifyError::NoMatch { keys: 1 }));
    let keys = [key("alternate_webhook_secret"), key(SECRET)];
    assert_eq!(verify(SIGNATURE, &keys).unwrap().key_index, 1);
    // A secret rotating: the header repeated, folded into one by a proxy,
    // beside a value that is not a signature at all.
    let folded = format!(
        "sha256={}, invalid_signature, sha256={SIGNATURE}",
        "00".repeat(32)
    );
    assert_eq!(verify(&folded, &[key(SECRET)]).unwrap().key_index, 0);
}

#[test]
fn malformed_and_missing_headers_are_named() {
    assert_eq!(
        verify("sha256=invalid_signature", &[key(SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "expected sha256=<hex>"
        })
    );
    assert_eq!(
        testing::verify(&Mollie, &[], BODY.as_bytes(), &[key(SECRET)], 0),
        Err(VerifyError::MissingHeader(HEADER))
    );
    assert_eq!(Mollie.default_tolerance_secs(), 0, "no time is signed");
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "event_GvJ8WHrp5isUdRub9CJyH".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 2495,
        currency: "EUR".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("tr_5B8cwPMGnU6qLbRvo7qEZo".into()),
    }
}

fn body(sample: &Sample) -> Value {
    serde_json::from_slice(&Mollie.sample_body(sample)).unwrap()
}

fn normalise(payload: &Value) -> NormalisedEvent {
    testing::normalise(&Mollie, &testing::verified(None, None), &[], payload).unwrap()
}

#[test]
fn a_paid_payment_credits_its_decimal_amount_once() {
    let payload = body(&sample(None));
    assert_eq!(payload["_embedded"]["payment"]["amount"]["value"], "24.95");
    let event = normalise(&payload);
    assert_eq!(
        event.event_id.as_str(),
        "payment.paid:tr_5B8cwPMGnU6qLbRvo7qEZo"
    );
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(
        (posting.account.as_str(), posting.currency.code()),
        ("acct_1", "EUR")
    );
    assert_eq!(posting.amount.minor(), 2495);
    assert_eq!(posting.link, Link::Pays("tr_5B8cwPMGnU6qLbRvo7qEZo".into()));
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000);
}

#[test]
fn a_refunded_refund_reverses_its_payment_once() {
    let event = normalise(&body(&sample(Some("refund.refunded"))));
    assert_eq!(event.event_id.as_str(), "refund:re_GvJ8WHrp5isUdRub9CJyH");
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal: {:?}", event.movement);
    };
    assert_eq!(request.reversal.payment_ref, "tr_5B8cwPMGnU6qLbRvo7qEZo");
    assert_eq!(request.signed_amount(), -2495);
}

#[test]
fn other_states_move_nothing_and_a_simple_payload_is_held() {
    for event_type in [
        "payment.authorized",
        "payment.pending",
        "refund.queued",
        "refund.pending",
        "refund.processing",
        "refund.failed",
    ] {
        let event = normalise(&body(&sample(Some(event_type))));
        assert_eq!(event.movement, Movement::None, "{event_type}");
        assert_eq!(event.event_id.as_str(), "event_GvJ8WHrp5isUdRub9CJyH");
    }
    let mut simple = body(&sample(None));
    simple.as_object_mut().unwrap().remove("_embedded");
    let Movement::Rejected(rejection) = normalise(&simple).movement else {
        panic!("no snapshot, nothing to credit: held");
    };
    assert!(
        rejection
            .reason
            .contains("_embedded.payment.metadata.account_id"),
        "{}",
        rejection.reason
    );
}
