//! A Shopify shop's `GET /admin/api/<version>/orders.json`, as the Admin
//! REST API reference describes it ("Order: retrieve a list of orders",
//! "Paginating results with REST", "Authentication": the app's token in
//! `X-Shopify-Access-Token`): `status=any`, `updated_at_min` filters,
//! newest first, `limit` orders a page (Shopify's maximum is 250; this
//! fake's is 10, so a few orders span pages), the next page in a `Link`
//! header whose URL carries only `page_info` and `limit`. Orders and
//! refunds are published as their webhooks' bodies (`orders/paid`,
//! `refunds/create`), with integer ids as Shopify writes them; a refund
//! joins its order's `refunds`, makes it `partially_refunded` and, as a
//! later fulfilment would, moves its `updated_at` a minute past the
//! refund. `/orders/{id}/transactions.json` lists one successful `sale` of
//! what the order's total less its `total_outstanding` comes to. A token
//! it does not know is `401` with Shopify's `errors` string.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use hookledger::cli::http_header;
use serde_json::{Value, json};

use super::{Dialect, Reply, query};

const MAX_LIMIT: usize = 10;
const VERSION_PATH: &str = "/admin/api/2026-07";
const PATH: &str = "/admin/api/2026-07/orders.json";

pub struct Shopify;

/// `"15.00"` as cents.
fn cents(text: &str) -> i64 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    whole.parse::<i64>().unwrap() * 100 + format!("{fraction:0<2}")[..2].parse::<i64>().unwrap()
}

/// The order's one successful sale: its total less what is outstanding.
fn transactions(order: &Value) -> Value {
    let money = &order["total_price_set"]["presentment_money"];
    let total = cents(money["amount"].as_str().unwrap_or("0"));
    let outstanding = cents(order["total_outstanding"].as_str().unwrap_or("0.00"));
    let paid = total - outstanding;
    json!({"transactions": [{
        "id": 389404469, "order_id": order["id"], "kind": "sale", "status": "success",
        "amount": format!("{}.{:02}", paid / 100, paid % 100),
        "currency": money["currency_code"],
    }]})
}

/// `"450789469"` as Shopify writes an id: a number.
fn integer(value: &mut Value) {
    if let Some(n) = value.as_str().and_then(|s| s.parse::<u64>().ok()) {
        *value = json!(n);
    }
}

impl Dialect for Shopify {
    fn stamp(&self, event: &mut Value, at: DateTime<Utc>) {
        let at = json!(at.to_rfc3339_opts(SecondsFormat::Secs, true));
        integer(&mut event["id"]);
        if event.get("order_id").is_some() {
            integer(&mut event["order_id"]);
            event["processed_at"] = at.clone();
            event["created_at"] = at;
        } else {
            event["processed_at"] = at.clone();
            event["created_at"] = at.clone();
            event["updated_at"] = at;
        }
    }

    fn answer(&self, method: &str, target: &str, _body: &[u8], events: &[Value]) -> Option<Reply> {
        if method != "GET" {
            return None;
        }
        let path = target.split('?').next()?;
        if let Some(id) = path
            .strip_prefix(&format!("{VERSION_PATH}/orders/"))
            .and_then(|rest| rest.strip_suffix("/transactions.json"))
        {
            let order = events
                .iter()
                .find(|e| e["id"].as_u64() == id.parse().ok())?;
            return Some(transactions(order).into());
        }
        if path != PATH {
            return None;
        }
        // The shop's orders as they stand now, each refund on its order.
        let mut orders: BTreeMap<u64, Value> = BTreeMap::new();
        for event in events {
            match event["order_id"].as_u64() {
                None => {
                    let mut order = event.clone();
                    order["refunds"] = json!([]);
                    orders.insert(event["id"].as_u64()?, order);
                }
                Some(order_id) => {
                    let order = orders.get_mut(&order_id)?;
                    order["refunds"].as_array_mut()?.push(event.clone());
                    let refunded = event["processed_at"].as_str()?;
                    let later = DateTime::parse_from_rfc3339(refunded).ok()?
                        + chrono::TimeDelta::minutes(1);
                    order["updated_at"] = json!(later.to_rfc3339_opts(SecondsFormat::Secs, true));
                    order["financial_status"] = json!("partially_refunded");
                }
            }
        }
        let query = query(target);
        let param = |name: &str| query.get(name).map(str::to_owned);
        // A later page carries only page_info (the first page's
        // updated_at_min and where this page starts) and limit.
        let (min, from) = match param("page_info") {
            Some(info) => {
                let (from, min) = info.split_once('_')?;
                (Some(min.to_owned()), from.parse().ok()?)
            }
            None => (param("updated_at_min"), 0usize),
        };
        let min = min.and_then(|m| DateTime::parse_from_rfc3339(&m).ok());
        let mut listed: Vec<Value> = orders
            .into_values()
            .filter(|order| {
                let at = order["updated_at"]
                    .as_str()
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
                min.is_none_or(|min| at.is_some_and(|at| at >= min))
            })
            .collect();
        listed.sort_by(|a, b| b["updated_at"].as_str().cmp(&a["updated_at"].as_str()));
        let limit = param("limit")
            .and_then(|n| n.parse().ok())
            .unwrap_or(50usize)
            .min(MAX_LIMIT);
        let page: Vec<Value> = listed.iter().skip(from).take(limit).cloned().collect();
        let next = (from + limit < listed.len()).then(|| {
            let info = format!(
                "{}_{}",
                from + limit,
                min.map(|m| m.to_rfc3339_opts(SecondsFormat::Secs, true))
                    .unwrap_or_default()
            );
            let query =
                serde_urlencoded::to_string([("limit", limit.to_string()), ("page_info", info)])
                    .unwrap();
            format!("https://hookledger-test.myshopify.com{PATH}?{query}")
        });
        Some(Reply {
            body: json!({"orders": page}),
            next,
        })
    }

    fn refused(&self) -> (u16, Value) {
        (
            401,
            json!({"errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"}),
        )
    }

    fn authorized(&self, _target: &str, head: &str, key: &str) -> bool {
        http_header(head, "x-shopify-access-token").as_deref() == Some(key)
    }
}
