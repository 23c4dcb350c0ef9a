//! Square's `POST /v2/events` (SearchEvents), as its API reference
//! describes it (developer.squareup.com, Events API "SearchEvents" and the
//! SDKs' `SearchEventsQuery` model): `query.filter.event_types` and
//! `query.filter.created_at.start_at` filter, `query.sort.order` is `ASC`
//! or `DESC` (the default), `limit` is capped (Square's at 100; this fake's
//! at 10, so a few events span pages), and `cursor` continues the same
//! query; the answer is `events` (left out when empty) and `cursor` while
//! more follow. A token it does not know is `401` with Square's
//! `errors[{category, code, detail}]`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{Dialect, Reply};

const MAX_LIMIT: usize = 10;

pub struct Square;

impl Dialect for Square {
    fn stamp(&self, event: &mut Value, at: DateTime<Utc>) {
        event["created_at"] = json!(at.to_rfc3339_opts(SecondsFormat::Nanos, true));
    }

    fn answer(&self, method: &str, target: &str, body: &[u8], events: &[Value]) -> Option<Reply> {
        if method != "POST" || target != "/v2/events" {
            return None;
        }
        let search: Value = serde_json::from_slice(body).ok()?;
        let filter = &search["query"]["filter"];
        let types: Option<Vec<&str>> = filter["event_types"]
            .as_array()
            .map(|t| t.iter().filter_map(Value::as_str).collect());
        let start = filter["created_at"]["start_at"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
        let at = |e: &Value| {
            e["created_at"]
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        };
        let mut listed: Vec<&Value> = events
            .iter()
            .filter(|e| {
                let typed = e["type"].as_str().unwrap_or_default();
                types.as_ref().is_none_or(|t| t.contains(&typed))
                    && start.is_none_or(|start| at(e).is_some_and(|at| at >= start))
            })
            .collect();
        if search["query"]["sort"]["order"] != "ASC" {
            listed.reverse();
        }
        // The cursor is where the page starts in the query's results.
        let from: usize = search["cursor"]
            .as_str()
            .and_then(|c| c.strip_prefix("fake-cursor-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let limit = search["limit"]
            .as_u64()
            .map_or(MAX_LIMIT, |n| (n as usize).min(MAX_LIMIT));
        let page: Vec<Value> = listed
            .iter()
            .skip(from)
            .take(limit)
            .map(|e| (*e).clone())
            .collect();
        let mut answer = json!({});
        if !page.is_empty() {
            answer["events"] = json!(page);
        }
        if from + limit < listed.len() {
            answer["cursor"] = json!(format!("fake-cursor-{}", from + limit));
        }
        Some(answer.into())
    }

    fn refused(&self) -> (u16, Value) {
        (
            401,
            json!({"errors": [{
                "category": "AUTHENTICATION_ERROR",
                "code": "UNAUTHORIZED",
                "detail": "This request could not be authorized.",
            }]}),
        )
    }
}
