use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// The inputs of PayPal's SDK test (PayPal-Python-SDK
/// `test/unit_tests/notifications_test.py`, ../shared/providers.md 2.15):
/// the body, and the string the SDK builds from it. Its RSA signature needs
/// PayPal's sandbox certificate, which is not published with the test.
const SDK_BODY: &[u8] = include_bytes!("sdk_vector_body.json");
const SDK_SIGNED: &str =
    "dfb3be50-fd74-11e4-8bf3-77339302725b|2015-05-18T15:45:13Z|4JH86294D6297924G|2771810304";

/// A throwaway RSA key pair and self-signed certificate, generated once for
/// these tests with `openssl req -x509 -newkey rsa:2048 -nodes -days 36500`
/// (tests/fixtures/paypal/README.md); never PayPal's.
const KEY_PEM: &str = include_str!("../../../tests/fixtures/paypal/throwaway-key.pem");
const CERT_PEM: &str = include_str!("../../../tests/fixtures/paypal/throwaway-cert.pem");
const OTHER_CERT_PEM: &str = include_str!("../../../tests/fixtures/paypal/other-cert.pem");

fn settings() -> KindSettings {
    KindSettings {
        webhook_id: Some("4JH86294D6297924G".into()),
        ..KindSettings::default()
    }
}

#[test]
fn the_sdk_vector_builds_the_documented_signed_string() {
    assert_eq!(
        signed_string(
            "dfb3be50-fd74-11e4-8bf3-77339302725b",
            "2015-05-18T15:45:13Z",
            "4JH86294D6297924G",
            SDK_BODY
        ),
        SDK_SIGNED
    );
}

fn signed(body: &[u8], id: &str) -> SignedParts {
    let key = testing::key(&PayPal, KEY_PEM);
    PayPal.sign(
        &key,
        Unsigned {
            body: body.to_vec(),
            event_id: id,
            timestamp: 1_700_000_000,
            settings: &settings(),
        },
    )
}

fn verify(
    headers: &[(&'static str, String)],
    body: &[u8],
    certs: &[&str],
) -> Result<Verified, VerifyError> {
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let keys: Vec<KeyBytes> = certs.iter().map(|c| testing::key(&PayPal, c)).collect();
    testing::verify_with(&PayPal, &pairs, body, &keys, 1_700_000_000, &settings())
}

#[test]
fn a_throwaway_signature_verifies_with_its_certificate_only() {
    let signed = signed(SDK_BODY, "dfb3be50-fd74-11e4-8bf3-77339302725b");
    let verified = verify(&signed.headers, SDK_BODY, &[OTHER_CERT_PEM, CERT_PEM]).unwrap();
    assert_eq!(
        verified.key_index, 1,
        "any configured certificate may verify"
    );
    assert_eq!(
        verify(&signed.headers, SDK_BODY, &[OTHER_CERT_PEM]),
        Err(VerifyError::NoMatch { keys: 1 })
    );
    let mut tampered = SDK_BODY.to_vec();
    tampered[10] ^= 1;
    assert!(verify(&signed.headers, &tampered, &[CERT_PEM]).is_err());
}

fn with_header(
    headers: &[(&'static str, String)],
    name: &str,
    value: &str,
) -> Vec<(&'static str, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                *n,
                if *n == name {
                    value.to_owned()
                } else {
                    v.clone()
                },
            )
        })
        .collect()
}

#[test]
fn a_certificate_url_outside_paypal_is_refused_and_never_fetched() {
    let signed = signed(SDK_BODY, "t1");
    for url in [
        "https://evil.example/cert.pem",
        "http://api.paypal.com/v1/notifications/certs/CERT-1",
        "https://api.paypal.com.evil.example/cert",
        "https://paypal.com@evil.example/cert",
        "https://evilpaypal.com/cert",
        "https://api.paypal.com:8443/cert",
    ] {
        assert!(
            matches!(
                verify(
                    &with_header(&signed.headers, CERT_URL, url),
                    SDK_BODY,
                    &[CERT_PEM]
                ),
                Err(VerifyError::MalformedHeader {
                    header: CERT_URL,
                    ..
                })
            ),
            "{url}"
        );
    }
    for url in [
        "https://api.paypal.com/v1/notifications/certs/CERT-1",
        "https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77",
    ] {
        assert!(is_paypal_url(url), "{url}");
    }
    assert!(matches!(
        verify(
            &with_header(&signed.headers, ALGORITHM, "SHA1withRSA"),
            SDK_BODY,
            &[CERT_PEM]
        ),
        Err(VerifyError::MalformedHeader {
            header: ALGORITHM,
            ..
        })
    ));
}

#[test]
fn secrets_must_be_pem_certificates_or_keys() {
    assert!(PayPal.keys_from_secret(&Secret::new("whsec_abc")).is_err());
    assert!(
        PayPal
            .keys_from_secret(&Secret::new(
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
            ))
            .is_err()
    );
    assert!(PayPal.check_settings(&KindSettings::default()).is_err());
    assert!(PayPal.check_settings(&settings()).is_ok());
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "WH-1".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 2050,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("42311647XV020574X".into()),
    }
}

#[test]
fn captures_credit_decimal_amounts_and_refunds_find_their_capture() {
    let payload: Value = serde_json::from_slice(&PayPal.sample_body(&sample(None))).unwrap();
    let event = testing::normalise(&PayPal, &testing::verified(None, None), &[], &payload).unwrap();
    let Movement::Post(posting) = event.movement else {
        panic!("a credit");
    };
    assert_eq!(
        (posting.account.as_str(), posting.amount.minor()),
        ("acct_1", 2050)
    );
    assert_eq!(posting.link, Link::Pays("42311647XV020574X".into()));
    let refund: Value =
        serde_json::from_slice(&PayPal.sample_body(&sample(Some("PAYMENT.CAPTURE.REFUNDED"))))
            .unwrap();
    let event = testing::normalise(&PayPal, &testing::verified(None, None), &[], &refund).unwrap();
    assert_eq!(event.event_id.as_str(), "refund:REFWH1");
    let Movement::Reverse(request) = event.movement else {
        panic!("a reversal");
    };
    assert_eq!(request.reversal.payment_ref, "42311647XV020574X");
}
