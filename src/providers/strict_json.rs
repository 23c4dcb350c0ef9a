//! Parsing a signed body so it can only be read one way. serde_json keeps the
//! last of two equal keys, while a person reading the stored payload, or
//! another parser, may take the first: `"amount_minor": 1, "amount_minor":
//! 999999` must not be a credit of either. And a number too large for any
//! float (`1e400`) fails the whole parse, where every other unusable field
//! only makes the event `rejected`. This parser builds the same `Value`
//! while noting the first duplicate key and the first out-of-range number,
//! with their path, so the caller can store the event as `rejected`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Stands in for a number no float can hold, so the parse can go on.
const OUT_OF_RANGE: &str = "\u{0}hookledger:out-of-range:";

/// Why a body can be read more than one way, with where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ambiguity {
    DuplicateKey(String),
    NumberOutOfRange { path: String, number: String },
}

impl fmt::Display for Ambiguity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ambiguity::DuplicateKey(path) => {
                write!(f, "the signed body has the key {path} more than once")
            }
            Ambiguity::NumberOutOfRange { path, number } => {
                write!(
                    f,
                    "the signed body has a number out of range at {path}: {number}"
                )
            }
        }
    }
}

#[derive(Default)]
struct Walk {
    path: Vec<String>,
    found: Option<Ambiguity>,
}

impl Walk {
    fn here(&self) -> String {
        if self.path.is_empty() {
            "(top level)".to_owned()
        } else {
            self.path.join(".")
        }
    }

    fn note(&mut self, ambiguity: impl FnOnce(String) -> Ambiguity) {
        if self.found.is_none() {
            let path = self.here();
            self.found = Some(ambiguity(path));
        }
    }
}

struct Node<'a>(&'a RefCell<Walk>);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        if let Some(number) = v.strip_prefix(OUT_OF_RANGE) {
            self.0
                .borrow_mut()
                .note(|path| Ambiguity::NumberOutOfRange {
                    path,
                    number: number.to_owned(),
                });
        }
        Ok(Value::String(v.to_owned()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.0.borrow_mut().path.push(format!("[{}]", items.len()));
            let item = seq.next_element_seed(Node(self.0));
            self.0.borrow_mut().path.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.0.borrow_mut().path.push(key.clone());
            let value = map.next_value_seed(Node(self.0));
            let mut walk = self.0.borrow_mut();
            if value.is_ok() && object.contains_key(&key) {
                walk.note(Ambiguity::DuplicateKey);
            }
            walk.path.pop();
            drop(walk);
            // serde_json's own choice (the last one wins) for the value; the
            // ambiguity keeps it from ever being applied.
            object.insert(key, value?);
        }
        Ok(Value::Object(object))
    }
}

/// Parses `body` as JSON, reporting the first ambiguity, if any.
pub fn parse(body: &[u8]) -> Result<(Value, Option<Ambiguity>), serde_json::Error> {
    match parse_exactly(body) {
        Err(error) if is_out_of_range(&error) => parse_exactly(&quote_huge_numbers(body)),
        other => other,
    }
}

/// serde_json's error for a number literal no `f64` holds (pinned by the
/// tests below: there is no error kind for it).
fn is_out_of_range(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("number out of range")
}

fn parse_exactly(body: &[u8]) -> Result<(Value, Option<Ambiguity>), serde_json::Error> {
    let walk = RefCell::new(Walk::default());
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = Node(&walk).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, walk.into_inner().found))
}

/// Rewrites every number literal no `f64` can hold as a marked string.
fn quote_huge_numbers(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 64);
    let (mut i, mut in_string, mut escaped) = (0, false, false);
    while i < body.len() {
        let byte = body[i];
        if in_string {
            out.push(byte);
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if byte == b'"' {
            in_string = true;
        } else if byte == b'-' || byte.is_ascii_digit() {
            let end = body[i..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(body.len(), |n| i + n);
            let token = &body[i..end];
            // serde_json itself decides: its float parsing overflows
            // earlier than `str::parse`, and an invalid literal stays as it
            // is (and fails the parse).
            let huge = serde_json::from_slice::<Value>(token).is_err_and(|e| is_out_of_range(&e));
            if huge {
                out.push(b'"');
                out.extend_from_slice(OUT_OF_RANGE.replace('\u{0}', "\\u0000").as_bytes());
                out.extend_from_slice(token);
                out.push(b'"');
            } else {
                out.extend_from_slice(token);
            }
            i = end;
            continue;
        }
        out.push(byte);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ambiguity(body: &str) -> Option<String> {
        parse(body.as_bytes()).unwrap().1.map(|a| a.to_string())
    }

    #[test]
    fn a_plain_body_parses_as_serde_json_does() {
        let body =
            r#"{"a": [1, -2, 3.5, "x\"y", null, true, {"b": {}}], "c": 18446744073709551615}"#;
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
        // At the edge, serde_json's own judgement counts.
        let (_, edge) = parse(br#"{"a": 1.7976931348623158e308}"#).unwrap();
        assert!(
            matches!(edge, Some(Ambiguity::NumberOutOfRange { .. })),
            "{edge:?}"
        );
        assert!(
            parse(br#"{"a": 1e400, "b": 01e400}"#).is_err(),
            "still invalid"
        );
    }

    #[test]
    fn invalid_json_is_still_an_error() {
        assert!(parse(b"{\"a\": 1,}").is_err());
        assert!(parse(b"{\"a\": 1} trailing").is_err());
        assert!(parse(b"{\"a\": 1e400").is_err());
    }
}
