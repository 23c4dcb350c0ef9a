use super::*;
use crate::domain::{Link, Movement};
use crate::providers::{JsonPath, testing};

fn scheme(template: &str, algorithm: Algorithm, encoding: Encoding) -> Scheme {
    Scheme {
        header: "x-signature",
        prefix: None,
        algorithm,
        encoding,
        template: Scheme::template(template).unwrap(),
        timestamp_header: template.contains("{timestamp}").then_some("x-timestamp"),
        id_header: template.contains("{id}").then_some("x-id"),
    }
}

fn settings(scheme: Scheme) -> KindSettings {
    KindSettings {
        generic: Some(scheme),
        ..KindSettings::default()
    }
}

fn key(secret: &str) -> KeyBytes {
    testing::key(&GenericHmac, secret)
}

/// GitHub's documented example (docs.github.com, "Validating webhook
/// deliveries"): secret `It's a Secret to Everybody`, payload `Hello,
/// World!`, header `X-Hub-Signature-256: sha256=757107...`: GitHub's scheme
/// written as a generic one.
#[test]
fn githubs_published_vector_verifies_as_a_generic_scheme() {
    let github = Scheme {
        header: "x-hub-signature-256",
        prefix: Some("sha256=".into()),
        ..scheme("{body}", Algorithm::Sha256, Encoding::Hex)
    };
    let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    let verified = testing::verify_with(
        &GenericHmac,
        &[("X-Hub-Signature-256", header)],
        b"Hello, World!",
        &[key("It's a Secret to Everybody")],
        1_700_000_000,
        &settings(github),
    )
    .unwrap();
    assert_eq!(verified.key_index, 0);
}

fn sign_and_verify(scheme: Scheme, body: &[u8], now: i64) -> Result<Verified, VerifyError> {
    let settings = settings(scheme);
    let signed = GenericHmac.sign(
        &key("hex:00112233"),
        Unsigned {
            body: body.to_vec(),
            event_id: "evt_7",
            timestamp: 1_700_000_000,
            settings: &settings,
        },
    );
    let headers: Vec<(&str, &str)> = signed
        .headers
        .iter()
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
    testing::verify_with(
        &GenericHmac,
        &headers,
        body,
        &[key("other"), key("hex:00112233")],
        now,
        &settings,
    )
}

#[test]
fn every_algorithm_encoding_and_template_round_trips() {
    for algorithm in [Algorithm::Sha256, Algorithm::Sha512] {
        for encoding in [Encoding::Hex, Encoding::Base64] {
            for template in [
                "{body}",
                "{timestamp}.{body}",
                "{id}.{timestamp}.{body}",
                "v1:{timestamp}:{body}",
            ] {
                let verified =
                    sign_and_verify(scheme(template, algorithm, encoding), b"{}", 1_700_000_000)
                        .unwrap_or_else(|e| panic!("{template} {algorithm:?} {encoding:?}: {e}"));
                assert_eq!(verified.key_index, 1);
                assert_eq!(
                    verified.event_id.as_deref(),
                    template.contains("{id}").then_some("evt_7")
                );
            }
        }
    }
}

#[test]
fn a_signed_timestamp_keeps_to_the_tolerance() {
    let timed = scheme("{timestamp}.{body}", Algorithm::Sha256, Encoding::Hex);
    assert!(sign_and_verify(timed.clone(), b"{}", 1_700_000_300).is_ok());
    assert!(matches!(
        sign_and_verify(timed, b"{}", 1_700_000_301),
        Err(VerifyError::OutsideTolerance { .. })
    ));
}

#[test]
fn templates_sign_the_body_once() {
    assert_eq!(
        Scheme::template("{timestamp}.{body}").unwrap(),
        [Part::Timestamp, Part::Literal(".".into()), Part::Body]
    );
    for bad in ["{timestamp}", "{body}{body}", "{id}{id}{body}"] {
        assert!(Scheme::template(bad).is_err(), "{bad}");
    }
}

#[test]
fn secrets_may_be_written_as_base64_or_hex() {
    assert_eq!(key("base64:YWJj").expose(), b"abc");
    assert_eq!(key("hex:616263").expose(), b"abc");
    assert_eq!(key("abc").expose(), b"abc");
    assert!(
        GenericHmac
            .keys_from_secret(&Secret::new("hex:zz"))
            .is_err()
    );
}

#[test]
fn listed_types_move_money_at_the_configured_paths() {
    let mut mapping = testing::mapping(&GenericHmac);
    mapping.credit_types = Some(vec!["sale".into()]);
    mapping.amount_path = Some(JsonPath::parse("data.total").unwrap());
    mapping.amount_format = Some(AmountFormat::Decimal);
    mapping.currency_path = Some(JsonPath::parse("data.currency").unwrap());
    mapping.account_path = JsonPath::parse("data.customer").unwrap();
    mapping.sequence_path = Some(JsonPath::parse("data.seq").unwrap());
    let payload = json!({"id": "s-1", "type": "sale",
        "data": {"total": "12.50", "currency": "EUR", "customer": "acct_9", "seq": 4}});
    let verified = testing::verified(None, Some(1_700_000_000));
    let mut events =
        testing::normalise_all(&GenericHmac, &verified, &[], &payload, &mapping).unwrap();
    let event = events.remove(0);
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(
        (
            posting.account.as_str(),
            posting.amount.minor(),
            posting.sequence
        ),
        ("acct_9", 1250, 4)
    );
    let mut other = payload.clone();
    other["type"] = json!("refund");
    let ignored = testing::normalise_all(&GenericHmac, &verified, &[], &other, &mapping).unwrap();
    assert_eq!(ignored[0].movement, Movement::None);
}

/// An in-house sender's listed debit types are refunds where the source
/// names `reverses_path`: matched to the payment at that path, as every
/// provider's refunds are; its credits pay the payment at `payment_path`.
#[test]
fn with_reverses_path_listed_debits_reverse_their_payment() {
    let mut mapping = testing::mapping(&GenericHmac);
    mapping.credit_types = Some(vec!["sale".into()]);
    mapping.debit_types = Some(vec!["refund".into()]);
    mapping.payment_path = Some(JsonPath::parse("data.sale_id").unwrap());
    mapping.reverses_path = Some(JsonPath::parse("data.refunded_sale").unwrap());
    let verified = testing::verified(None, Some(1_700_000_000));
    let event = |body: Value| {
        let mut events =
            testing::normalise_all(&GenericHmac, &verified, &[], &body, &mapping).unwrap();
        events.remove(0).movement
    };
    let sale = json!({"id": "e1", "type": "sale", "account_id": "acct_1", "amount": 1000,
        "currency": "USD", "data": {"sale_id": 4711}});
    let Movement::Post(posting) = event(sale.clone()) else {
        panic!("a credit");
    };
    assert_eq!(posting.link, Link::Pays("4711".into()));
    let mut refund = sale.clone();
    refund["type"] = json!("refund");
    refund["data"] = json!({"refunded_sale": "4711"});
    let Movement::Reverse(request) = event(refund.clone()) else {
        panic!("a refund");
    };
    assert_eq!(
        (
            request.reversal.payment_ref.as_str(),
            request.signed_amount()
        ),
        ("4711", -1000)
    );
    refund["data"] = json!({});
    let Movement::Rejected(rejection) = event(refund) else {
        panic!("a refund naming no payment is rejected");
    };
    assert_eq!(rejection.reason, "no payment id at data.refunded_sale");
    // A credit naming no payment is a credit of its own, as with every kind.
    let mut top_up = sale;
    top_up["data"] = json!({});
    let Movement::Post(posting) = event(top_up) else {
        panic!("a credit");
    };
    assert_eq!(posting.link, Link::None);
}
