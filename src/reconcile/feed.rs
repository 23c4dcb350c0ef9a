//! What a provider's record of events must give a reconcile run: pages of
//! events created since a time, each with its own time and id, and where
//! the next page starts. One file per provider, one line in the registry
//! (`feed_for`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use super::api::{Api, ApiError};

/// A page: each event as (its time in unix seconds, its id, the record),
/// and the cursor of the next page, if there is one.
pub struct Page {
    pub events: Vec<(i64, String, Value)>,
    pub next: Option<String>,
}

pub type PageFuture<'a> = Pin<Box<dyn Future<Output = Result<Page, ApiError>> + Send + 'a>>;

pub trait Feed: Sync {
    /// The most requests a second a run sends: a tenth of the provider's
    /// documented read limit.
    fn requests_per_second(&self) -> u32;

    /// How long the provider keeps events readable.
    fn retention(&self) -> Duration;

    /// The page of events created at or after `from_secs` that follows
    /// the cursor `after` (the first page without one).
    fn page<'a>(&'a self, api: &'a Api, from_secs: i64, after: Option<&'a str>) -> PageFuture<'a>;
}

/// The feed of a source kind, if it has one.
pub fn feed_for(kind: &str) -> Option<&'static dyn Feed> {
    match kind {
        "stripe" => Some(&super::stripe::Stripe),
        _ => None,
    }
}
