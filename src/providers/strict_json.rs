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
use sha2::{Digest, Sha256};

/// Stands in for a number no float can hold, so the parse can go on; the
/// body's own hash follows it ([`marker`]), so a sender cannot write it.
const OUT_OF_RANGE: &str = "\u{0}hookledger:out-of-range:";

/// The marker for `body`: a string no sender can put in `body` itself, as
/// it depends on every byte of it.
fn marker(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    format!("{OUT_OF_RANGE}{}:", hex::encode(&digest[..8]))
}

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

impl Ambiguity {
    /// Whether `reason` is one an ambiguity wrote (an event is rejected
    /// with it): such an event is never applied, not even by a replay,
    /// which may see only a batch item re-serialised without the ambiguity.
    pub fn names_one(reason: &str) -> bool {
        [
            "the signed body has the key ",
            "the signed body has a number out of range at ",
        ]
        .iter()
        .any(|prefix| reason.starts_with(prefix))
    }
}

/// State shared by the nodes of one parse. The path of an ambiguity is
/// built on the way back up, only once one is found, so a body without one
/// costs no path bookkeeping per key or element.
#[derive(Default)]
struct Walk {
    /// Nesting depth of the value being parsed.
    depth: usize,
    /// The out-of-range marker of this body, on the second parse (of the
    /// rewritten body) only.
    marker: Option<String>,
    found: Option<Found>,
}

struct Found {
    kind: FoundKind,
    /// Path segments from the ambiguity up, innermost first.
    path: Vec<String>,
    /// The depth the path reaches up to: the container at `level - 1`
    /// adds its segment when its child returns.
    level: usize,
}

enum FoundKind {
    DuplicateKey,
    NumberOutOfRange(String),
}

impl Walk {
    fn note(&mut self, kind: FoundKind, path: Vec<String>) {
        if self.found.is_none() {
            self.found = Some(Found {
                kind,
                path,
                level: self.depth,
            });
        }
    }

    /// After a child of the container at this depth returned: names it in
    /// the path if the ambiguity was found inside it.
    fn child_returned(&mut self, segment: impl FnOnce() -> String) {
        let depth = self.depth;
        if let Some(found) = &mut self.found
            && found.level == depth + 1
        {
            found.path.push(segment());
            found.level = depth;
        }
    }

    fn into_ambiguity(self) -> Option<Ambiguity> {
        let found = self.found?;
        let path = if found.path.is_empty() {
            "(top level)".to_owned()
        } else {
            let mut path = found.path;
            path.reverse();
            path.join(".")
        };
        Some(match found.kind {
            FoundKind::DuplicateKey => Ambiguity::DuplicateKey(path),
            FoundKind::NumberOutOfRange(number) => Ambiguity::NumberOutOfRange { path, number },
        })
    }
}

struct Node<'a>(&'a RefCell<Walk>);

impl Node<'_> {
    fn child(&self) -> Node<'_> {
        Node(self.0)
    }

    fn descend(&self) {
        self.0.borrow_mut().depth += 1;
    }

    fn ascend(&self) {
        self.0.borrow_mut().depth -= 1;
    }
}

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
        let mut walk = self.0.borrow_mut();
        if let Some(number) = walk.marker.as_deref().and_then(|m| v.strip_prefix(m)) {
            walk.note(FoundKind::NumberOutOfRange(number.to_owned()), Vec::new());
        }
        Ok(Value::String(v.to_owned()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.descend();
            let item = seq.next_element_seed(self.child());
            self.ascend();
            let index = items.len();
            self.0.borrow_mut().child_returned(|| format!("[{index}]"));
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.descend();
            let value = map.next_value_seed(self.child());
            self.ascend();
            let mut walk = self.0.borrow_mut();
            walk.child_returned(|| key.clone());
            if value.is_ok() && object.contains_key(&key) {
                walk.note(FoundKind::DuplicateKey, vec![key.clone()]);
            }
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
    match parse_exactly(body, None) {
        Err(error) if is_out_of_range(&error) => {
            let marker = marker(body);
            parse_exactly(&quote_huge_numbers(body, &marker), Some(marker))
        }
        other => other,
    }
}

/// serde_json's error for a number literal no `f64` holds (pinned by the
/// tests below: there is no error kind for it).
fn is_out_of_range(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("number out of range")
}

fn parse_exactly(
    body: &[u8],
    marker: Option<String>,
) -> Result<(Value, Option<Ambiguity>), serde_json::Error> {
    let walk = RefCell::new(Walk {
        marker,
        ..Walk::default()
    });
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = Node(&walk).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, walk.into_inner().into_ambiguity()))
}

/// Rewrites every number literal no `f64` can hold as a marked string.
fn quote_huge_numbers(body: &[u8], marker: &str) -> Vec<u8> {
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
                out.extend_from_slice(marker.replace('\u{0}', "\\u0000").as_bytes());
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
mod tests;
