//! A Shopify shop's orders, since Shopify keeps no feed of its webhooks
//! (its own advice for missed webhooks is a reconciliation job that reads
//! the data): `GET /admin/api/2026-07/orders.json` (Admin REST API,
//! "Order", "Retrieve a list of orders"; "Paginating results with REST")
//! with `status=any`, `updated_at_min` the window's start and `limit=250`,
//! paged by the `Link` header's `rel="next"` URL (which carries only
//! `page_info` and `limit`, as Shopify requires). The access token goes in
//! `X-Shopify-Access-Token`. Object mode: each order that was paid
//! (`financial_status` `paid`, `partially_refunded` or `refunded`) is
//! listed as its `orders/paid` webhook would have been, when it was paid:
//! `financial_status` `paid` and no refunds yet; each of its `refunds[]` as
//! its `refunds/create` webhook (the refund object, `order_id` and
//! `transactions` included). The topic goes in `X-Shopify-Topic`, as a
//! webhook's does; the intent keys come from the body (`orders/paid:{id}`,
//! `refund:{id}`), so a recovered order and its late webhook share one.
//! Shopify's REST limit is a bucket of 40 requests leaking 2 a second on
//! standard plans ("REST Admin API rate limits"): a run sends one every 5 s.
//! An unsupported version is answered with the oldest supported one.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat};
use serde_json::{Value, json};

use super::feed::{Feed, Listed, Listing, Page, PageFuture};
use crate::provider_api::{Api, ApiError};

pub struct Shopify;

const PATH: &str = "/admin/api/2026-07/orders.json";
const PAGE_SIZE: u32 = 250;
const TOPIC: &str = "X-Shopify-Topic";
const PAID: &str = "orders/paid";
const REFUND: &str = "refunds/create";
/// The one listing: orders, with their refunds.
const ORDERS: &str = "orders";

impl Feed for Shopify {
    fn gap(&self, _api_key: &str) -> Duration {
        Duration::from_secs(5)
    }

    fn prepare(&self, api: Api) -> Api {
        api.with_key_header("X-Shopify-Access-Token")
    }

    /// Orders and their refunds come in one listing.
    fn listings<'t>(&self, types: Vec<&'t str>) -> Vec<&'t str> {
        match types.iter().any(|t| *t == PAID || *t == REFUND) {
            true => vec![ORDERS],
            false => Vec::new(),
        }
    }

    fn page<'a>(&'a self, api: &'a Api, list: &'a Listing<'a>) -> PageFuture<'a> {
        Box::pin(async move {
            let (answer, next) = match list.after {
                Some(next) if next.starts_with(&format!("{PATH}?")) => {
                    api.get_linked(next, &[]).await?
                }
                Some(next) => {
                    return Err(ApiError::Malformed(format!(
                        "a next page not of {PATH}: {next}"
                    )));
                }
                None => {
                    let start = DateTime::from_timestamp(list.from_secs, 0)
                        .unwrap_or_default()
                        .to_rfc3339_opts(SecondsFormat::Secs, true);
                    let query = [
                        ("status", "any".to_owned()),
                        ("updated_at_min", start),
                        ("limit", PAGE_SIZE.to_string()),
                    ];
                    api.get_linked(PATH, &query).await?
                }
            };
            Ok(Page {
                events: listed(&answer)?,
                next,
            })
        })
    }
}

/// Each paid order as its `orders/paid`, each refund as its
/// `refunds/create`.
fn listed(answer: &Value) -> Result<Vec<Listed>, ApiError> {
    let malformed = |what: String| ApiError::Malformed(what);
    let Some(Value::Array(orders)) = answer.get("orders") else {
        return Err(malformed("orders is not a list".into()));
    };
    let mut events = Vec::new();
    for (i, order) in orders.iter().enumerate() {
        let id = order.get("id").and_then(Value::as_u64);
        let at = time(order, "updated_at");
        let status = order.get("financial_status").and_then(Value::as_str);
        let (Some(id), Some(at)) = (id, at) else {
            return Err(malformed(format!(
                "orders[{i}] lacks an integer id or an RFC 3339 updated_at"
            )));
        };
        let refunds = match order.get("refunds") {
            None => &Vec::new(),
            Some(Value::Array(refunds)) => refunds,
            Some(_) => return Err(malformed(format!("orders[{i}].refunds is not a list"))),
        };
        if matches!(status, Some("paid" | "partially_refunded" | "refunded")) {
            let mut paid = order.clone();
            paid["financial_status"] = json!("paid");
            paid["refunds"] = json!([]);
            events.push(with_topic(
                Listed::new(at, format!("order:{id}"), paid),
                PAID,
            ));
        }
        for (r, refund) in refunds.iter().enumerate() {
            let refund_id = refund.get("id").and_then(Value::as_u64);
            let at = time(refund, "processed_at").or_else(|| time(refund, "created_at"));
            let (Some(refund_id), Some(at)) = (refund_id, at) else {
                return Err(malformed(format!(
                    "orders[{i}].refunds[{r}] lacks an integer id or an RFC 3339 processed_at"
                )));
            };
            let record = refund.clone();
            events.push(with_topic(
                Listed::new(at, format!("refund:{refund_id}"), record),
                REFUND,
            ));
        }
    }
    Ok(events)
}

fn with_topic(mut listed: Listed, topic: &'static str) -> Listed {
    listed.header = Some((TOPIC, topic));
    listed
}

fn time(object: &Value, field: &str) -> Option<i64> {
    let text = object.get(field)?.as_str()?;
    Some(DateTime::parse_from_rfc3339(text).ok()?.timestamp())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::listed;

    #[test]
    fn a_refunded_order_is_listed_as_paid_and_then_refunded() {
        let answer = json!({"orders": [
            {"id": 450789469, "updated_at": "2026-11-28T10:00:02-05:00",
             "financial_status": "partially_refunded",
             "refunds": [{"id": 509562969, "order_id": 450789469,
                          "processed_at": "2026-11-28T10:00:03-05:00", "transactions": []}]},
            {"id": 450789470, "updated_at": "2026-11-28T10:00:04-05:00",
             "financial_status": "pending", "refunds": []},
        ]});
        let events = listed(&answer).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].id, "order:450789469");
        assert_eq!(events[0].record["financial_status"], "paid");
        assert_eq!(events[0].record["refunds"], json!([]));
        assert_eq!(events[0].header, Some(("X-Shopify-Topic", "orders/paid")));
        assert_eq!(events[1].id, "refund:509562969");
        assert_eq!(
            events[1].header,
            Some(("X-Shopify-Topic", "refunds/create"))
        );
        assert_eq!(events[1].at, 1_795_878_003);
    }

    #[test]
    fn orders_not_as_documented_are_refused() {
        for answer in [
            json!({}),
            json!({"orders": {}}),
            json!({"orders": [{"id": "450789469", "updated_at": "2026-11-28T10:00:02Z"}]}),
            json!({"orders": [{"id": 1, "updated_at": "yesterday"}]}),
            json!({"orders": [{"id": 1, "updated_at": "2026-11-28T10:00:02Z", "refunds": {}}]}),
            json!({"orders": [{"id": 1, "updated_at": "2026-11-28T10:00:02Z",
                               "refunds": [{"id": 2}]}]}),
        ] {
            assert!(listed(&answer).is_err(), "{answer}");
        }
    }
}
