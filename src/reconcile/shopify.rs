//! A Shopify shop's orders, since Shopify keeps no feed of its webhooks
//! (its own advice for missed webhooks is a reconciliation job that reads
//! the data): `GET /admin/api/2026-07/orders.json` (Admin REST API,
//! "Order", "Retrieve a list of orders"; "Paginating results with REST")
//! with `status=any`, `updated_at_min` the window's start and `limit=250`,
//! paged by the `Link` header's `rel="next"` URL (which carries only
//! `page_info` and `limit`, as Shopify requires). The access token goes in
//! `X-Shopify-Access-Token`. Object mode: each order that was paid in
//! full is listed as its `orders/paid` webhook would have been when it was
//! paid: `financial_status` `paid`, no refunds yet, and `updated_at` its
//! `processed_at` (a later edit or refund must not make the credit newer
//! than the refunds, which would then be stale). An order `paid` now was
//! paid in full; one `partially_refunded` or `refunded` may have been only
//! partly paid (a deposit), so its transactions are read
//! (`/orders/{id}/transactions.json`) and it counts as paid only if its
//! successful `sale` and `capture` transactions reach its total. Each of
//! its `refunds[]` is listed as its `refunds/create` webhook (the refund
//! object, `order_id` and `transactions` included); a refund of an order
//! never paid in full waits for its payment, held for a person. The topic goes in `X-Shopify-Topic`, as a
//! webhook's does; the intent keys come from the body (`orders/paid:{id}`,
//! `refund:{id}`), so a recovered order and its late webhook share one.
//! Shopify's REST limit is a bucket of 40 requests leaking 2 a second on
//! standard plans ("REST Admin API rate limits"): a run sends one every 5 s.
//! An unsupported version is answered with the oldest supported one.

use std::time::Duration;

use std::collections::HashSet;

use chrono::{DateTime, SecondsFormat};
use serde_json::{Value, json};

use super::feed::{Feed, Listed, Listing, Page, PageFuture};
use crate::domain::{Currency, parse_decimal};
use crate::provider_api::{Api, ApiError};

pub struct Shopify;

const VERSION_PATH: &str = "/admin/api/2026-07";
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
            let mut paid = HashSet::new();
            for order in answer
                .get("orders")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(id) = paid_in_full(api, order).await? {
                    paid.insert(id);
                }
            }
            Ok(Page {
                events: listed(&answer, &paid)?,
                next,
            })
        })
    }
}

/// `Some(id)` if `order` was paid in full: `paid` now, or refunded after
/// successful `sale` and `capture` transactions that reach its total (in
/// the money the customer paid in).
async fn paid_in_full(api: &Api, order: &Value) -> Result<Option<u64>, ApiError> {
    let Some(id) = order.get("id").and_then(Value::as_u64) else {
        return Ok(None);
    };
    match order.get("financial_status").and_then(Value::as_str) {
        Some("paid") => return Ok(Some(id)),
        Some("partially_refunded" | "refunded") => {}
        _ => return Ok(None),
    }
    let malformed = |what: &str| ApiError::Malformed(format!("order {id}: {what}"));
    let money = order
        .pointer("/total_price_set/presentment_money")
        .ok_or_else(|| malformed("no total_price_set.presentment_money"))?;
    let currency = money
        .get("currency_code")
        .and_then(Value::as_str)
        .and_then(|code| Currency::parse(code).ok())
        .ok_or_else(|| malformed("no currency_code Shopify would send"))?;
    let amount = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .and_then(|text| parse_decimal(text, currency).ok())
            .ok_or_else(|| malformed("an amount that is not a decimal string"))
    };
    let total = amount(money.get("amount"))?;
    let path = format!("{VERSION_PATH}/orders/{id}/transactions.json");
    let answer = api.get(&path, &[]).await?;
    let Some(Value::Array(transactions)) = answer.get("transactions") else {
        return Err(malformed("transactions is not a list"));
    };
    let mut paid: i64 = 0;
    for transaction in transactions {
        let text = |field: &str| transaction.get(field).and_then(Value::as_str);
        let counts = matches!(text("kind"), Some("sale" | "capture"))
            && text("status") == Some("success")
            && text("currency") == Some(currency.code());
        if counts {
            paid = paid.saturating_add(amount(transaction.get("amount"))?);
        }
    }
    Ok((paid >= total).then_some(id))
}

/// Each order paid in full (`paid`) as its `orders/paid`, each refund as
/// its `refunds/create`.
fn listed(answer: &Value, paid: &HashSet<u64>) -> Result<Vec<Listed>, ApiError> {
    let malformed = |what: String| ApiError::Malformed(what);
    let Some(Value::Array(orders)) = answer.get("orders") else {
        return Err(malformed("orders is not a list".into()));
    };
    let mut events = Vec::new();
    for (i, order) in orders.iter().enumerate() {
        let id = order.get("id").and_then(Value::as_u64);
        // When it was paid: its processing, not its last change.
        let at = ["processed_at", "created_at", "updated_at"]
            .into_iter()
            .find_map(|field| Some((field, time(order, field)?)));
        let (Some(id), Some((field, at))) = (id, at) else {
            return Err(malformed(format!(
                "orders[{i}] lacks an integer id or an RFC 3339 processed_at"
            )));
        };
        let refunds = match order.get("refunds") {
            None => &Vec::new(),
            Some(Value::Array(refunds)) => refunds,
            Some(_) => return Err(malformed(format!("orders[{i}].refunds is not a list"))),
        };
        if paid.contains(&id) {
            let mut at_payment = order.clone();
            at_payment["financial_status"] = json!("paid");
            at_payment["refunds"] = json!([]);
            at_payment["updated_at"] = order[field].clone();
            events.push(with_topic(
                Listed::new(at, format!("order:{id}"), at_payment),
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
            {"id": 450789469, "processed_at": "2026-11-28T10:00:01-05:00",
             "updated_at": "2026-11-28T11:00:00-05:00",
             "financial_status": "partially_refunded",
             "refunds": [{"id": 509562969, "order_id": 450789469,
                          "processed_at": "2026-11-28T10:00:03-05:00", "transactions": []}]},
            {"id": 450789470, "updated_at": "2026-11-28T10:00:04-05:00",
             "financial_status": "pending", "refunds": []},
        ]});
        let paid = std::collections::HashSet::from([450789469]);
        let events = listed(&answer, &paid).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].id, "order:450789469");
        assert_eq!(events[0].record["financial_status"], "paid");
        // As at payment: older than its refund.
        assert_eq!(events[0].record["updated_at"], "2026-11-28T10:00:01-05:00");
        assert_eq!(events[0].at, 1_795_878_001);
        // Not paid in full: its refund is listed, the order is not.
        let unpaid = listed(&answer, &std::collections::HashSet::new()).unwrap();
        assert_eq!(unpaid.len(), 1);
        assert_eq!(unpaid[0].id, "refund:509562969");
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
            assert!(
                listed(&answer, &std::collections::HashSet::new()).is_err(),
                "{answer}"
            );
        }
    }
}
