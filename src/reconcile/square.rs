//! Square's record of events: `POST /v2/events` (Square API reference,
//! Events API, "SearchEvents", in version 2024-06-04, which introduced it),
//! one event type at a time, `created_at.start_at` the window's start,
//! oldest first (`sort {field: DEFAULT, order: ASC}`), up to 100 a page,
//! paged with the answer's `cursor` sent back with the same query. Each
//! event (`merchant_id`, `type`, `event_id`, `created_at`, `data`) is the
//! body of its webhook. Square keeps events 28 days, answers only a
//! personal access token (not an OAuth one), and lists nothing until the
//! application enables the Events API (`PUT /v2/events/enable`). Square
//! publishes no number for its rate limit ("Rate limits" says to back off on
//! `429 RATE_LIMITED`): a run sends one request a second.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat};
use serde_json::{Value, json};

use super::feed::{Feed, Fields, Listing, Page, PageFuture};
use crate::provider_api::{Api, ApiError};

pub struct Square;

const PAGE_SIZE: u32 = 100;
const FIELDS: Fields = Fields {
    list: "events",
    id: "event_id",
    kind: "type",
    time: "created_at",
};
/// The API version whose SearchEvents this reads.
const VERSION: &str = "2024-06-04";

impl Feed for Square {
    fn gap(&self, _api_key: &str) -> Duration {
        Duration::from_secs(1)
    }

    fn prepare(&self, api: Api) -> Api {
        api.with_header("Square-Version", VERSION)
    }

    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a> {
        Box::pin(async move {
            let start = DateTime::from_timestamp(list.from_secs, 0)
                .unwrap_or_default()
                .to_rfc3339_opts(SecondsFormat::Secs, true);
            let mut search = json!({
                "limit": PAGE_SIZE,
                "query": {
                    "filter": {
                        "event_types": [list.event_type],
                        "created_at": {"start_at": start},
                    },
                    "sort": {"field": "DEFAULT", "order": "ASC"},
                },
            });
            if let Some(cursor) = list.after {
                search["cursor"] = json!(cursor);
            }
            page(api.post("/v2/events", &search).await?)
        })
    }
}

/// A search answer: `events` (each with a string `event_id` and `type` and
/// an RFC 3339 `created_at`; Square leaves the list out when it is empty)
/// and a `cursor` while more follow.
fn page(answer: Value) -> Result<Page, ApiError> {
    let malformed = |what: String| ApiError::Malformed(what);
    if !answer.is_object() {
        return Err(malformed("not an object".into()));
    }
    let items = match answer.get("events") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => return Err(malformed("events is not a list".into())),
    };
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        events.push(FIELDS.read(i, item)?);
    }
    let next = match answer.get("cursor") {
        None => None,
        Some(Value::String(cursor)) if cursor.is_empty() => None,
        Some(Value::String(cursor)) => Some(cursor.clone()),
        Some(_) => return Err(malformed("cursor is not a string".into())),
    };
    Ok(Page { events, next })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::page;

    #[test]
    fn a_page_names_its_cursor_and_an_empty_search_is_an_empty_page() {
        let answer = json!({"events": [{"event_id": "6a8f5f28", "type": "payment.updated",
            "created_at": "2026-11-28T10:00:02.123456789Z", "data": {}}], "cursor": "c2"});
        let first = page(answer).unwrap();
        assert_eq!(first.next.as_deref(), Some("c2"));
        assert_eq!(first.events[0].at, 1_795_860_002);
        let empty = page(json!({})).unwrap();
        assert!(empty.events.is_empty() && empty.next.is_none());
    }

    #[test]
    fn a_page_that_is_not_a_search_answer_is_refused() {
        for answer in [
            json!([]),
            json!({"events": {}}),
            json!({"events": [{"event_id": "e", "type": "x", "created_at": 10}]}),
            json!({"events": [{"event_id": 7, "type": "x", "created_at": "2026-11-28T10:00:00Z"}]}),
            json!({"events": [], "cursor": 3}),
        ] {
            assert!(page(answer.clone()).is_err(), "{answer}");
        }
    }
}
