use serde_json::json;

use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// Checkout.com publishes no vector and its SDKs have no webhook verifier
/// (../shared/providers.md 2.11), so this one was computed once with
/// Python's standard library instead of our code:
/// `python3 -c 'import hmac, hashlib; print(hmac.new(b"sk_sbox_webhook_signature_key_0123",
/// open("body", "rb").read(), hashlib.sha256).hexdigest())'` with `body`
/// holding exactly `BODY`.
const BODY: &str = r#"{"id":"evt_az5sblvku4ge3dwpztvyizgcau","type":"payment_captured","created_on":"2026-06-01T11:59:58Z","data":{"id":"pay_mbabizu24mvu3mela5njyhpit4","action_id":"act_y3oqhf46pyzuxjbcn2giaqnb44","amount":1500,"currency":"USD","metadata":{"account_id":"acct_1"}}}"#;
const SECRET: &str = "sk_sbox_webhook_signature_key_0123";
const SIGNATURE: &str = "0afeee36ce96d458777e6f3517c238bd20620adc414a8a2381dd28d91b98759f";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Checkout, secret)
}

fn verify(signature: &str, body: &str, keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&Checkout, &[(HEADER, signature)], body.as_bytes(), keys, 0)
}

#[test]
fn no_official_vector_a_python_computed_one_verifies_and_our_signer_reproduces_it() {
    let verified = verify(SIGNATURE, BODY, &[key(SECRET)]).unwrap();
    assert_eq!((verified.key_index, verified.timestamp), (0, None));
    let signed = testing::sign(&Checkout, &key(SECRET), BODY.as_bytes(), "", 0);
    assert_eq!(signed.headers, vec![(HEADER, SIGNATURE.to_owned())]);
    assert_eq!(signed.body, BODY.as_bytes());
}

#[test]
fn tampered_bodies_and_wrong_keys_fail_and_any_key_may_match() {
    let no_match = Err(VerifyError::NoMatch { keys: 1 });
    assert_eq!(
        verify(SIGNATURE, &BODY.replace("1500", "15000"), &[key(SECRET)]),
        no_match
    );
    assert_eq!(verify(SIGNATURE, BODY, &[key("another-key")]), no_match);
    let keys = [key("another-key"), key(SECRET)];
    assert_eq!(verify(SIGNATURE, BODY, &keys).unwrap().key_index, 1);
    // Hex digits are case-insensitive; the bytes are what is compared.
    assert!(verify(&SIGNATURE.to_uppercase(), BODY, &[key(SECRET)]).is_ok());
}

#[test]
fn malformed_and_missing_headers_are_named() {
    assert_eq!(
        verify("sha256=zz", BODY, &[key(SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "not hex"
        })
    );
    assert_eq!(
        testing::verify(&Checkout, &[], BODY.as_bytes(), &[key(SECRET)], 0),
        Err(VerifyError::MissingHeader(HEADER))
    );
    assert_eq!(Checkout.default_tolerance_secs(), 0, "no time is signed");
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "evt_az5sblvku4ge3dwpztvyizgcau".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 1500,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("pay_mbabizu24mvu3mela5njyhpit4".into()),
    }
}

fn body(sample: &Sample) -> Value {
    serde_json::from_slice(&Checkout.sample_body(sample)).unwrap()
}

fn normalise(payload: &Value) -> NormalisedEvent {
    testing::normalise(&Checkout, &testing::verified(None, None), &[], payload).unwrap()
}

#[test]
fn a_capture_credits_once_per_capture_action() {
    let event = normalise(&body(&sample(None)));
    assert_eq!(
        event.event_id.as_str(),
        "capture:act_az5sblvku4ge3dwpztvyizgcau"
    );
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(
        (posting.account.as_str(), posting.amount.minor()),
        ("acct_1", 1500)
    );
    assert_eq!(
        posting.link,
        Link::PaysPart("pay_mbabizu24mvu3mela5njyhpit4".into())
    );
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000);
}

#[test]
fn a_refund_reverses_its_payment_keyed_by_the_refund_action() {
    let event = normalise(&body(&sample(Some("payment_refunded"))));
    assert_eq!(
        event.event_id.as_str(),
        "refund:act_az5sblvku4ge3dwpztvyizgcau"
    );
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal: {:?}", event.movement);
    };
    assert_eq!(
        request.reversal.payment_ref,
        "pay_mbabizu24mvu3mela5njyhpit4"
    );
    assert_eq!(request.signed_amount(), -1500);
}

#[test]
fn other_types_move_nothing_under_their_own_event_id() {
    let mut payload = body(&sample(None));
    for event_type in [
        "payment_approved",
        "payment_refund_pending",
        "payment_refund_declined",
        "dispute_evidence_required",
    ] {
        payload["type"] = json!(event_type);
        let event = normalise(&payload);
        assert_eq!(event.movement, Movement::None, "{event_type}");
        assert_eq!(event.event_id.as_str(), "evt_az5sblvku4ge3dwpztvyizgcau");
    }
}

#[test]
fn the_workflows_format_is_ordered_by_its_timestamp() {
    let mut payload = body(&sample(None));
    let fields = payload.as_object_mut().unwrap();
    fields.remove("created_on");
    fields.insert("timestamp".into(), json!("2023-05-24T09:12:32.357+00:00"));
    let Movement::Post(posting) = normalise(&payload).movement else {
        panic!("a credit");
    };
    assert_eq!(posting.sequence, 1_684_919_552_357_000);
    payload.as_object_mut().unwrap().remove("timestamp");
    let Movement::Rejected(rejection) = normalise(&payload).movement else {
        panic!("no time: held");
    };
    assert!(
        rejection.reason.contains("created_on is missing"),
        "{}",
        rejection.reason
    );
}
