//! What a provider's record of events must give a reconcile run: pages of
//! events created since a time, each with its own time and id, and where
//! the next page starts. One file per provider, one line in the registry
//! (`registry::feed_for`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

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
