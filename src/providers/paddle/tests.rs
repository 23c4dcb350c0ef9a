use serde_json::json;

use super::*;
use crate::domain::{Link, Movement};
use crate::providers::testing;

/// Paddle's own test (paddle-python-sdk `TestVerifier::
/// test_validate_paddle_signature_header_integrity`, ../shared/providers.md
/// 2.4): the header carries a non-hex `h1=dummy` beside the real signature.
const VECTOR_HEADER: &str =
    "ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02";
const VECTOR_BODY: &[u8] = b"hello-world";
const VECTOR_SECRET: &str = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh";
const VECTOR_WRONG: [&str; 2] = [
    "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_TjIG2BXbm83HPXqNfziwe506sBEdqL/4",
    "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_vB/yIOnTOCWIvpBadM5jzBZPHc7OmdSo",
];
const VECTOR_TS: i64 = 1_696_195_954;

fn key(secret: &str) -> KeyBytes {
    testing::key(&Paddle, secret)
}

fn verify(header: &str, body: &[u8], keys: &[KeyBytes], now: i64) -> Result<Verified, VerifyError> {
    testing::verify(&Paddle, &[("Paddle-Signature", header)], body, keys, now)
}

#[test]
fn the_official_vector_verifies_only_with_its_secret() {
    let verified = verify(VECTOR_HEADER, VECTOR_BODY, &[key(VECTOR_SECRET)], VECTOR_TS).unwrap();
    assert_eq!(verified.timestamp, Some(VECTOR_TS));
    for wrong in VECTOR_WRONG {
        assert_eq!(
            verify(VECTOR_HEADER, VECTOR_BODY, &[key(wrong)], VECTOR_TS),
            Err(VerifyError::NoMatch { keys: 1 })
        );
    }
    // Rotation: any configured secret may match, reported by position.
    let keys = [key(VECTOR_WRONG[0]), key(VECTOR_SECRET)];
    assert_eq!(
        verify(VECTOR_HEADER, VECTOR_BODY, &keys, VECTOR_TS)
            .unwrap()
            .key_index,
        1
    );
}

#[test]
fn our_signer_reproduces_the_official_signature() {
    let signed = testing::sign(&Paddle, &key(VECTOR_SECRET), VECTOR_BODY, "", VECTOR_TS);
    let real = VECTOR_HEADER.rsplit(";h1=").next().unwrap();
    assert_eq!(
        signed.headers,
        vec![(HEADER, format!("ts={VECTOR_TS};h1={real}"))]
    );
}

#[test]
fn the_window_is_five_seconds_each_way() {
    let keys = [key(VECTOR_SECRET)];
    assert!(verify(VECTOR_HEADER, VECTOR_BODY, &keys, VECTOR_TS + 5).is_ok());
    assert!(verify(VECTOR_HEADER, VECTOR_BODY, &keys, VECTOR_TS - 5).is_ok());
    for skew in [6, -6] {
        assert!(matches!(
            verify(VECTOR_HEADER, VECTOR_BODY, &keys, VECTOR_TS + skew),
            Err(VerifyError::OutsideTolerance {
                tolerance_secs: 5,
                ..
            })
        ));
    }
}

#[test]
fn malformed_headers_are_named() {
    for (header, problem) in [
        ("garbage", "expected key=value items separated by ;"),
        ("ts=1;h1=00;v1=00", "only ts= and h1= items are allowed"),
        ("h1=00", "no ts= timestamp"),
        ("ts=1696195954", "no h1= signature"),
        ("ts=x;h1=00", "ts= is not a unix timestamp"),
    ] {
        assert_eq!(
            verify(header, VECTOR_BODY, &[key(VECTOR_SECRET)], VECTOR_TS),
            Err(malformed(problem)),
            "{header}"
        );
    }
}

fn sample(event_type: Option<&str>) -> Sample {
    Sample {
        event_id: "evt_01hv8x2acma2gz3ysy1w9h7q6e".into(),
        event_type: event_type.map(str::to_owned),
        account_id: "acct_1".into(),
        amount_minor: 2500,
        currency: "USD".into(),
        sequence: None,
        timestamp: 1_700_000_000,
        payment: Some("txn_01hv8wptq8987qeep44cyrewp9".into()),
    }
}

fn normalise(sample: &Sample) -> NormalisedEvent {
    let payload: Value = serde_json::from_slice(&Paddle.sample_body(sample)).unwrap();
    testing::normalise(&Paddle, &testing::verified(None, Some(1)), &[], &payload).unwrap()
}

#[test]
fn a_completed_transaction_credits_its_grand_total() {
    let event = normalise(&sample(None));
    let Movement::Post(posting) = event.movement else {
        panic!("a credit: {:?}", event.movement);
    };
    assert_eq!(
        (posting.account.as_str(), posting.amount.minor()),
        ("acct_1", 2500)
    );
    assert_eq!(
        posting.link,
        Link::Pays("txn_01hv8wptq8987qeep44cyrewp9".into())
    );
    assert_eq!(posting.sequence, 1_700_000_000 * 1_000_000, "microseconds");
}

#[test]
fn an_approved_refund_adjustment_reverses_its_transaction_once() {
    for event_type in ["adjustment.created", "adjustment.updated"] {
        let event = normalise(&sample(Some(event_type)));
        assert_eq!(
            event.event_id.as_str(),
            "adjustment:adj_01hv8x2acma2gz3ysy1w9h7q6e"
        );
        let Movement::Reverse(request) = event.movement else {
            panic!("a reversal: {:?}", event.movement);
        };
        assert_eq!(
            request.reversal.payment_ref,
            "txn_01hv8wptq8987qeep44cyrewp9"
        );
        assert_eq!(request.signed_amount(), -2500);
    }
    let mut pending: Value =
        serde_json::from_slice(&Paddle.sample_body(&sample(Some("adjustment.created")))).unwrap();
    pending["data"]["status"] = json!("pending_approval");
    let event =
        testing::normalise(&Paddle, &testing::verified(None, Some(1)), &[], &pending).unwrap();
    assert_eq!(event.movement, Movement::None, "not yet approved");
}
