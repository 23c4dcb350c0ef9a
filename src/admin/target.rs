//! Which event or gap an admin route names, and the links to them.
//!
//! Ids are the provider's and can be anything, including `.` and `..`, which
//! browsers, curl and most HTTP libraries resolve away as dot segments of a
//! URL path even when percent-encoded. So every link the pages build names
//! its target in the query string (`/admin/event?source=..&id=..`), which no
//! client rewrites. The path forms (`/admin/events/{source}/{event_id}`)
//! still work for every other id, for scripts and old bookmarks.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::web::{Path, Query};
use actix_web::{FromRequest, HttpRequest};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::ApiError;

/// An event: `{source}/{event_id}` in the path, or `?source=&id=`.
#[derive(Debug)]
pub struct EventRef {
    pub source: String,
    pub event_id: String,
}

/// An account of a source (a gap, a sequence guard): `{source}/{account_id}`
/// in the path, or `?source=&account=`.
#[derive(Debug)]
pub struct AccountRef {
    pub source: String,
    pub account_id: String,
}

/// An event named in the path. Ids are at most 255 bytes without control
/// characters ([`plain_id`]); ids such as `.` or `..` need the query form.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct EventPath {
    /// The source's name, as configured.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    source: String,
    /// The provider's event id.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    event_id: String,
}

/// An account named in the path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct GapPath {
    /// The source's name, as configured.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    source: String,
    /// The account id the source's events carry.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    account_id: String,
}

/// An event named in the query (any id).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// The source's name, as configured.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    source: String,
    /// The provider's event id.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    id: String,
}

/// An account named in the query (any id).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GapQuery {
    /// The source's name, as configured.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    source: String,
    /// The account id the source's events carry.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    account: String,
}

/// The route's named path segments, percent-decoded, if it has them.
fn from_path<T: serde::de::DeserializeOwned>(
    request: &HttpRequest,
    name: &str,
) -> Option<Result<T, ApiError>> {
    request.match_info().get(name)?;
    Some(
        Path::<T>::extract(request)
            .into_inner()
            .map(Path::into_inner)
            .map_err(|e| ApiError::BadRequest(e.to_string())),
    )
}

fn query<T: serde::de::DeserializeOwned>(request: &HttpRequest) -> Result<T, ApiError> {
    Query::<T>::from_query(request.query_string())
        .map(Query::into_inner)
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// An identifier from a request (a source, an event or account id): what
/// could be stored is at most 255 bytes without control characters, so
/// anything else is refused with 400 before it reaches the database
/// (PostgreSQL refuses NUL in text, SQLite would not: the backends would
/// disagree).
pub fn plain_id(what: &str, value: String) -> Result<String, ApiError> {
    if crate::domain::text::is_plain(&value, PLAIN_BYTES) {
        Ok(value)
    } else {
        Err(ApiError::BadRequest(format!(
            "{what} must be at most {PLAIN_BYTES} bytes without control characters"
        )))
    }
}

/// The bytes an identifier may have.
const PLAIN_BYTES: usize = 255;

impl EventRef {
    fn checked(source: String, event_id: String) -> Result<Self, ApiError> {
        Ok(Self {
            source: plain_id("source", source)?,
            event_id: plain_id("event id", event_id)?,
        })
    }
}

impl AccountRef {
    fn checked(source: String, account_id: String) -> Result<Self, ApiError> {
        Ok(Self {
            source: plain_id("source", source)?,
            account_id: plain_id("account id", account_id)?,
        })
    }
}

impl FromRequest for EventRef {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(match from_path::<EventPath>(request, "event_id") {
            Some(path) => path.and_then(|p| Self::checked(p.source, p.event_id)),
            None => query::<EventQuery>(request).and_then(|q| Self::checked(q.source, q.id)),
        })
    }
}

impl FromRequest for AccountRef {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(match from_path::<GapPath>(request, "account_id") {
            Some(path) => path.and_then(|p| Self::checked(p.source, p.account_id)),
            None => query::<GapQuery>(request).and_then(|q| Self::checked(q.source, q.account)),
        })
    }
}

/// Percent-encodes a query value (everything but unreserved bytes).
fn query_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The event page; `/{action}` before the query for its forms.
pub fn event_href(source: &str, event_id: &str) -> String {
    event_action_href(source, event_id, "")
}

/// Where the event page's `action` form posts (`apply`, `dismiss`).
pub fn event_action_href(source: &str, event_id: &str, action: &str) -> String {
    let action = if action.is_empty() {
        String::new()
    } else {
        format!("/{action}")
    };
    format!(
        "/admin/event{action}?source={}&id={}",
        query_value(source),
        query_value(event_id)
    )
}

/// The account page: balances, ledger, and every event for the account.
pub fn account_href(account_id: &str) -> String {
    format!("/admin/account?id={}", query_value(account_id))
}

/// A page of the audit log, by actor if given, below `before`.
pub fn audit_href(actor: Option<&str>, before: i64) -> String {
    match actor {
        Some(actor) => format!("/admin/audit?actor={}&before={before}", query_value(actor)),
        None => format!("/admin/audit?before={before}"),
    }
}

/// The gap page of one account.
pub fn gap_href(source: &str, account_id: &str) -> String {
    gap_action_href(source, account_id, "")
}

/// Where the gap page's skip form posts.
pub fn gap_action_href(source: &str, account_id: &str, action: &str) -> String {
    account_page_href("gap", source, account_id, action)
}

/// The sequence-guard page of one account.
pub fn guard_href(source: &str, account_id: &str) -> String {
    guard_action_href(source, account_id, "")
}

/// Where the guard page's reset form posts.
pub fn guard_action_href(source: &str, account_id: &str, action: &str) -> String {
    account_page_href("guard", source, account_id, action)
}

fn account_page_href(page: &str, source: &str, account_id: &str, action: &str) -> String {
    let action = if action.is_empty() {
        String::new()
    } else {
        format!("/{action}")
    };
    format!(
        "/admin/{page}{action}?source={}&account={}",
        query_value(source),
        query_value(account_id)
    )
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn links_carry_any_id_in_the_query() {
        assert_eq!(
            event_href("stripe", ".."),
            "/admin/event?source=stripe&id=.."
        );
        assert_eq!(
            event_action_href("demo", "a/b c&d=é", "apply"),
            "/admin/event/apply?source=demo&id=a%2Fb%20c%26d%3D%C3%A9"
        );
        assert_eq!(
            gap_action_href("ledger", ".", "skip"),
            "/admin/gap/skip?source=ledger&account=."
        );
    }

    #[test]
    fn a_query_link_names_the_same_event_again() {
        for id in [".", "..", "a/b c&d=é", "%2E%2E", "x?y#z+1"] {
            let href = event_href("demo", id);
            let request = TestRequest::with_uri(&href).to_http_request();
            let target = EventRef::from_request(&request, &mut Payload::None)
                .into_inner()
                .unwrap();
            assert_eq!(
                (target.source.as_str(), target.event_id.as_str()),
                ("demo", id)
            );
        }
    }

    #[test]
    fn a_query_without_the_id_is_a_bad_request() {
        let request = TestRequest::with_uri("/admin/event?source=demo").to_http_request();
        let result = EventRef::from_request(&request, &mut Payload::None).into_inner();
        assert!(matches!(result, Err(ApiError::BadRequest(_))), "{result:?}");
    }
}
