use serde_json::json;

use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// Adyen's own vectors (adyen-python-api-library `test/UtilTest.py`,
/// ../shared/providers.md 2.7): key, the item's fields, the signature.
const VECTOR_KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
const VECTOR_SIGNATURE: &str = "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=";
/// The colon vector: a merchant reference that itself starts with `:`,
/// signed with no escaping.
const COLON_KEY: &str = "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174";
const COLON_SIGNATURE: &str = "2EQYm7YJpKO4EtHSPu55SQTyWf8dkW5u2nD1tJFpViA=";

fn item(psp: &str, account: &str, reference: &str, value: i64, signature: &str) -> Value {
    json!({"NotificationRequestItem": {
        "additionalData": {"hmacSignature": signature},
        "amount": {"currency": "EUR", "value": value},
        "eventCode": "AUTHORISATION",
        "eventDate": "2024-01-01T12:00:00+01:00",
        "merchantAccountCode": account,
        "merchantReference": reference,
        "pspReference": psp,
        "success": "true"
    }})
}

fn vector_item() -> Value {
    item(
        "7914073381342284",
        "TestMerchant",
        "TestPayment-1407325143704",
        1130,
        VECTOR_SIGNATURE,
    )
}

fn colon_item() -> Value {
    item(
        "M8NB66SBZSGLNK82",
        "AntoniStroinski",
        ":slashes are fun",
        1000,
        COLON_SIGNATURE,
    )
}

fn body(items: &[Value]) -> Vec<u8> {
    json!({"live": "false", "notificationItems": items})
        .to_string()
        .into_bytes()
}

fn verify(body: &[u8], keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&Adyen, &[], body, keys, 1_700_000_000)
}

fn key(hex_key: &str) -> KeyBytes {
    testing::key(&Adyen, hex_key)
}

#[test]
fn the_official_vectors_sign_the_eight_fields_as_given() {
    let inner = vector_item()["NotificationRequestItem"].clone();
    assert_eq!(
        signed_string(inner.as_object().unwrap()),
        "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"
    );
    let colon = colon_item()["NotificationRequestItem"].clone();
    assert_eq!(
        signed_string(colon.as_object().unwrap()),
        "M8NB66SBZSGLNK82::AntoniStroinski::slashes are fun:1000:EUR:AUTHORISATION:true"
    );
    assert!(verify(&body(&[vector_item()]), &[key(VECTOR_KEY)]).is_ok());
    assert!(verify(&body(&[colon_item()]), &[key(COLON_KEY)]).is_ok());
}

#[test]
fn our_signer_reproduces_the_official_signature() {
    let mut unsigned = vector_item();
    unsigned["NotificationRequestItem"]["additionalData"] = json!({});
    let signed = testing::sign(&Adyen, &key(VECTOR_KEY), &body(&[unsigned]), "", 0);
    let payload: Value = serde_json::from_slice(&signed.body).unwrap();
    assert_eq!(
        payload["notificationItems"][0]["NotificationRequestItem"]["additionalData"]["hmacSignature"],
        VECTOR_SIGNATURE
    );
    assert!(signed.headers.is_empty(), "Adyen signs inside the body");
}

#[test]
fn every_item_must_verify_and_any_key_may() {
    let both = body(&[vector_item(), colon_item()]);
    // Each item verifies with its own key, both configured (rotation).
    let keys = [key(COLON_KEY), key(VECTOR_KEY)];
    assert_eq!(verify(&both, &keys).unwrap().key_index, 1);
    // One item forged: the delivery is refused whole.
    let mut forged = colon_item();
    forged["NotificationRequestItem"]["amount"]["value"] = json!(999_999);
    assert_eq!(
        verify(&body(&[vector_item(), forged]), &keys),
        Err(VerifyError::NoMatch { keys: 2 })
    );
    assert!(matches!(
        verify(b"{\"notificationItems\": []}", &keys),
        Err(VerifyError::MalformedBody(_))
    ));
    let mut unsigned = vector_item();
    unsigned["NotificationRequestItem"]["additionalData"] = json!({});
    assert!(matches!(
        verify(&body(&[unsigned]), &keys),
        Err(VerifyError::MalformedBody(_))
    ));
}

#[test]
fn keys_are_hex() {
    assert!(Adyen.keys_from_secret(&Secret::new("not hex")).is_err());
    assert_eq!(key("00ff").expose(), [0, 255]);
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "e1".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 1130,
        currency: "EUR".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("7914073381342284".into()),
    }
}

fn normalise(sample: &Sample) -> NormalisedEvent {
    let payload: Value = serde_json::from_slice(&Adyen.sample_body(sample)).unwrap();
    testing::normalise(&Adyen, &testing::verified(None, None), &[], &payload).unwrap()
}

#[test]
fn a_successful_authorisation_credits_the_metadata_account() {
    let event = normalise(&sample(None));
    assert_eq!(
        event.event_id.as_str(),
        "7914073381342284:AUTHORISATION:true"
    );
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(posting.account.as_str(), "acct_1");
    assert_eq!(posting.link, Link::Pays("7914073381342284".into()));
    let stored: Value = serde_json::from_str(event.payload.as_deref().unwrap()).unwrap();
    assert_eq!(
        stored["additionalData"]["metadata.account_id"], "acct_1",
        "the item is stored as Adyen sent it"
    );
}

#[test]
fn refunds_and_chargebacks_reverse_the_original_payment() {
    let refund = normalise(&sample(Some("REFUND")));
    assert_eq!(refund.event_id.as_str(), "REFUNDe1:REFUND:true");
    let Movement::Reverse(request) = refund.movement else {
        panic!("a reversal");
    };
    assert_eq!(request.reversal.payment_ref, "7914073381342284");
    let chargeback = normalise(&sample(Some("CHARGEBACK")));
    assert_eq!(chargeback.event_id.as_str(), "CHARGEBACK:CHARGEBACKe1");
    let reversed = normalise(&Sample {
        event_id: "e1".into(),
        ..sample(Some("CHARGEBACK_REVERSED"))
    });
    let Movement::Reverse(request) = reversed.movement else {
        panic!("a reinstatement");
    };
    assert_eq!(
        request.reversal.undoes.as_deref(),
        Some("CHARGEBACK:CHARGEBACK_REVERSEDe1")
    );
    let mut failed: Value =
        serde_json::from_slice(&Adyen.sample_body(&sample(Some("REFUND")))).unwrap();
    failed["notificationItems"][0]["NotificationRequestItem"]["success"] = json!("false");
    let event = testing::normalise(&Adyen, &testing::verified(None, None), &[], &failed).unwrap();
    assert_eq!(
        event.movement,
        Movement::None,
        "a failed refund moves nothing"
    );
}

#[test]
fn a_stored_item_replays_as_the_same_event() {
    let mut refund = sample(Some("REFUND"));
    refund.event_id = "e2".into();
    let payloads: Vec<Value> = [sample(None), refund]
        .iter()
        .map(|s| serde_json::from_slice::<Value>(&Adyen.sample_body(s)).unwrap())
        .collect();
    let batch = json!({"live": "false", "notificationItems": payloads
        .iter()
        .map(|p| p["notificationItems"][0].clone())
        .collect::<Vec<_>>()});
    let mapping = testing::mapping(&Adyen);
    let verified = testing::verified(None, None);
    let events = testing::normalise_all(&Adyen, &verified, &[], &batch, &mapping).unwrap();
    assert_eq!(events.len(), 2);
    for event in events {
        let stored = event.payload.as_deref().unwrap().as_bytes();
        let body: Value = serde_json::from_slice(&Adyen.replay_body(stored)).unwrap();
        let again = testing::normalise_all(&Adyen, &verified, &[], &body, &mapping).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].event_id, event.event_id);
        assert_eq!(again[0].movement, event.movement);
        assert_eq!(again[0].payload, event.payload, "stored the same way");
    }
    // A whole delivery (stored unreadable) is mapped as it came.
    let whole = body(&[vector_item()]);
    assert_eq!(Adyen.replay_body(&whole), whole);
}
