//! What a provider's record of events must give a reconcile run: pages of
//! events created since a time, each with its own time and id, and where
//! the next page starts. One file per provider, one line in the registry
//! (`registry::feed_for`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::DateTime;
use serde_json::Value;

use crate::provider_api::{Api, ApiError};

/// A page: its events, and the cursor of the next page, if there is one.
pub struct Page {
    pub events: Vec<Listed>,
    pub next: Option<String>,
}

/// One event as the provider lists it.
pub struct Listed {
    /// Its time, in unix seconds.
    pub at: i64,
    /// Its id, unique across the run's listings.
    pub id: String,
    /// The body its webhook would have.
    pub record: Value,
    /// A header its webhook would carry, for a provider that names the
    /// topic there and not in the body (Shopify's `X-Shopify-Topic`).
    pub header: Option<(&'static str, &'static str)>,
}

impl Listed {
    pub fn new(at: i64, id: String, record: Value) -> Listed {
        Listed {
            at,
            id,
            record,
            header: None,
        }
    }
}

/// Which page of the provider's events to read.
pub struct Listing<'a> {
    pub event_type: &'a str,
    pub from_secs: i64,
    pub after: Option<&'a str>,
}

/// Where a provider's listing keeps each event's id, type and time (an
/// RFC 3339 string).
pub struct Fields {
    /// The list's name, for errors.
    pub list: &'static str,
    pub id: &'static str,
    pub kind: &'static str,
    pub time: &'static str,
}

impl Fields {
    /// Item `i` of the list, or what it lacks.
    pub fn read(&self, i: usize, item: Value) -> Result<Listed, ApiError> {
        let id = item.get(self.id).and_then(Value::as_str);
        let at = item
            .get(self.time)
            .and_then(Value::as_str)
            .and_then(|text| DateTime::parse_from_rfc3339(text).ok());
        let typed = item.get(self.kind).and_then(Value::as_str).is_some();
        let (Some(id), Some(at), true) = (id, at, typed) else {
            return Err(ApiError::Malformed(format!(
                "{}[{i}] lacks a string {} and {} or an RFC 3339 {}",
                self.list, self.id, self.kind, self.time
            )));
        };
        let id = id.to_owned();
        Ok(Listed::new(at.timestamp(), id, item))
    }
}

pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Result<Page, ApiError>> + Send + 'a>>;

pub trait Feed: Sync {
    /// The least time between two requests a run sends with `api_key`: a
    /// tenth of the provider's documented read limit for that key's mode.
    fn gap(&self, api_key: &str) -> Duration;

    /// The API as this provider wants it asked (a version header).
    fn prepare(&self, api: Api) -> Api {
        api
    }

    /// What a run lists for the event types the source maps: by default
    /// one listing per type.
    fn listings<'t>(&self, types: Vec<&'t str>) -> Vec<&'t str> {
        types
    }

    /// The page of events of `event_type` created at or after
    /// `from_secs` that follows the cursor `after` (the first page without
    /// one).
    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a>;
}
