use serde_json::json;

use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// Coinbase's own vector: `PAYLOAD_STR`, `SIG_HEADER` and `SECRET` of
/// coinbase/coinbase-commerce-python `tests/test_webhook.py` @eaa29522
/// (../shared/providers.md 2.13), byte for byte.
const PAYLOAD: &str = concat!(
    r#"{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"#,
    r#""event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created","#,
    r#""api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","#,
    r#""data":{"code":"66BEOV2A","name":"The Sovereign Individual","#,
    r#""description":"Mastering the Transition to the Information Age","#,
    r#""hosted_url":"https://commerce.coinbase.com/charges/66BEOV2A","#,
    r#""created_at":"2017-01-31T20:49:02Z","expires_at":"2017-01-31T21:04:02Z","#,
    r#""timeline":[{"time":"2017-01-31T20:49:02Z","status":"NEW"}],"#,
    r#""metadata":{},"pricing_type":"no_price","payments":[],"#,
    r#""addresses":{"bitcoin":"0000000000000000000000000000000000","#,
    r#""ethereum":"0x0000000000000000000000000000000000000000","#,
    r#""litecoin":"3000000000000000000000000000000000","#,
    r#""bitcoincash":"bitcoincash:000000000000000000000000000000000000000000"}}}}"#
);
const SIG_HEADER: &str = "8be7742c7d372f08a6a3224edadf18a22b65fa9e28f3f2de97376cdaa092590d";
const SECRET: &str = "30291a20-0bd1-4267-9b0f-e6e7b123c0bf";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Coinbase, secret)
}

fn verify(signature: &str, body: &str, keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&Coinbase, &[(HEADER, signature)], body.as_bytes(), keys, 0)
}

#[test]
fn the_official_vector_verifies_and_our_signer_reproduces_it() {
    assert_eq!(PAYLOAD.len(), 816, "the SDK's exact bytes");
    let verified = verify(SIG_HEADER, PAYLOAD, &[key(SECRET)]).unwrap();
    assert_eq!((verified.key_index, verified.timestamp), (0, None));
    let signed = testing::sign(&Coinbase, &key(SECRET), PAYLOAD.as_bytes(), "", 0);
    assert_eq!(signed.headers, vec![(HEADER, SIG_HEADER.to_owned())]);
}

#[test]
fn tampered_bodies_and_wrong_keys_fail_and_any_key_may_match() {
    let no_match = Err(VerifyError::NoMatch { keys: 1 });
    // The SDK's own failing case: the signature with its 3s made 1s.
    assert_eq!(
        verify(&SIG_HEADER.replace('3', "1"), PAYLOAD, &[key(SECRET)]),
        no_match
    );
    assert_eq!(
        verify(
            SIG_HEADER,
            &PAYLOAD.replace("\"id\":1,", "\"id\":2,"),
            &[key(SECRET)]
        ),
        no_match
    );
    let keys = [key("retired-shared-secret"), key(SECRET)];
    assert_eq!(verify(SIG_HEADER, PAYLOAD, &keys).unwrap().key_index, 1);
}

#[test]
fn malformed_and_missing_headers_are_named() {
    assert_eq!(
        verify("not hex", PAYLOAD, &[key(SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "not hex"
        })
    );
    assert_eq!(
        testing::verify(&Coinbase, &[], PAYLOAD.as_bytes(), &[key(SECRET)], 0),
        Err(VerifyError::MissingHeader(HEADER))
    );
    assert_eq!(Coinbase.default_tolerance_secs(), 0, "no time is signed");
}

fn normalise(payload: &Value) -> NormalisedEvent {
    testing::normalise(&Coinbase, &testing::verified(None, None), &[], payload).unwrap()
}

#[test]
fn the_official_charge_created_event_moves_nothing() {
    let payload: Value = serde_json::from_str(PAYLOAD).unwrap();
    let event = normalise(&payload);
    assert_eq!(event.movement, Movement::None);
    assert_eq!(
        event.event_id.as_str(),
        "24934862-d980-46cb-9402-43c81b0cdba6"
    );
}

fn sample() -> Sample {
    Sample {
        event_id: "f3bd1c2e-2a8e-4c8e-9b3c-7f4c1e0d5a61".into(),
        event_type: None,
        account_id: "acct_1".into(),
        amount_minor: 1500,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("0b8b4c1e-6f1a-4b8a-9e7c-2d5a3f9c8e10".into()),
    }
}

#[test]
fn a_confirmed_charge_credits_its_local_price_once_per_charge() {
    let payload: Value = serde_json::from_slice(&Coinbase.sample_body(&sample())).unwrap();
    assert_eq!(
        payload["event"]["data"]["pricing"]["local"]["amount"],
        "15.00"
    );
    let event = normalise(&payload);
    assert_eq!(
        event.event_id.as_str(),
        "charge:0b8b4c1e-6f1a-4b8a-9e7c-2d5a3f9c8e10"
    );
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(
        (posting.account.as_str(), posting.currency.code()),
        ("acct_1", "USD")
    );
    assert_eq!(posting.amount.minor(), 1500);
    assert_eq!(
        posting.link,
        Link::Pays("0b8b4c1e-6f1a-4b8a-9e7c-2d5a3f9c8e10".into())
    );
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000);
}

#[test]
fn only_a_confirmed_charge_moves_money_and_amounts_stay_exact() {
    let mut payload: Value = serde_json::from_slice(&Coinbase.sample_body(&sample())).unwrap();
    payload["event"]["data"]["pricing"]["local"]["amount"] = json!("15.001");
    let Movement::Rejected(rejection) = normalise(&payload).movement else {
        panic!("a third decimal place of USD is refused, never rounded");
    };
    assert!(rejection.reason.contains("15.001"), "{}", rejection.reason);
    for event_type in ["charge:created", "charge:pending", "charge:failed"] {
        payload["event"]["type"] = json!(event_type);
        assert_eq!(normalise(&payload).movement, Movement::None, "{event_type}");
    }
}
