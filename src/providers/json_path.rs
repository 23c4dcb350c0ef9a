//! Dotted paths into a JSON document (`data.object.metadata.account_id`), as
//! configured per source. Segments are object keys; an all-digit segment also
//! indexes an array; `[key=value]` picks the first array element whose
//! `key` is the string `value` (Shopify's `note_attributes.[name=account_id].value`).

use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "JSON path {0:?} must be dot-separated non-empty keys, e.g. data.object.metadata.account_id"
)]
pub struct JsonPathError(String);

impl JsonPath {
    pub fn parse(text: &str) -> Result<Self, JsonPathError> {
        if text
            .split('.')
            .any(|segment| segment.trim().is_empty() || segment.trim() != segment)
        {
            return Err(JsonPathError(text.to_owned()));
        }
        Ok(Self {
            text: text.to_owned(),
        })
    }

    pub fn lookup<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        lookup(root, &self.text)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// One step of a path.
fn step<'v>(value: &'v Value, segment: &str) -> Option<&'v Value> {
    let selector = segment
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .and_then(|s| s.split_once('='));
    match (value, selector) {
        (Value::Array(items), Some((key, wanted))) => items
            .iter()
            .find(|item| item.get(key).and_then(Value::as_str) == Some(wanted)),
        (Value::Object(map), None) => map.get(segment),
        (Value::Array(items), None) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

/// The value at a dotted path, if there is one.
pub(crate) fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(root, step)
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_objects_and_arrays() {
        let doc = json!({"data": {"object": {"metadata": {"account_id": "acct_1"}}, "items": [{"id": 7}]}});
        let path = JsonPath::parse("data.object.metadata.account_id").unwrap();
        assert_eq!(path.lookup(&doc), Some(&json!("acct_1")));
        assert_eq!(
            JsonPath::parse("data.items.0.id").unwrap().lookup(&doc),
            Some(&json!(7))
        );
        assert_eq!(JsonPath::parse("data.missing").unwrap().lookup(&doc), None);
        assert_eq!(
            JsonPath::parse("data.object.metadata.account_id.x")
                .unwrap()
                .lookup(&doc),
            None
        );
    }

    #[test]
    fn a_selector_picks_the_array_element_by_one_of_its_fields() {
        let order = json!({"note_attributes": [
            {"name": "colour", "value": "red"},
            {"name": "account_id", "value": "acct_7"}
        ]});
        let path = JsonPath::parse("note_attributes.[name=account_id].value").unwrap();
        assert_eq!(path.lookup(&order), Some(&json!("acct_7")));
        let missing = JsonPath::parse("note_attributes.[name=nope].value").unwrap();
        assert_eq!(missing.lookup(&order), None);
    }

    #[test]
    fn refuses_empty_segments() {
        for bad in ["", ".", "a..b", "a.", " a", "a. b"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad:?}");
        }
    }
}
