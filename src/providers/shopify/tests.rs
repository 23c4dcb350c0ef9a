use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::*;
use crate::domain::{Direction, Link, Movement};
use crate::providers::testing;

const SECRET: &str = "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";
const BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com","financial_status":"paid","total_price":"199.00"}"#;
/// Shopify publishes no fixed vector (its JS tests compute theirs at run
/// time), so this one was computed once with Python's own HMAC:
/// `base64.b64encode(hmac.new(SECRET.encode(), BODY, hashlib.sha256).digest())`.
const COMPUTED_TAG: &str = "Wo2GwahHWEJ1zaiw6Xjq3D4cQsIcYgikPja+Yg0ZA6A=";

fn key(secret: &str) -> KeyBytes {
    testing::key(&Shopify, secret)
}

fn verify(tag: &str, body: &[u8], keys: &[KeyBytes]) -> Result<Verified, VerifyError> {
    testing::verify(&Shopify, &[(HMAC_HEADER, tag)], body, keys, 0)
}

#[test]
fn the_no_official_vector_python_tag_verifies_and_our_signer_reproduces_it() {
    let verified = verify(COMPUTED_TAG, BODY, &[key(SECRET)]).unwrap();
    assert_eq!(verified, testing::verified(None, None));
    let signed = testing::sign(&Shopify, &key(SECRET), BODY, "d6a5f8a2", 1_700_000_000);
    assert_eq!(signed.headers[0], (HMAC_HEADER, COMPUTED_TAG.to_owned()));
    assert_eq!(signed.body, BODY);
    // The rotated-out secret still configured: reported by position.
    let keys = [key("shpss_retired"), key(SECRET)];
    assert_eq!(verify(COMPUTED_TAG, BODY, &keys).unwrap().key_index, 1);
}

#[test]
fn a_tampered_body_a_wrong_secret_or_a_hex_digest_fails() {
    let tampered = String::from_utf8(BODY.to_vec())
        .unwrap()
        .replace("199.00", "999.00");
    assert_eq!(
        verify(COMPUTED_TAG, tampered.as_bytes(), &[key(SECRET)]),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    assert!(verify(COMPUTED_TAG, BODY, &[key("shpss_other")]).is_err());
    // Shopify's own validator accepts base64 only; the same MAC in hex is
    // valid base64 text of the wrong bytes.
    let hex_tag = hex::encode(STANDARD.decode(COMPUTED_TAG).unwrap());
    assert_eq!(
        verify(&hex_tag, BODY, &[key(SECRET)]),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    assert_eq!(
        verify("not base64!", BODY, &[key(SECRET)]),
        Err(VerifyError::MalformedHeader {
            header: HMAC_HEADER,
            problem: "not base64"
        })
    );
    assert_eq!(
        testing::verify(&Shopify, &[], BODY, &[key(SECRET)], 0),
        Err(VerifyError::MissingHeader(HMAC_HEADER))
    );
}

#[test]
fn nothing_time_based_is_signed() {
    assert_eq!(Shopify.default_tolerance_secs(), 0);
    // Years away from any clock, the signature still verifies.
    let far = testing::verify(
        &Shopify,
        &[(HMAC_HEADER, COMPUTED_TAG)],
        BODY,
        &[key(SECRET)],
        4_000_000_000,
    );
    assert!(far.is_ok());
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "3b1d54f0-9c3e-4a7e-8e0f-5d2c4a1b9e77".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 1999,
        currency: "EUR".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("450789469".into()),
    }
}

fn body(event_type: Option<&str>) -> Value {
    serde_json::from_slice(&Shopify.sample_body(&sample(event_type))).unwrap()
}

/// The body as delivered under `topic` (an unsigned header).
fn normalise(topic: &str, payload: &Value) -> Result<NormalisedEvent, MapError> {
    let headers = [(TOPIC_HEADER, topic), ("X-Shopify-Webhook-Id", "b54557e4")];
    testing::normalise(&Shopify, &testing::verified(None, None), &headers, payload)
}

#[test]
fn a_paid_order_credits_its_presentment_total_once_per_order() {
    let event = normalise(PAID, &body(None)).unwrap();
    assert_eq!(event.event_id.as_str(), "orders/paid:450789469");
    assert_eq!(event.object_id.as_deref(), Some("450789469"));
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
        ("acct_1", "EUR", 1999)
    );
    assert_eq!(posting.link, Link::Pays("450789469".into()));
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000, "microseconds");
}

#[test]
fn the_presentment_currency_is_credited_not_the_shop_currency() {
    let mut order = body(None);
    order["currency"] = json!("USD");
    order["total_price"] = json!("21.60");
    order["total_price_set"]["shop_money"] = json!({"amount": "21.60", "currency_code": "USD"});
    let Movement::Post(posting) = normalise(PAID, &order).unwrap().movement else {
        panic!("a credit");
    };
    assert_eq!(
        (posting.currency.code(), posting.amount.minor()),
        ("EUR", 1999)
    );
}

#[test]
fn an_order_not_yet_paid_is_ignored_under_a_key_its_payment_never_has() {
    let mut order = body(None);
    order["financial_status"] = json!("pending");
    let event = normalise(PAID, &order).unwrap();
    assert_eq!(event.movement, Movement::None);
    let key = event.event_id.as_str();
    assert!(key.starts_with("orders/paid:450789469:"), "{key}");
    assert_eq!(key.len(), "orders/paid:450789469:".len() + 16);
}

#[test]
fn a_refund_debits_its_successful_refund_transactions_from_its_order() {
    let mut refund = body(Some(REFUND));
    let transactions = refund["transactions"].as_array_mut().unwrap();
    let mut failed = transactions[0].clone();
    failed["status"] = json!("failure");
    failed["amount"] = json!("5.00");
    let mut second = transactions[0].clone();
    second["amount"] = json!("0.01");
    let mut authorization = transactions[0].clone();
    authorization["kind"] = json!("authorization");
    transactions.extend([failed, second, authorization]);
    let event = normalise(REFUND, &refund).unwrap();
    let refund_id = refund["id"].as_u64().unwrap();
    assert_eq!(event.event_id.as_str(), format!("refund:{refund_id}"));
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal: {:?}", event.movement);
    };
    assert_eq!(request.reversal.payment_ref, "450789469");
    assert_eq!(request.reversal.basis, Basis::Each);
    assert_eq!(request.signed_amount(), -2000, "19.99 + 0.01");
    assert_eq!(request.account, None, "the order's account is used");
}

#[test]
fn a_forged_topic_cannot_make_a_credit_or_a_refund() {
    let refund = body(Some(REFUND));
    let order = body(None);
    for (topic, payload) in [(PAID, &refund), (REFUND, &order)] {
        let event = normalise(topic, payload).unwrap();
        assert_eq!(event.movement, Movement::None, "{topic}");
        assert!(event.event_id.as_str().starts_with(topic));
    }
    // An unknown or missing topic maps nothing.
    assert_eq!(
        normalise("orders/create", &order).unwrap().movement,
        Movement::None
    );
    let bare = testing::normalise(&Shopify, &testing::verified(None, None), &[], &order).unwrap();
    assert_eq!(bare.movement, Movement::None);
}

#[test]
fn id_headers_do_not_change_the_key() {
    let order = body(None);
    let payload = order.clone();
    let again = |webhook_id: &str| {
        let headers = [
            (TOPIC_HEADER, "orders/updated"),
            ("X-Shopify-Webhook-Id", webhook_id),
            ("X-Shopify-Event-Id", webhook_id),
        ];
        testing::normalise(&Shopify, &testing::verified(None, None), &headers, &payload)
            .unwrap()
            .event_id
    };
    assert_eq!(again("a"), again("b"));
}

#[test]
fn a_refund_without_money_is_ignored_and_one_not_yet_successful_is_held() {
    let mut restock_only = body(Some(REFUND));
    restock_only["transactions"] = json!([]);
    assert_eq!(
        normalise(REFUND, &restock_only).unwrap().movement,
        Movement::None
    );
    let mut pending = body(Some(REFUND));
    pending["transactions"][0]["status"] = json!("pending");
    let Movement::Rejected(rejection) = normalise(REFUND, &pending).unwrap().movement else {
        panic!("held for an operator");
    };
    assert!(
        rejection
            .reason
            .contains("no successful refund transaction"),
        "{}",
        rejection.reason
    );
    let mut mixed = body(Some(REFUND));
    let mut other = mixed["transactions"][0].clone();
    other["currency"] = json!("USD");
    mixed["transactions"].as_array_mut().unwrap().push(other);
    let Movement::Rejected(rejection) = normalise(REFUND, &mixed).unwrap().movement else {
        panic!("two currencies cannot be summed");
    };
    assert_eq!(
        rejection.reason,
        "refund transactions are in both EUR and USD"
    );
    let mut precise = body(Some(REFUND));
    precise["transactions"][0]["amount"] = json!("19.999");
    assert!(matches!(
        normalise(REFUND, &precise).unwrap().movement,
        Movement::Rejected(_)
    ));
}

#[test]
fn the_signer_names_the_topic_the_body_has() {
    let sign = |payload: &Value| {
        let signed = testing::sign(
            &Shopify,
            &key(SECRET),
            payload.to_string().as_bytes(),
            "w1",
            1,
        );
        signed.headers[1].1.clone()
    };
    assert_eq!(sign(&body(None)), PAID);
    assert_eq!(sign(&body(Some(REFUND))), REFUND);
    let mut pending = body(None);
    pending["financial_status"] = json!("pending");
    assert_eq!(sign(&pending), "orders/updated");
}
