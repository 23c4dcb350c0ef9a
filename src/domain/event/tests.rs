//! Unit tests of postings, rejections and `make_storable`.

use super::*;
use serde_json::json;

fn fields<'a>(account: &'a Value, currency: &'a Value, amount: &'a Value) -> PostingFields<'a> {
    PostingFields {
        direction: Direction::Debit,
        account_path: "data.account_id",
        account: Some(account),
        currency: Some(currency),
        amount: Some(amount),
        sequence: Ok(7),
        explicit_sequence: true,
        amount_format: AmountFormat::Minor,
        payment: Ok(None),
        part: false,
    }
}

#[test]
fn valid_fields_make_a_signed_posting() {
    let (a, c, m) = (json!("acct_1"), json!("usd"), json!(250));
    let Movement::Post(posting) = fields(&a, &c, &m).into_movement() else {
        panic!("expected a posting");
    };
    assert_eq!(posting.signed_amount(), -250);
    assert_eq!(posting.currency.code(), "USD");
    assert_eq!(posting.sequence, 7);
}

#[test]
fn every_problem_is_named_and_valid_parts_kept() {
    let (a, c, m) = (json!(42), json!("usd "), json!(100));
    let Movement::Rejected(rejection) = fields(&a, &c, &m).into_movement() else {
        panic!("expected a rejection");
    };
    assert_eq!(
        rejection.reason,
        "account id at data.account_id must be a string, not a number; \
         currency \"usd \" is not a three-letter ISO 4217 code"
    );
    assert_eq!(rejection.account, None);
    assert_eq!(rejection.signed_amount, Some(-100));
    assert_eq!(rejection.sequence, Some(7));
}

#[test]
fn sequences_beyond_two_to_the_62_are_refused() {
    let (a, c, m) = (json!("acct_1"), json!("usd"), json!(250));
    for (sequence, ok) in [
        (MAX_SEQUENCE, true),
        (-MAX_SEQUENCE, true),
        (i64::MAX, false),
    ] {
        let mut f = fields(&a, &c, &m);
        f.sequence = Ok(sequence);
        match f.into_movement() {
            Movement::Post(posting) => assert!(ok && posting.sequence == sequence),
            Movement::Rejected(r) => {
                assert!(!ok, "{sequence}");
                assert!(r.reason.contains("+/-2^62"), "{}", r.reason);
            }
            Movement::None | Movement::Reverse(_) => unreachable!(),
        }
    }
}

fn credit(event_type: &str, object_id: Option<&str>, payment: &str) -> NormalisedEvent {
    let (a, c, m) = (json!("acct_1"), json!("usd"), json!(250));
    let mut f = fields(&a, &c, &m);
    f.direction = Direction::Credit;
    f.payment = Ok(Some(payment.to_owned()));
    NormalisedEvent {
        event_id: EventId::parse("evt_1").unwrap(),
        event_type: event_type.to_owned(),
        object_id: object_id.map(str::to_owned),
        occurred_at: None,
        movement: f.into_movement(),
        payload: None,
    }
}

#[test]
fn plain_events_are_stored_as_they_are() {
    let mut event = credit("payment_intent.succeeded", Some("pi_1"), "pi_1");
    let before = event.clone();
    event.make_storable();
    assert_eq!(event, before);
}

#[test]
fn unstorable_text_rejects_the_event_and_is_escaped() {
    let mut event = credit("pay\u{0}ment", Some("pi_\u{0}"), "pi_1");
    event.make_storable();
    assert_eq!(event.event_type, "pay\\u{0}ment");
    assert_eq!(event.object_id.as_deref(), Some("pi_\\u{0}"));
    let Movement::Rejected(rejection) = &event.movement else {
        panic!("rejected: {event:?}");
    };
    assert_eq!(
        rejection.reason,
        "the event type has control characters or is over 255 bytes; \
         the object id is empty, has control characters or is over 255 bytes"
    );
    assert_eq!(rejection.signed_amount, Some(250));
}

#[test]
fn a_payment_id_that_cannot_be_stored_rejects_the_credit() {
    let mut event = credit("payment_intent.succeeded", None, &"p".repeat(256));
    event.make_storable();
    assert!(
        matches!(&event.movement, Movement::Rejected(r) if r.reason.starts_with("the payment id")),
        "{event:?}"
    );
    let (a, c, m) = (json!("acct_1"), json!("usd"), json!(250));
    let mut f = fields(&a, &c, &m);
    f.payment = Err("payment id at data.object.id must be 1-255 characters".to_owned());
    let Movement::Rejected(rejection) = f.into_movement() else {
        panic!("a bad payment id rejects");
    };
    assert!(rejection.reason.starts_with("payment id at data.object.id"));
}

#[test]
fn rejection_reasons_are_escaped_and_bounded() {
    let mut event = credit("t", None, "pi_1");
    event.reject_as(&format!("bad \u{0} {}", "x".repeat(2000)));
    event.make_storable();
    let Movement::Rejected(rejection) = &event.movement else {
        panic!("rejected");
    };
    assert!(
        rejection.reason.starts_with("bad \\u{0} xx"),
        "{}",
        rejection.reason
    );
    assert!(rejection.reason.len() <= text::MAX_NOTE_BYTES);
}

#[test]
fn a_missing_account_names_the_path() {
    let mut f = fields(&Value::Null, &Value::Null, &Value::Null);
    f.account = None;
    let Movement::Rejected(rejection) = f.into_movement() else {
        panic!("expected a rejection");
    };
    assert!(
        rejection
            .reason
            .starts_with("no account id at data.account_id;")
    );
}
