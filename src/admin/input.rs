//! What admin requests carry, read and checked the same way wherever they
//! come from (a page's form, the JSON API, the bulk form): the operator's
//! note, the status the caller saw, a JSON body within the admin limit, and
//! a page size.

use actix_web::HttpRequest;
use actix_web::web::Payload;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use utoipa::openapi::{KnownFormat, ObjectBuilder, SchemaFormat, Type};

use crate::domain::Status;
use crate::http::{ApiError, read_limited};

const MAX_PAGE: i64 = 500;
pub(super) const MAX_NOTE_CHARS: usize = 2000;

/// A string parameter's schema: one of `values`, described.
pub fn one_of<'a>(values: impl IntoIterator<Item = &'a str>, description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
        .description(Some(description))
}

/// A `limit` parameter's schema: what [`page_size`] takes.
pub fn page_limit() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(1))
        .maximum(Some(MAX_PAGE))
        .description(Some(format!("Rows per page, 1-{MAX_PAGE}.")))
}

pub(super) fn page_size(limit: Option<i64>, default: i64) -> Result<i64, ApiError> {
    match limit.unwrap_or(default) {
        n @ 1..=MAX_PAGE => Ok(n),
        _ => Err(ApiError::BadRequest(format!(
            "limit must be between 1 and {MAX_PAGE}"
        ))),
    }
}

/// An action's body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    /// Why, for the audit log; at most 2,000 characters, line breaks and
    /// tabs but no other control character.
    #[schema(
        max_length = 2000,
        pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*$"
    )]
    note: Option<String>,
    /// The status the caller saw: the action takes the event only from it.
    #[schema(value_type = Option<Status>)]
    status: Option<String>,
}

/// Admin API bodies are a note and a number or two.
pub(super) const ADMIN_BODY_LIMIT: usize = 64 * 1024;

/// The optional `{"note": "..."}` body; an empty body means no note.
/// An action's body: an optional note, and optionally the status the
/// caller saw.
pub(super) fn parse_note(body: &[u8]) -> Result<(Option<String>, Option<Status>), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((None, None));
    }
    // `null` is no body too, as the contract's optional body allows.
    let parsed: Option<NoteBody> = serde_json::from_slice(body).map_err(|e| {
        ApiError::BadRequest(format!(
            "body must be {{\"note\": \"...\", \"status\": \"...\"}}, both optional: {e}"
        ))
    })?;
    let parsed = parsed.unwrap_or_default();
    Ok((
        clean_note(parsed.note)?,
        seen_status(parsed.status.as_deref())?,
    ))
}

/// The status a caller says it saw, if it says: one of the statuses, or 400.
pub(super) fn seen_status(text: Option<&str>) -> Result<Option<Status>, ApiError> {
    text.map(str::parse::<Status>)
        .transpose()
        .map_err(|e| ApiError::BadRequest(format!("status: {e}")))
}

/// The JSON body of an admin POST, read within the admin body limit; a
/// body that does not parse is a 400 saying what is expected (`usage`).
pub async fn json_body<T: serde::de::DeserializeOwned>(
    request: &HttpRequest,
    payload: Payload,
    usage: &str,
) -> Result<T, ApiError> {
    let body = read_limited(request, payload, ADMIN_BODY_LIMIT).await?;
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("body must be {usage}: {e}")))
}

/// An optional integer of an admin body (a sequence number, a guard),
/// also when written with a zero fraction (`5.0`, `5e3`), which JSON
/// Schema's `integer` includes. Such a number is taken only while a double
/// holds it exactly (below 2^53 in size), never rounded; any fraction is
/// refused.
pub fn integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let number: Option<serde_json::Number> = Option::deserialize(deserializer)?;
    number
        .map(|n| match (n.as_i64(), n.as_f64()) {
            (Some(whole), _) => Ok(whole),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < EXACT => Ok(f as i64),
            _ => Err(D::Error::custom(format!("{n} is not a whole number"))),
        })
        .transpose()
}

/// Trims a note, treating blank as none, and bounds its length.
pub fn clean_note(note: Option<String>) -> Result<Option<String>, ApiError> {
    let note = note.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    // Line breaks and tabs are text; other control characters are not (and
    // PostgreSQL refuses NUL, where SQLite would store it).
    if note.as_ref().is_some_and(|n| {
        n.chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    }) {
        return Err(ApiError::BadRequest(
            "note must not contain control characters".into(),
        ));
    }
    if note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(ApiError::BadRequest(format!(
            "note must be at most {MAX_NOTE_CHARS} characters"
        )));
    }
    Ok(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "integer")]
        n: Option<i64>,
    }

    fn n(json: &str) -> Result<Option<i64>, String> {
        serde_json::from_str::<Body>(json)
            .map(|b| b.n)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_whole_number_is_taken_however_it_is_written() {
        assert_eq!(n(r#"{"n": 5}"#), Ok(Some(5)));
        assert_eq!(n(r#"{"n": -7}"#), Ok(Some(-7)));
        assert_eq!(n(r#"{"n": 5006074.0}"#), Ok(Some(5_006_074)));
        assert_eq!(n(r#"{"n": 5e3}"#), Ok(Some(5000)));
        assert_eq!(n(r#"{"n": 9223372036854775807}"#), Ok(Some(i64::MAX)));
        assert_eq!(n(r#"{"n": null}"#), Ok(None));
        assert_eq!(n("{}"), Ok(None));
    }

    #[test]
    fn a_fraction_or_a_number_a_double_cannot_hold_exactly_is_refused() {
        for json in [
            r#"{"n": 1.5}"#,
            r#"{"n": 9007199254740993.0}"#,
            r#"{"n": 1e300}"#,
            r#"{"n": 9223372036854775808}"#,
            r#"{"n": "5"}"#,
        ] {
            assert!(n(json).is_err(), "{json} was taken");
        }
    }
}
