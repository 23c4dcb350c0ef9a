use serde_json::json;

use super::*;
use crate::domain::{Direction, Link, Movement};
use crate::providers::testing;

/// Razorpay's own test (razorpay/razorpay-python
/// `tests/test_client_utility.py::test_verify_webhook_signature`,
/// ../shared/providers.md 2.8): the exact bytes of
/// `tests/mocks/fake_payment_authorized_webhook.json`, trailing newline
/// included, signed with the test client's secret `key_secret`.
const VECTOR_BODY: &str = concat!(
    r#"{
  "event": "payment.authorized",
  "entity": "event",
  "contains": [
    "payment"
  ],
  "payload": {
    "payment": {
      "entity": {
        "id": "pay_6koWN7bvxujzxM",
        "entity": "payment",
        "amount": 1000000,
        "currency": "INR",
        "status": "captured",
        "order_id": "order_100000000order",
        "international": false,
        "method": "card",
        "amount_refunded": 0,
        "refund_status": null,
        "captured": true,
        "description": "random description",
        "card_id": "card_6koWNAT6LASUqy",
        "bank": null,
        "wallet": null,
        "vpa": null,
        "email": "a@b.com",
        "contact": "+919999999999",
        "notes": {
          "merchant_order_id": "random order id"
        },
        "fee": 23000,
        "service_tax": 3000,
        "error_code": null,
        "error_description": null,
        "created_at": 1479978483
      }
    }
  },
  "created_at": 1400826760
}"#,
    "\n"
);
const VECTOR_SECRET: &str = "key_secret";
const VECTOR_SIGNATURE: &str = "d60e67fd884556c045e9be7dad57903e33efc7172c17c6e3ef77db42d2b366e9";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Razorpay, secret)
}

fn verify(signature: &str, body: &[u8], keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&Razorpay, &[(HEADER, signature)], body, keys, 0)
}

#[test]
fn the_official_vector_verifies_and_our_signer_reproduces_it() {
    let body = VECTOR_BODY.as_bytes();
    assert_eq!(body.len(), 971, "the file's bytes, newline included");
    let verified = verify(VECTOR_SIGNATURE, body, &[key(VECTOR_SECRET)]).unwrap();
    assert_eq!(verified, testing::verified(None, None));
    let signed = testing::sign(&Razorpay, &key(VECTOR_SECRET), body, "evt_1", 0);
    assert_eq!(signed.headers[0], (HEADER, VECTOR_SIGNATURE.to_owned()));
    // Rotation: retries of older events still carry the old secret's MAC.
    let keys = [key("new_webhook_secret"), key(VECTOR_SECRET)];
    assert_eq!(verify(VECTOR_SIGNATURE, body, &keys).unwrap().key_index, 1);
}

#[test]
fn the_vector_fails_without_its_newline_or_with_another_secret() {
    let trimmed = VECTOR_BODY.trim_end().as_bytes();
    assert_eq!(
        verify(VECTOR_SIGNATURE, trimmed, &[key(VECTOR_SECRET)]),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    assert_eq!(
        verify(VECTOR_SIGNATURE, VECTOR_BODY.as_bytes(), &[key("key_id")]),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    assert_eq!(
        verify("zz", VECTOR_BODY.as_bytes(), &[key(VECTOR_SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "not hex"
        })
    );
    assert_eq!(
        testing::verify(&Razorpay, &[], b"{}", &[key(VECTOR_SECRET)], 0),
        Err(VerifyError::MissingHeader(HEADER))
    );
    assert_eq!(Razorpay.default_tolerance_secs(), 0);
}

fn normalise(payload: &Value) -> NormalisedEvent {
    testing::normalise(&Razorpay, &testing::verified(None, None), &[], payload).unwrap()
}

#[test]
fn the_official_mock_is_an_authorization_which_moves_no_money() {
    let mock: Value = serde_json::from_str(VECTOR_BODY).unwrap();
    let event = normalise(&mock);
    assert_eq!(event.movement, Movement::None);
    let key = event.event_id.as_str();
    assert!(
        key.starts_with("payment.authorized:pay_6koWN7bvxujzxM:"),
        "{key}"
    );
    // Captured, it would credit; its notes name no account here.
    let mut captured = mock;
    captured["event"] = json!(CAPTURED);
    let Movement::Rejected(rejection) = normalise(&captured).movement else {
        panic!("no account to credit");
    };
    assert_eq!(
        rejection.reason,
        "no account id at payload.payment.entity.notes.account_id"
    );
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "evt_NdKkCPu9YbHJWP".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 50_000,
        currency: "INR".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("pay_NdKjx3Wqx0Vz6J".into()),
    }
}

fn body(event_type: Option<&str>) -> Value {
    serde_json::from_slice(&Razorpay.sample_body(&sample(event_type))).unwrap()
}

#[test]
fn a_captured_payment_credits_once_per_payment() {
    let event = normalise(&body(None));
    assert_eq!(event.event_id.as_str(), "payment:pay_NdKjx3Wqx0Vz6J");
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
        ("acct_1", "INR", 50_000)
    );
    assert_eq!(posting.link, Link::Pays("pay_NdKjx3Wqx0Vz6J".into()));
    assert_eq!(posting.sequence, 1_700_000_000, "created_at, seconds");
    // order.paid reports the same payment: listed as a credit type, it
    // shares the payment's key, so it can never credit a second time.
    let mut order_paid = body(None);
    order_paid["event"] = json!("order.paid");
    let mapping = Mapping {
        credit_types: Some(vec![CAPTURED.into(), "order.paid".into()]),
        ..testing::mapping(&Razorpay)
    };
    let verified = testing::verified(None, None);
    let events = testing::normalise_all(&Razorpay, &verified, &[], &order_paid, &mapping).unwrap();
    assert_eq!(events[0].event_id.as_str(), "payment:pay_NdKjx3Wqx0Vz6J");
}

#[test]
fn a_processed_refund_of_a_captured_payment_debits_it() {
    let event = normalise(&body(Some(REFUNDED)));
    assert_eq!(event.event_id.as_str(), "refund:rfnd_NdKkCPu9YbHJWP");
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal: {:?}", event.movement);
    };
    assert_eq!(request.reversal.payment_ref, "pay_NdKjx3Wqx0Vz6J");
    assert_eq!(request.reversal.basis, Basis::Each);
    assert_eq!(request.signed_amount(), -50_000);
    assert_eq!(
        request.account.as_ref().map(|a| a.as_str()),
        Some("acct_1"),
        "the payment's notes come along; they must name the payment's account"
    );
}

#[test]
fn an_uncaptured_payments_auto_refund_and_other_refund_states_move_nothing() {
    let mut auto = body(Some(REFUNDED));
    auto["payload"]["payment"]["entity"]["captured"] = json!(false);
    assert_eq!(normalise(&auto).movement, Movement::None);
    let mut created = body(Some(REFUNDED));
    created["event"] = json!("refund.created");
    created["payload"]["refund"]["entity"]["status"] = json!("pending");
    let event = normalise(&created);
    assert_eq!(event.movement, Movement::None);
    assert!(event.event_id.as_str().starts_with("refund.created:rfnd_"));
    let mut failed = body(Some(REFUNDED));
    failed["payload"]["refund"]["entity"]["status"] = json!("failed");
    assert_eq!(normalise(&failed).movement, Movement::None);
}

#[test]
fn the_event_id_header_is_not_the_key() {
    let payload = body(None);
    let with = |id: &str| {
        testing::normalise(
            &Razorpay,
            &testing::verified(None, None),
            &[("x-razorpay-event-id", id)],
            &payload,
        )
        .unwrap()
        .event_id
    };
    assert_eq!(with("HcsC3WyXH4cKgD"), with("forged"));
}
