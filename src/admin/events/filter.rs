//! The events list's filters: read from the query the same way for the
//! API and the list page, and shown back in the page's form (with its
//! next page's address).

use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa::openapi::schema::AnyOfBuilder;
use utoipa::openapi::{KnownFormat, ObjectBuilder, SchemaFormat, Type};

use crate::admin::input::{one_of, page_limit, page_size};
use crate::admin::target::plain_id;
use crate::domain::{Origin, Status};
use crate::http::ApiError;
use crate::store::EventFilter;

/// The events list's filters, as the API and the events page take them.
/// Empty values (`?source=`, as a form sends them) mean no filter.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// The source that received it first.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    pub source: Option<String>,
    #[param(schema_with = status_filter)]
    pub status: Option<String>,
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    pub account: Option<String>,
    /// The event type, exactly.
    #[serde(rename = "type")]
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    pub event_type: Option<String>,
    /// The provider's event id, exactly.
    #[param(max_length = 255, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    pub id: Option<String>,
    /// `webhook`, or `reconcile` for events fetched from the provider.
    #[param(schema_with = origin_filter)]
    pub origin: Option<String>,
    /// First received on or after: `YYYY-MM-DD` (UTC) or RFC 3339.
    #[param(schema_with = instant_filter)]
    pub from: Option<String>,
    /// First received on or before this day (`YYYY-MM-DD`, the whole day),
    /// or before this instant (RFC 3339).
    #[param(schema_with = instant_filter)]
    pub to: Option<String>,
    /// Events per page.
    #[param(schema_with = page_limit)]
    pub limit: Option<i64>,
    /// The previous page's `next_before`.
    pub before: Option<i64>,
}

/// A status, or empty for none (as the page's form sends it).
fn status_filter() -> ObjectBuilder {
    let names = Status::ALL.iter().map(|s| s.as_str()).chain([""]);
    one_of(names, "The stored status; empty is none.")
}

/// A day, an RFC 3339 instant, or empty for none: what [`instant`] reads.
fn instant_filter() -> AnyOfBuilder {
    let format = |format| {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(format)))
    };
    AnyOfBuilder::new()
        .item(format(KnownFormat::Date))
        .item(format(KnownFormat::DateTime))
        .item(ObjectBuilder::new().schema_type(Type::String).max_length(Some(0)))
        .description(Some(
            "A day (`YYYY-MM-DD`, UTC: `from` its start, `to` its end) or an RFC 3339 instant; empty is none.",
        ))
}

/// An origin, or empty for none.
fn origin_filter() -> ObjectBuilder {
    let names = Origin::ALL.iter().map(|o| o.as_str()).chain([""]);
    one_of(
        names,
        "`webhook`, or `reconcile` for events fetched from the provider; empty is none.",
    )
}

impl EventsQuery {
    pub fn filter(&self, default_limit: i64) -> Result<EventFilter, ApiError> {
        let text = |value: &Option<String>, what: &str| {
            filter_value(value.as_ref().map(|v| v.trim().to_owned()))
                .map(|v| plain_id(what, v))
                .transpose()
        };
        let status = text(&self.status, "status")?
            .map(|s| {
                s.parse::<Status>()
                    .map_err(|e| ApiError::BadRequest(e.to_string()))
            })
            .transpose()?;
        let origin = text(&self.origin, "origin")?
            .map(|s| s.parse::<Origin>().map_err(ApiError::BadRequest))
            .transpose()?;
        Ok(EventFilter {
            source: text(&self.source, "source")?,
            status,
            account_id: text(&self.account, "account")?,
            event_type: text(&self.event_type, "type")?,
            event_id: text(&self.id, "id")?,
            origin,
            received_from: text(&self.from, "from")?
                .map(|v| instant(&v, "from", false))
                .transpose()?,
            received_before: text(&self.to, "to")?
                .map(|v| instant(&v, "to", true))
                .transpose()?,
            before: self.before,
            limit: page_size(self.limit, default_limit)?,
        })
    }
}

/// `YYYY-MM-DD` as the start of that day in UTC (`end`: of the next day,
/// so the day is included), or an RFC 3339 instant as it is.
fn instant(value: &str, what: &str, end: bool) -> Result<DateTime<Utc>, ApiError> {
    if let Ok(day) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        let day = if end { day.succ_opt() } else { Some(day) };
        if let Some(start) = day.and_then(|d| d.and_hms_opt(0, 0, 0)) {
            return Ok(start.and_utc());
        }
    }
    DateTime::parse_from_rfc3339(value)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| {
            ApiError::BadRequest(format!(
                "{what} must be a date (YYYY-MM-DD) or an RFC 3339 time"
            ))
        })
}

/// Empty strings in a query (`?source=`) mean "no filter".
fn filter_value(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// The form's values (empty: no filter).
#[derive(Default)]
pub struct Shown {
    pub source: String,
    pub status: String,
    pub account: String,
    pub event_type: String,
    pub id: String,
    pub origin: String,
    pub from: String,
    pub to: String,
}

impl Shown {
    pub fn of(query: &EventsQuery) -> Self {
        let value = |v: &Option<String>| v.as_deref().unwrap_or_default().trim().to_owned();
        Self {
            source: value(&query.source),
            status: value(&query.status),
            account: value(&query.account),
            event_type: value(&query.event_type),
            id: value(&query.id),
            origin: value(&query.origin),
            from: value(&query.from),
            to: value(&query.to),
        }
    }

    /// This page's address with the same filters, below `before`.
    pub fn href(&self, before: i64) -> String {
        let pairs: Vec<(&str, &str)> = [
            ("source", self.source.as_str()),
            ("status", &self.status),
            ("account", &self.account),
            ("type", &self.event_type),
            ("id", &self.id),
            ("origin", &self.origin),
            ("from", &self.from),
            ("to", &self.to),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect();
        let before = before.to_string();
        let query = serde_urlencoded::to_string(
            pairs
                .into_iter()
                .chain([("before", before.as_str())])
                .collect::<Vec<_>>(),
        )
        .unwrap_or_default();
        format!("/admin/events?{query}")
    }
}
