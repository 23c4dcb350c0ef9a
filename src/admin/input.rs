//! What admin requests carry, read and checked the same way wherever they
//! come from (a page's form, the JSON API, the bulk form): the operator's
//! note, the status the caller saw, a JSON body within the admin limit, and
//! a page size.

use actix_web::HttpRequest;
use actix_web::web::Payload;
use serde::Deserialize;

use crate::domain::Status;
use crate::http::{ApiError, read_limited};

const MAX_PAGE: i64 = 500;
pub(super) const MAX_NOTE_CHARS: usize = 2000;

pub(super) fn page_size(limit: Option<i64>, default: i64) -> Result<i64, ApiError> {
    match limit.unwrap_or(default) {
        n @ 1..=MAX_PAGE => Ok(n),
        _ => Err(ApiError::BadRequest(format!(
            "limit must be between 1 and {MAX_PAGE}"
        ))),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteBody {
    note: Option<String>,
    /// The status the caller saw: the action takes the event only from it.
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
    let parsed: NoteBody = serde_json::from_slice(body).map_err(|e| {
        ApiError::BadRequest(format!(
            "body must be {{\"note\": \"...\", \"status\": \"...\"}}, both optional: {e}"
        ))
    })?;
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
