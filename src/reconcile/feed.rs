//! What a provider's record of events must give a reconcile run: pages of
//! events created since a time, each with its own time and id, and where
//! the next page starts. One file per provider, one line in the registry
//! (`registry::feed_for`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use crate::provider_api::{Api, ApiError};

/// A page: each event as (its time in unix seconds, its id, the record),
/// and the cursor of the next page, if there is one.
pub struct Page {
    pub events: Vec<(i64, String, Value)>,
    pub next: Option<String>,
}

/// Which page of the provider's events to read.
pub struct Listing<'a> {
    pub event_type: &'a str,
    pub from_secs: i64,
    pub after: Option<&'a str>,
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

    /// The page of events of `event_type` created at or after
    /// `from_secs` that follows the cursor `after` (the first page without
    /// one).
    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a>;
}
