use serde_json::json;

use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// Square's own vectors (square-python-sdk `tests/integration/
/// test_webhooks_helper.py`, the same in its PHP, Ruby and Node SDKs;
/// ../shared/providers.md 2.6): (body, signature key, notification URL,
/// signature).
const OFFICIAL: [(&str, &str, &str, &str); 2] = [
    (
        r#"{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}"#,
        "Ibxx_5AKakO-3qeNVR61Dw",
        "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9",
        "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=",
    ),
    (
        r#"{"data":{"type":"webhooks","id":">id<"}}"#,
        "signature-key",
        "https://webhook.site/webhooks",
        "Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U=",
    ),
];

fn key(secret: &str) -> KeyBytes {
    testing::key(&Square, secret)
}

fn settings(url: &str) -> KindSettings {
    KindSettings {
        notification_url: Some(url.to_owned()),
        ..KindSettings::default()
    }
}

fn verify(
    signature: &str,
    body: &str,
    keys: &[KeyBytes],
    url: &str,
) -> Result<Verified, VerifyError> {
    testing::verify_with(
        &Square,
        &[(HEADER, signature)],
        body.as_bytes(),
        keys,
        1_700_000_000,
        &settings(url),
    )
}

#[test]
fn both_official_vectors_verify_and_our_signer_reproduces_them() {
    for (body, secret, url, signature) in OFFICIAL {
        let verified = verify(signature, body, &[key(secret)], url).unwrap();
        assert_eq!((verified.key_index, verified.timestamp), (0, None));
        let signed = Square.sign(
            &key(secret),
            Unsigned {
                body: body.as_bytes().to_vec(),
                event_id: "",
                timestamp: 0,
                settings: &settings(url),
            },
        );
        assert_eq!(signed.headers, vec![(HEADER, signature.to_owned())]);
        assert_eq!(signed.body, body.as_bytes());
    }
}

#[test]
fn the_signature_covers_the_url_exactly_as_configured() {
    let (body, secret, url, signature) = OFFICIAL[0];
    let no_match = Err(VerifyError::NoMatch { keys: 1 });
    for other in [
        format!("{url}/"),
        url.replacen("https", "http", 1),
        "https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9".to_owned(),
    ] {
        assert_eq!(verify(signature, body, &[key(secret)], &other), no_match);
    }
    // Without a configured URL nothing can match (config refuses that).
    let unset = testing::verify(
        &Square,
        &[(HEADER, signature)],
        body.as_bytes(),
        &[key(secret)],
        0,
    );
    assert_eq!(unset, no_match);
}

#[test]
fn tampered_bodies_and_wrong_keys_fail_and_any_key_may_match() {
    let (body, secret, url, signature) = OFFICIAL[0];
    let no_match = Err(VerifyError::NoMatch { keys: 1 });
    assert_eq!(
        verify(
            signature,
            &body.replace("MLEF", "MLEG"),
            &[key(secret)],
            url
        ),
        no_match
    );
    assert_eq!(
        verify(signature, body, &[key("MCmhFRxGX82xMwg5FsaoQA")], url),
        no_match
    );
    let keys = [key("MCmhFRxGX82xMwg5FsaoQA"), key(secret)];
    assert_eq!(verify(signature, body, &keys, url).unwrap().key_index, 1);
}

#[test]
fn a_header_that_is_not_base64_or_missing_is_named() {
    let (body, secret, url, _) = OFFICIAL[0];
    assert_eq!(
        verify("not*base64", body, &[key(secret)], url),
        Err(VerifyError::MalformedHeader {
            header: HEADER,
            problem: "not base64"
        })
    );
    let missing = testing::verify_with(
        &Square,
        &[],
        body.as_bytes(),
        &[key(secret)],
        0,
        &settings(url),
    );
    assert_eq!(missing, Err(VerifyError::MissingHeader(HEADER)));
    assert_eq!(Square.default_tolerance_secs(), 0, "no time is signed");
}

#[test]
fn a_square_source_needs_its_notification_url() {
    // Config refuses a square source without it with this key and message,
    // after the source's name (as it does every kind's refused setting, and
    // checks that itself).
    let refused = Square.check_settings(&KindSettings::default()).unwrap_err();
    assert_eq!(refused.key, "notification_url");
    assert!(
        refused.to_string().starts_with("kind square signs"),
        "{refused}"
    );
    for bad in [
        "/webhooks/square",
        " https://a.example/x",
        "ftp://a.example/x",
    ] {
        assert!(Square.check_settings(&settings(bad)).is_err(), "{bad}");
    }
    for good in [
        "https://hooks.example.com/webhooks/square",
        "https://hooks.example.com/sq",
    ] {
        assert!(Square.check_settings(&settings(good)).is_ok(), "{good}");
    }
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 2500,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("KkAkhdMsgzn59SM8A89WgKwekxLZY".into()),
    }
}

fn body(sample: &Sample) -> Value {
    serde_json::from_slice(&Square.sample_body(sample)).unwrap()
}

fn normalise(payload: &Value) -> NormalisedEvent {
    testing::normalise(&Square, &testing::verified(None, None), &[], payload).unwrap()
}

#[test]
fn a_completed_payment_credits_once_whichever_event_reports_it() {
    for event_type in ["payment.created", "payment.updated"] {
        let mut payload = body(&sample(Some(event_type)));
        payload["created_at"] = json!("2026-06-01T12:00:00.123456789Z");
        let event = normalise(&payload);
        assert_eq!(
            event.event_id.as_str(),
            "payment:KkAkhdMsgzn59SM8A89WgKwekxLZY"
        );
        let Movement::Post(posting) = event.movement else {
            panic!("a credit: {:?}", event.movement);
        };
        assert_eq!(
            (posting.account.as_str(), posting.currency.code()),
            ("acct_1", "USD")
        );
        assert_eq!(posting.amount.minor(), 2500);
        assert_eq!(
            posting.link,
            Link::Pays("KkAkhdMsgzn59SM8A89WgKwekxLZY".into())
        );
        assert_eq!(
            posting.sequence % 1_000_000,
            123_456,
            "microseconds kept, nanoseconds dropped"
        );
    }
}

#[test]
fn a_payment_not_yet_completed_and_other_types_move_nothing() {
    let mut payload = body(&sample(None));
    for status in ["APPROVED", "PENDING", "CANCELED", "FAILED"] {
        payload["data"]["object"]["payment"]["status"] = json!(status);
        let event = normalise(&payload);
        assert_eq!(event.movement, Movement::None, "{status}");
        assert_eq!(
            event.event_id.as_str(),
            "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc",
            "the event's own id, never a money key"
        );
    }
    payload["type"] = json!("order.updated");
    payload["data"]["object"]["payment"]["status"] = json!("COMPLETED");
    assert_eq!(normalise(&payload).movement, Movement::None);
}

#[test]
fn a_completed_refund_reverses_its_payment_once() {
    for event_type in ["refund.created", "refund.updated"] {
        let event = normalise(&body(&sample(Some(event_type))));
        assert_eq!(
            event.event_id.as_str(),
            "refund:KkAkhdMsgzn59SM8A89WgKwekxLZY_6a8f5f28-54a1-4eb0-a98a-3111513fd4fc"
        );
        let Movement::Reverse(request) = event.movement else {
            panic!("a reversal: {:?}", event.movement);
        };
        assert_eq!(
            request.reversal.payment_ref,
            "KkAkhdMsgzn59SM8A89WgKwekxLZY"
        );
        assert_eq!(request.signed_amount(), -2500);
        assert_eq!(request.account, None, "the payment's account");
    }
    let mut pending = body(&sample(Some("refund.created")));
    pending["data"]["object"]["refund"]["status"] = json!("PENDING");
    assert_eq!(normalise(&pending).movement, Movement::None);
}
