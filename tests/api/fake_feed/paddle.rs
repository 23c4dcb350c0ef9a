//! Paddle Billing's `GET /events`, as its API reference describes it
//! (developer.paddle.com, "List events", "Pagination", "Errors:
//! invalid_token"): `event_type` filters, `order_by` is `id[ASC]` (the
//! default) or `id[DESC]`, `after` is the id the page starts after,
//! `per_page` is capped at the maximum (Paddle's is 200; this fake's is 10,
//! so a few events span pages); the answer is `data` and
//! `meta.pagination {per_page, next, has_more, estimated_total}`. A key it
//! does not know is `403 invalid_token`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{Dialect, Reply, query};

const MAX_PER_PAGE: usize = 10;

pub struct Paddle;

impl Dialect for Paddle {
    fn stamp(&self, event: &mut Value, at: DateTime<Utc>) {
        event["occurred_at"] = json!(at.to_rfc3339_opts(SecondsFormat::Micros, true));
        if let Some(event) = event.as_object_mut() {
            // The API's entity has no notification; the webhook's body does.
            event.remove("notification_id");
        }
    }

    fn answer(&self, method: &str, target: &str, _body: &[u8], events: &[Value]) -> Option<Reply> {
        if method != "GET" || target.split('?').next() != Some("/events") {
            return None;
        }
        let query = query(target);
        let param = |name: &str| query.get(name);
        let types: Option<Vec<&str>> = param("event_type").map(|t| t.split(',').collect());
        let mut listed: Vec<&Value> = events
            .iter()
            .filter(|e| {
                types
                    .as_ref()
                    .is_none_or(|t| t.contains(&e["event_type"].as_str().unwrap_or_default()))
            })
            .collect();
        listed.sort_by_key(|e| e["event_id"].as_str().unwrap_or_default().to_owned());
        let descending = param("order_by") == Some("id[DESC]");
        if descending {
            listed.reverse();
        }
        if let Some(after) = param("after") {
            listed.retain(|e| {
                let id = e["event_id"].as_str().unwrap_or_default();
                match descending {
                    true => id < after,
                    false => id > after,
                }
            });
        }
        let per_page = param("per_page")
            .and_then(|n| n.parse().ok())
            .unwrap_or(50)
            .min(MAX_PER_PAGE);
        let total = listed.len();
        let page: Vec<Value> = listed.into_iter().take(per_page).cloned().collect();
        let next = page.last().map(|e| {
            format!(
                "/events?after={}",
                e["event_id"].as_str().unwrap_or_default()
            )
        });
        Some(
            json!({
                "data": page,
                "meta": {
                    "request_id": "00000000-0000-0000-0000-000000000000",
                    "pagination": {
                        "per_page": per_page,
                        "next": next,
                        "has_more": total > per_page,
                        "estimated_total": total,
                    },
                },
            })
            .into(),
        )
    }

    fn refused(&self) -> (u16, Value) {
        (
            403,
            json!({"error": {
                "type": "request_error",
                "code": "invalid_token",
                "detail": "Invalid or revoked API key.",
            }}),
        )
    }
}
