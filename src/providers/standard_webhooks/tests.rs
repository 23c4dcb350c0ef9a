use super::*;
use serde_json::json;

use crate::domain::{AccountId, Basis, Direction, Link, Movement};
use crate::providers::JsonPath;
use crate::providers::testing;

/// Official vectors from the Standard Webhooks repository
/// (../shared/providers.md 2.2): (secret, msg_id, timestamp, payload, signature).
const VECTORS: [(&str, &str, i64, &str, &str); 2] = [
    (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1_614_265_330,
        r#"{"test": 2432232314}"#,
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    ),
    (
        "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
        "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
        1_649_367_553,
        r#"{"email":"test@example.com","username":"test_user"}"#,
        "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
    ),
];

fn key(secret: &str) -> KeyBytes {
    testing::key(&StandardWebhooks, secret)
}

fn verify(
    headers: &[(&str, &str)],
    body: &str,
    keys: &[KeyBytes],
    now: i64,
) -> Result<Verified, VerifyError> {
    testing::verify(&StandardWebhooks, headers, body.as_bytes(), keys, now)
}

#[test]
fn official_vectors_verify_and_are_reproduced_by_our_signer() {
    for (secret, id, ts, body, signature) in VECTORS {
        let t = ts.to_string();
        let headers = [
            ("webhook-id", id),
            ("webhook-timestamp", t.as_str()),
            ("webhook-signature", signature),
        ];
        let verified = verify(&headers, body, &[key(secret)], ts).unwrap();
        assert_eq!(verified.event_id.as_deref(), Some(id));
        let signed = testing::sign(&StandardWebhooks, &key(secret), body.as_bytes(), id, ts);
        assert_eq!(
            signed.headers[2],
            ("webhook-signature", signature.to_owned())
        );
    }
}

#[test]
fn official_negative_vectors_fail() {
    let (secret, id, ts, body, _) = VECTORS[0];
    let t = ts.to_string();
    for bad in [
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=",
        "v1,R3PTzyfHASBKHH98a7yexTwaJ4yNIcGhFQc1yuN+BPU=",
    ] {
        let headers = [
            ("webhook-id", id),
            ("webhook-timestamp", t.as_str()),
            ("webhook-signature", bad),
        ];
        assert_eq!(
            verify(&headers, body, &[key(secret)], ts),
            Err(VerifyError::NoMatch { keys: 1 })
        );
    }
}

#[test]
fn any_listed_signature_and_svix_names_are_accepted() {
    let (secret, id, ts, body, signature) = VECTORS[0];
    let t = ts.to_string();
    let list = format!("v1a,AAAA v1,bm90LWl0 {signature}");
    let headers = [
        ("svix-id", id),
        ("svix-timestamp", t.as_str()),
        ("svix-signature", list.as_str()),
    ];
    let keys = [key("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"), key(secret)];
    assert_eq!(verify(&headers, body, &keys, ts).unwrap().key_index, 1);
}

#[test]
fn bad_headers_and_times_are_refused() {
    let (secret, id, ts, body, signature) = VECTORS[0];
    let t = ts.to_string();
    let keys = [key(secret)];
    let with = |id: &'static str, t: &str, sig: &str| -> Result<Verified, VerifyError> {
        verify(
            &[
                ("webhook-id", id),
                ("webhook-timestamp", t),
                ("webhook-signature", sig),
            ],
            body,
            &keys,
            ts,
        )
    };
    assert!(matches!(
        with("a.b", &t, signature),
        Err(VerifyError::MalformedHeader {
            header: "webhook-id",
            ..
        })
    ));
    assert!(matches!(
        with(id, "soon", signature),
        Err(VerifyError::MalformedHeader {
            header: "webhook-timestamp",
            ..
        })
    ));
    assert!(matches!(
        with(id, &t, "garbage"),
        Err(VerifyError::MalformedHeader {
            header: "webhook-signature",
            ..
        })
    ));
    let old = (ts - 600).to_string();
    assert!(matches!(
        with(id, &old, signature),
        Err(VerifyError::OutsideTolerance { skew_secs: 600, .. })
    ));
    assert_eq!(
        verify(&[("webhook-id", id)], body, &keys, ts),
        Err(VerifyError::MissingHeader("webhook-timestamp"))
    );
}

#[test]
fn secrets_must_be_base64() {
    assert!(
        StandardWebhooks
            .keys_from_secret(&Secret::new("whsec_not base64!"))
            .is_err()
    );
    assert!(
        StandardWebhooks
            .keys_from_secret(&Secret::new("whsec_"))
            .is_err()
    );
    // Padding is optional, as in the reference libraries.
    assert_eq!(key("whsec_YWJj").expose(), b"abc");
    assert_eq!(key("YWI").expose(), b"ab");
}

fn normalise(body: &str, timestamp: i64) -> NormalisedEvent {
    let payload: Value = serde_json::from_str(body).unwrap();
    let verified = testing::verified(Some("msg_1"), Some(timestamp));
    testing::normalise(&StandardWebhooks, &verified, &[], &payload).unwrap()
}

#[test]
fn credits_and_debits_with_sequence_defaulting_to_the_timestamp() {
    let body =
        r#"{"type":"balance.debit","data":{"account_id":"a","amount_minor":5,"currency":"JPY"}}"#;
    let Movement::Post(posting) = normalise(body, 1_700_000_000).movement else {
        panic!("expected a posting");
    };
    assert_eq!(posting.direction, Direction::Debit);
    assert_eq!(
        (
            posting.amount.minor(),
            posting.sequence,
            posting.explicit_sequence
        ),
        (5, 1_700_000_000, false)
    );
    let body = r#"{"type":"balance.credit","data":{"account_id":"a","amount_minor":5,"currency":"USD","sequence":42}}"#;
    let Movement::Post(posting) = normalise(body, 1_700_000_000).movement else {
        panic!("expected a posting");
    };
    assert_eq!(
        (
            posting.direction,
            posting.sequence,
            posting.explicit_sequence
        ),
        (Direction::Credit, 42, true)
    );
}

#[test]
fn the_body_event_time_outranks_the_signed_delivery_time() {
    // A retry is re-signed later; the event time in the body does not move.
    let body = r#"{"type":"balance.credit","timestamp":"2023-11-14T22:13:20.750Z","data":{"account_id":"a","amount_minor":5,"currency":"USD"}}"#;
    let event = normalise(body, 1_800_000_000);
    let Movement::Post(posting) = event.movement else {
        panic!("expected a posting");
    };
    assert_eq!(posting.sequence, 1_700_000_000);
    assert_eq!(
        event.occurred_at.map(|t| t.timestamp_millis()),
        Some(1_700_000_000_750)
    );
    let body = r#"{"type":"balance.credit","timestamp":"yesterday","data":{"account_id":"a","amount_minor":5,"currency":"USD"}}"#;
    let Movement::Rejected(rejection) = normalise(body, 1).movement else {
        panic!("expected a rejection");
    };
    assert_eq!(rejection.reason, "timestamp is not an RFC 3339 time");
}

#[test]
fn unknown_types_are_ignored_and_bad_fields_rejected() {
    assert_eq!(
        normalise(r#"{"type":"user.created","data":{}}"#, 1).movement,
        Movement::None
    );
    let body = r#"{"type":"balance.credit","data":{"account_id":"a","amount_minor":"15","currency":"USD","sequence":1.5}}"#;
    let Movement::Rejected(rejection) = normalise(body, 1).movement else {
        panic!("expected a rejection");
    };
    assert_eq!(
        rejection.reason,
        "amount must be a JSON integer of minor units, not a string; sequence must be an integer"
    );
}

/// With `payment_path` and `reverses_path`, a credit pays the payment it
/// names and a debit is a refund of the payment it names, for its own
/// amount; a debit naming none is rejected, never posted as a plain debit.
#[test]
fn configured_payment_paths_make_debits_refunds_of_their_payment() {
    let mut mapping = testing::mapping(&StandardWebhooks);
    mapping.payment_path = Some(JsonPath::parse("data.payment").unwrap());
    mapping.reverses_path = Some(JsonPath::parse("data.refunds").unwrap());
    let verified = testing::verified(Some("msg_1"), Some(1_700_000_000));
    let under = |mapping: &Mapping, body: Value| {
        let mut events =
            testing::normalise_all(&StandardWebhooks, &verified, &[], &body, mapping).unwrap();
        events.remove(0).movement
    };
    let event = |body: Value| under(&mapping, body);
    let data = json!({"account_id": "a", "amount_minor": 300, "currency": "USD"});
    let mut credit = json!({"type": "balance.credit", "data": data.clone()});
    credit["data"]["payment"] = json!("pay_1");
    let Movement::Post(posting) = event(credit) else {
        panic!("a credit");
    };
    assert_eq!(posting.link, Link::Pays("pay_1".into()));
    let mut debit = json!({"type": "balance.debit", "data": data.clone()});
    debit["data"]["refunds"] = json!("pay_1");
    let Movement::Reverse(request) = event(debit.clone()) else {
        panic!("a refund");
    };
    assert_eq!(
        (
            request.reversal.payment_ref.as_str(),
            request.reversal.basis,
            request.signed_amount(),
            request.account.as_ref().map(AccountId::as_str),
        ),
        ("pay_1", Basis::Each, -300, Some("a"))
    );
    for (refunds, reason) in [
        (Value::Null, "no payment id at data.refunds"),
        (
            json!(""),
            "payment id at data.refunds must be 1-255 characters without control characters",
        ),
        (
            json!(["pay_1"]),
            "payment id at data.refunds must be a string, not an array",
        ),
    ] {
        debit["data"]["refunds"] = refunds;
        let Movement::Rejected(rejection) = event(debit.clone()) else {
            panic!("a rejection for {reason}");
        };
        assert_eq!(rejection.reason, reason);
        assert_eq!(rejection.signed_amount, Some(-300));
    }
    // Without the keys, as before: a plain debit, a credit of its own.
    let plain = under(&testing::mapping(&StandardWebhooks), debit);
    assert!(matches!(plain, Movement::Post(p) if p.link == Link::None));
}
