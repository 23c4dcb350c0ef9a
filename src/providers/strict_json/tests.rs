use serde_json::json;

use super::*;

fn ambiguity(body: &str) -> Option<String> {
    parse(body.as_bytes()).unwrap().1.map(|a| a.to_string())
}

#[test]
fn a_plain_body_parses_as_serde_json_does() {
    let body = r#"{"a": [1, -2, 3.5, "x\"y", null, true, {"b": {}}], "c": 18446744073709551615}"#;
    let (value, found) = parse(body.as_bytes()).unwrap();
    assert_eq!(value, serde_json::from_str::<Value>(body).unwrap());
    assert_eq!(found, None);
}

#[test]
fn a_duplicate_key_is_named_with_its_path() {
    assert_eq!(
        ambiguity(r#"{"data": {"amount_minor": 1, "amount_minor": 999999}}"#).as_deref(),
        Some("the signed body has the key data.amount_minor more than once")
    );
    assert_eq!(
        ambiguity(r#"{"type": "debit", "x": [{"k": 1, "k": 2}], "type": "credit"}"#).as_deref(),
        Some("the signed body has the key x.[0].k more than once")
    );
    assert_eq!(ambiguity(r#"{"a": {"k": 1}, "b": {"k": 1}}"#), None);
}

#[test]
fn a_number_no_float_holds_is_named_not_fatal() {
    let (value, found) =
        parse(br#"{"s": "1e400 in a string", "data": {"amount_minor": 1e400}, "n": -2E+999}"#)
            .unwrap();
    assert_eq!(
        found.unwrap().to_string(),
        "the signed body has a number out of range at data.amount_minor: 1e400"
    );
    assert_eq!(value["s"], json!("1e400 in a string"));
    assert!(value["data"]["amount_minor"].is_string(), "never a number");
    // At the edge, serde_json's own judgement counts: correctly rounded
    // (its `float_roundtrip`), the largest double's neighbourhood parses,
    // and just past the halfway point to the next power of two does not.
    let (_, edge) = parse(br#"{"a": 1.7976931348623158e308}"#).unwrap();
    assert_eq!(edge, None);
    let (_, past) = parse(br#"{"a": 1.7976931348623159e308}"#).unwrap();
    assert!(
        matches!(past, Some(Ambiguity::NumberOutOfRange { .. })),
        "{past:?}"
    );
    assert!(
        parse(br#"{"a": 1e400, "b": 01e400}"#).is_err(),
        "still invalid"
    );
}

#[test]
fn the_marker_sent_by_a_sender_is_only_a_string() {
    let body = format!(
        r#"{{"note": "{}1e400"}}"#,
        OUT_OF_RANGE.replace('\u{0}', "\\u0000")
    );
    assert_eq!(ambiguity(&body), None);
}

#[test]
fn a_sender_cannot_name_its_own_out_of_range_place() {
    let forged = OUT_OF_RANGE.replace('\u{0}', "\\u0000");
    let body =
        format!(r#"{{"note": "{forged}0000000000000000:fake", "data": {{"amount": 1e400}}}}"#);
    let (_, found) = parse(body.as_bytes()).unwrap();
    assert_eq!(
        found.unwrap().to_string(),
        "the signed body has a number out of range at data.amount: 1e400"
    );
}

#[test]
fn a_later_sibling_is_named_after_a_deep_earlier_subtree() {
    assert_eq!(
        ambiguity(r#"{"a":[{"b":[1,2]}],"c":{"d":1,"d":2}}"#).as_deref(),
        Some("the signed body has the key c.d more than once")
    );
}

#[test]
fn paths_name_the_first_ambiguity_at_any_depth() {
    assert_eq!(
        ambiguity(r#"{"a": [1, {"b": 2}, [3, {"c": 1, "c": 1}]], "d": {"e": 1, "e": 2}}"#)
            .as_deref(),
        Some("the signed body has the key a.[2].[1].c more than once")
    );
    assert_eq!(
        ambiguity(r#"{"k": 1, "k": 2}"#).as_deref(),
        Some("the signed body has the key k more than once")
    );
    let (_, found) = parse(br#"[1, 2, 1e999]"#).unwrap();
    assert_eq!(
        found.unwrap().to_string(),
        "the signed body has a number out of range at [2]: 1e999"
    );
    let (_, found) = parse(br#"1e999"#).unwrap();
    assert_eq!(
        found.unwrap().to_string(),
        "the signed body has a number out of range at (top level): 1e999"
    );
}

#[test]
fn invalid_json_is_still_an_error() {
    assert!(parse(b"{\"a\": 1,}").is_err());
    assert!(parse(b"{\"a\": 1} trailing").is_err());
    assert!(parse(b"{\"a\": 1e400").is_err());
}

#[test]
fn every_ambiguity_is_recognised_by_its_reason() {
    for ambiguity in [
        Ambiguity::DuplicateKey("data.amount".into()),
        Ambiguity::NumberOutOfRange {
            path: "data.amount".into(),
            number: "1e999".into(),
        },
    ] {
        assert!(Ambiguity::names_one(&ambiguity.to_string()), "{ambiguity}");
    }
    assert!(!Ambiguity::names_one("no account id at data.account_id"));
}
