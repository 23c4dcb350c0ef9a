//! Paddle Billing's record of events: `GET /events` (Paddle API reference,
//! "List events"), newest first (`order_by=id[DESC]`; Paddle ids sort in
//! creation order), up to 200 a page (`per_page`), one `event_type` at a
//! time, paged with `after=<the last id>` while `meta.pagination.has_more`.
//! Paddle has no time filter, so a listing stops at the first page wholly
//! before the window's start, and drops what is older. Each
//! entity (`event_id`, `event_type`, `occurred_at`, `data`) is the body of
//! its webhook less `notification_id`, which no mapping reads. Paddle keeps
//! events 90 days; its API allows 240 requests a minute from one address
//! ("Rate limiting"): a run sends one every 2.5 s.

use std::time::Duration;

use serde_json::Value;

use super::feed::{Feed, Fields, Listing, Page, PageFuture};
use crate::provider_api::{Api, ApiError};

pub struct Paddle;

const PAGE_SIZE: u32 = 200;
const FIELDS: Fields = Fields {
    list: "data",
    id: "event_id",
    kind: "event_type",
    time: "occurred_at",
};

impl Feed for Paddle {
    fn gap(&self, _api_key: &str) -> Duration {
        // 24 a minute: a tenth of 240.
        Duration::from_millis(2500)
    }

    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a> {
        Box::pin(async move {
            let mut query = vec![
                ("event_type", list.event_type.to_owned()),
                ("order_by", "id[DESC]".to_owned()),
                ("per_page", PAGE_SIZE.to_string()),
            ];
            if let Some(after) = list.after {
                query.push(("after", after.to_owned()));
            }
            page(api.get("/events", &query).await?, list.from_secs)
        })
    }
}

/// A list answer: `data` (events, each with a string `event_id` and
/// `event_type` and an RFC 3339 `occurred_at`) and
/// `meta.pagination.has_more`; the events before `from_secs` dropped.
fn page(answer: Value, from_secs: i64) -> Result<Page, ApiError> {
    let malformed = |what: String| ApiError::Malformed(what);
    let has_more = answer
        .pointer("/meta/pagination/has_more")
        .and_then(Value::as_bool)
        .ok_or_else(|| malformed("meta.pagination.has_more is not true or false".into()))?;
    let Some(Value::Array(items)) = answer.get("data").cloned() else {
        return Err(malformed("data is not a list".into()));
    };
    let mut events = Vec::with_capacity(items.len());
    let mut last_id = None;
    let mut older = 0;
    let count = items.len();
    for (i, item) in items.into_iter().enumerate() {
        let event = FIELDS.read(i, item)?;
        last_id = Some(event.id.clone());
        if event.at < from_secs {
            older += 1;
            continue;
        }
        events.push(event);
    }
    // Ids follow creation, times may not quite: an event inside the window
    // can come after one just outside it, so the listing stops only at a
    // page wholly before the window.
    let reached_start = count > 0 && older == count;
    let next = match (has_more && !reached_start, last_id) {
        (true, Some(id)) => Some(id),
        (true, None) => return Err(malformed("has_more with an empty page".into())),
        (false, _) => None,
    };
    Ok(Page { events, next })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::page;

    fn event(id: &str, at: &str) -> serde_json::Value {
        json!({"event_id": id, "event_type": "transaction.completed", "occurred_at": at, "data": {}})
    }

    #[test]
    fn a_page_names_its_next_cursor_until_it_reaches_the_window_start() {
        let more = |data| json!({"data": data, "meta": {"pagination": {"has_more": true}}});
        let first = page(
            more(json!([
                event("evt_2", "2026-11-28T10:00:02.123456Z"),
                event("evt_1", "2026-11-28T10:00:01Z")
            ])),
            0,
        )
        .unwrap();
        assert_eq!(first.next.as_deref(), Some("evt_1"));
        assert_eq!(first.events[0].at, 1_795_860_002);
        // 10:00:01 is before a window starting at 10:00:02: dropped, but
        // the next page is read, as an event in the window may follow.
        let edge = page(
            more(json!([
                event("evt_2", "2026-11-28T10:00:02Z"),
                event("evt_1", "2026-11-28T10:00:01Z")
            ])),
            1_795_860_002,
        )
        .unwrap();
        assert_eq!(edge.events.len(), 1);
        assert_eq!(edge.events[0].id, "evt_2");
        assert_eq!(edge.next.as_deref(), Some("evt_1"));
        // A page wholly before the window is the last read.
        let last = page(
            more(json!([event("evt_0", "2026-11-28T10:00:00Z")])),
            1_795_860_002,
        )
        .unwrap();
        assert!(last.events.is_empty());
        assert!(last.next.is_none());
    }

    #[test]
    fn a_page_that_is_not_a_list_of_events_is_refused() {
        let meta = json!({"pagination": {"has_more": false}});
        for answer in [
            json!({"data": []}),
            json!({"data": {}, "meta": meta}),
            json!({"data": [{"event_id": "evt_1", "event_type": "x", "occurred_at": 10}], "meta": meta}),
            json!({"data": [{"event_id": "evt_1", "event_type": "x", "occurred_at": "yesterday"}], "meta": meta}),
            json!({"data": [{"event_id": 7, "event_type": "x", "occurred_at": "2026-11-28T10:00:00Z"}], "meta": meta}),
            json!({"data": [], "meta": {"pagination": {"has_more": true}}}),
        ] {
            assert!(page(answer.clone(), 0).is_err(), "{answer}");
        }
    }
}
