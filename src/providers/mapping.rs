//! What a kind's `normalise` starts from and how it fails: the body parsed
//! as one JSON object ([`parse_json`]), the source's mapping options
//! ([`Mapping`]), and [`MapError`].

use serde_json::Value;

use super::json_path::JsonPath;
use super::strict_json::{self, Ambiguity};
use crate::domain::{AmountFormat, IdError};

/// Per-source mapping options: the kind's defaults, overridden by the
/// source's config.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub account_path: JsonPath,
    pub amount_path: Option<JsonPath>,
    /// How the amount at `amount_path` is written (with an amount path of
    /// the source's own; else the kind's rule says).
    pub amount_format: Option<AmountFormat>,
    pub currency_path: Option<JsonPath>,
    pub sequence_path: Option<JsonPath>,
    pub object_path: Option<JsonPath>,
    /// Where a credit names the payment it is (kinds that describe their
    /// payloads in config): the credit then pays it, once per scope.
    pub payment_path: Option<JsonPath>,
    /// Where a debit names the payment it reverses: with it, every debit
    /// type is a refund of that payment, matched and bounded by it.
    pub reverses_path: Option<JsonPath>,
    /// Types that credit, replacing the kind's list.
    pub credit_types: Option<Vec<String>>,
    /// Types that debit, replacing the kind's list.
    pub debit_types: Option<Vec<String>>,
    /// generic-hmac: where the event id and type are.
    pub event_id_path: Option<JsonPath>,
    pub type_path: Option<JsonPath>,
}

impl Mapping {
    /// The kind's defaults only.
    pub fn with_account_path(account_path: JsonPath) -> Self {
        Self {
            account_path,
            amount_path: None,
            amount_format: None,
            currency_path: None,
            sequence_path: None,
            object_path: None,
            payment_path: None,
            reverses_path: None,
            credit_types: None,
            debit_types: None,
            event_id_path: None,
            type_path: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("body is not valid JSON: {0}")]
    NotJson(String),
    #[error("body must be a JSON object")]
    NotAnObject,
    #[error("event id is missing ({0})")]
    MissingEventId(&'static str),
    #[error(transparent)]
    BadEventId(#[from] IdError),
    #[error("event type must be a string of at most 255 bytes")]
    BadEventType,
    #[error("{0}")]
    Unusable(String),
}

/// Parses the raw body as a JSON object. Shared by all providers' callers so
/// the error is the same everywhere; serde_json's recursion limit bounds
/// nesting. A body that can be read more than one way (a duplicate key, a
/// number no float holds) parses, with the [`Ambiguity`] named: the caller
/// must never apply it.
pub fn parse_json(body: &[u8]) -> Result<(Value, Option<Ambiguity>), MapError> {
    let (value, ambiguity) =
        strict_json::parse(body).map_err(|e| MapError::NotJson(e.to_string()))?;
    if value.is_object() {
        Ok((value, ambiguity))
    } else {
        Err(MapError::NotAnObject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_must_be_an_object() {
        assert_eq!(parse_json(b"{}"), Ok((serde_json::json!({}), None)));
        assert_eq!(parse_json(b"[1]"), Err(MapError::NotAnObject));
        assert!(matches!(parse_json(b""), Err(MapError::NotJson(_))));
        assert!(matches!(parse_json(b"\xff\xfe"), Err(MapError::NotJson(_))));
    }
}
