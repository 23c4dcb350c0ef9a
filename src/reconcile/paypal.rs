//! PayPal's record of events: `GET /v1/notifications/webhooks-events`
//! (PayPal's OpenAPI description `notifications_webhooks_v1`, "List event
//! notifications"), one `event_type` at a time, `start_time` the window's
//! start and `end_time` a little past now (both RFC 3339), `page_size` 100,
//! paged by following the answer's `links` entry with `rel` `next`. Each
//! event (`id`, `create_time`, `event_type`, `resource`) is the body of its
//! webhook. The key is the app's client id and secret, exchanged for a
//! bearer token at `POST /v1/oauth2/token` (client credentials) once a run.
//! PayPal publishes no number for its rate limit ("Rate limiting
//! guidelines" asks for backing off on `429`): a run sends one request a
//! second.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde_json::Value;

use super::feed::{Feed, Fields, Listing, Page, PageFuture};
use crate::provider_api::{Api, ApiError};

pub struct PayPal;

const PATH: &str = "/v1/notifications/webhooks-events";
const PAGE_SIZE: u32 = 100;
const FIELDS: Fields = Fields {
    list: "events",
    id: "id",
    kind: "event_type",
    time: "create_time",
};

impl Feed for PayPal {
    fn gap(&self, _api_key: &str) -> Duration {
        Duration::from_secs(1)
    }

    fn prepare(&self, api: Api) -> Api {
        api.with_client_credentials("/v1/oauth2/token")
    }

    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a> {
        Box::pin(async move {
            let answer = match list.after {
                // The next page is where PayPal's `next` link says, on
                // this API only.
                Some(next) => api.get(next, &[]).await?,
                None => {
                    let time = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Secs, true);
                    let start = DateTime::from_timestamp(list.from_secs, 0).unwrap_or_default();
                    // A minute past now: an event PayPal stamped by a clock
                    // ahead of ours is still read.
                    let end = Utc::now() + TimeDelta::minutes(1);
                    let query = [
                        ("event_type", list.event_type.to_owned()),
                        ("start_time", time(start)),
                        ("end_time", time(end)),
                        ("page_size", PAGE_SIZE.to_string()),
                    ];
                    api.get(PATH, &query).await?
                }
            };
            page(answer)
        })
    }
}

/// A list answer: `events` (each with a string `id` and `event_type` and
/// an RFC 3339 `create_time`) and `links`, whose `next` entry, if any,
/// names the next page.
fn page(answer: Value) -> Result<Page, ApiError> {
    let malformed = |what: String| ApiError::Malformed(what);
    let Some(Value::Array(items)) = answer.get("events").cloned() else {
        return Err(malformed("events is not a list".into()));
    };
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        events.push(FIELDS.read(i, item)?);
    }
    let links = match answer.get("links") {
        None => Vec::new(),
        Some(Value::Array(links)) => links.clone(),
        Some(_) => return Err(malformed("links is not a list".into())),
    };
    let next = links
        .iter()
        .find(|link| link.get("rel").and_then(Value::as_str) == Some("next"))
        .map(|link| {
            link.get("href")
                .and_then(Value::as_str)
                .and_then(path_of)
                .ok_or_else(|| malformed(format!("a next link not on {PATH}: {link}")))
        })
        .transpose()?;
    Ok(Page { events, next })
}

/// The path and query of `href` if it is a page of this list.
fn path_of(href: &str) -> Option<String> {
    let rest = href
        .strip_prefix("https://")
        .or_else(|| href.strip_prefix("http://"))?;
    let path = &rest[rest.find('/')?..];
    let listing = path == PATH || path.starts_with(&format!("{PATH}?"));
    listing.then(|| path.to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::page;

    #[test]
    fn a_page_follows_its_next_link_on_the_same_list_only() {
        let event = json!({"id": "WH-1", "event_type": "PAYMENT.CAPTURE.COMPLETED",
            "create_time": "2026-11-28T10:00:02.184Z", "resource": {}});
        let answer = json!({"events": [event], "links": [
            {"rel": "self", "href": "https://api-m.paypal.com/v1/notifications/webhooks-events?page_size=100"},
            {"rel": "next", "href": "https://api-m.paypal.com/v1/notifications/webhooks-events?page_size=100&move_to=next&index_id=2"},
        ]});
        let first = page(answer).unwrap();
        assert_eq!(
            first.next.as_deref(),
            Some("/v1/notifications/webhooks-events?page_size=100&move_to=next&index_id=2")
        );
        assert_eq!(first.events[0].at, 1_795_860_002);
        let last = page(json!({"events": [], "links": []})).unwrap();
        assert!(last.next.is_none());
    }

    #[test]
    fn a_page_that_is_not_a_list_of_events_is_refused() {
        let next_elsewhere = json!({"events": [], "links": [
            {"rel": "next", "href": "https://evil.example/v1/oauth2/token"}]});
        for answer in [
            json!({}),
            json!({"events": {}}),
            json!({"events": [{"id": "WH-1", "event_type": "x", "create_time": 10}]}),
            json!({"events": [{"id": 1, "event_type": "x", "create_time": "2026-11-28T10:00:00Z"}]}),
            json!({"events": [], "links": {}}),
            next_elsewhere,
        ] {
            assert!(page(answer.clone()).is_err(), "{answer}");
        }
    }
}
