//! Dotted paths into a JSON document (`data.object.metadata.account_id`), as
//! configured per source. Segments are object keys; an all-digit segment also
//! indexes an array.

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
        self.text
            .split('.')
            .try_fold(root, |value, segment| match value {
                Value::Object(map) => map.get(segment),
                Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
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
    fn refuses_empty_segments() {
        for bad in ["", ".", "a..b", "a.", " a", "a. b"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad:?}");
        }
    }
}
