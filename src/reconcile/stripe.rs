//! Stripe's record of events: `GET /v1/events` of one `type` with
//! `created[gte]` and `starting_after` paging, 100 a page (the parameters
//! both Stripe and localstripe accept; Stripe lists newest first, and
//! `starting_after` the last id of a page goes on from there whichever way
//! a fake lists). Each item is the event object a webhook delivers, so it
//! is mapped exactly as a delivery of it is. Stripe keeps events 30 days;
//! its read limit is 100 requests a second in live mode and 25 in test
//! mode: a run sends 10 a second with a live key, 2 with any other (a
//! tenth, rounded down). Sources: ../shared/providers.md 6.1 and Stripe's
//! API reference, "List all events" and "Rate limits".

use std::time::Duration;

use serde_json::Value;

use super::feed::{Feed, Listed, Listing, Page, PageFuture};
use crate::provider_api::{Api, ApiError};

pub struct Stripe;

const PAGE_SIZE: u32 = 100;

impl Feed for Stripe {
    fn gap(&self, api_key: &str) -> Duration {
        match api_key.starts_with("sk_live_") || api_key.starts_with("rk_live_") {
            // 10 a second.
            true => Duration::from_millis(100),
            // 2 a second.
            false => Duration::from_millis(500),
        }
    }

    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a> {
        Box::pin(async move {
            let mut query = vec![
                ("limit", PAGE_SIZE.to_string()),
                ("type", list.event_type.to_owned()),
                ("created[gte]", list.from_secs.to_string()),
            ];
            if let Some(after) = list.after {
                query.push(("starting_after", after.to_owned()));
            }
            let answer = api.get("/v1/events", &query).await?;
            page(answer)
        })
    }
}

/// A list answer: `data` (events, each with a string `id` and `type` and
/// an integer `created`) and `has_more`.
fn page(answer: Value) -> Result<Page, ApiError> {
    let malformed = |what: String| ApiError::Malformed(what);
    let has_more = answer
        .get("has_more")
        .and_then(Value::as_bool)
        .ok_or_else(|| malformed("has_more is not true or false".into()))?;
    let Some(Value::Array(items)) = answer.get("data").cloned() else {
        return Err(malformed("data is not a list".into()));
    };
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let id = item.get("id").and_then(Value::as_str);
        let created = item.get("created").and_then(Value::as_i64);
        let typed = item.get("type").and_then(Value::as_str).is_some();
        let (Some(id), Some(created), true) = (id, created, typed) else {
            return Err(malformed(format!(
                "data[{i}] lacks a string id and type or an integer created"
            )));
        };
        let id = id.to_owned();
        events.push(Listed::new(created, id, item));
    }
    let next = match (has_more, events.last()) {
        (true, Some(Listed { id, .. })) => Some(id.clone()),
        (true, None) => return Err(malformed("has_more with an empty page".into())),
        (false, _) => None,
    };
    Ok(Page { events, next })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::page;

    #[test]
    fn a_page_names_its_next_cursor_and_each_event_its_time() {
        let answer = json!({"object": "list", "has_more": true, "data": [
            {"id": "evt_2", "type": "payment_intent.succeeded", "created": 20},
            {"id": "evt_1", "type": "charge.succeeded", "created": 10},
        ]});
        let first = page(answer).unwrap();
        assert_eq!(first.next.as_deref(), Some("evt_1"));
        assert_eq!(first.events[0].at, 20);
        assert_eq!(first.events[1].id, "evt_1");
        let last = page(json!({"has_more": false, "data": []}));
        assert!(last.unwrap().next.is_none());
    }

    #[test]
    fn a_page_that_is_not_a_list_of_events_is_refused() {
        for answer in [
            json!({"data": []}),
            json!({"has_more": false, "data": {}}),
            json!({"has_more": false, "data": [{"id": "evt_1", "type": "x", "created": "10"}]}),
            json!({"has_more": false, "data": [{"id": 7, "type": "x", "created": 10}]}),
            json!({"has_more": true, "data": []}),
        ] {
            assert!(page(answer.clone()).is_err(), "{answer}");
        }
    }
}
