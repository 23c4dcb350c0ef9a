//! PayPal's `GET /v1/notifications/webhooks-events` and the token it takes,
//! as PayPal describes them (its OpenAPI description
//! `notifications_webhooks_v1`, "List event notifications"; "Get an access
//! token" in its REST authentication guide): the app's client id and
//! secret in Basic auth at `POST /v1/oauth2/token` with
//! `grant_type=client_credentials` give an `access_token`, which the list
//! takes as a bearer token; `event_type`, `start_time` and `end_time` (RFC
//! 3339, inclusive) filter, newest first, `page_size` events a page (this
//! fake gives at most 10, so a few events span pages), the next page named
//! by the `links` entry with `rel` `next` on PayPal's own host. Bad client
//! credentials are `401 invalid_client`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, SecondsFormat, Utc};
use hookledger::cli::http_header;
use serde_json::{Value, json};

use super::{Dialect, Reply, query};

const MAX_PAGE: usize = 10;
const TOKEN_PATH: &str = "/v1/oauth2/token";
const LIST_PATH: &str = "/v1/notifications/webhooks-events";
/// The token this fake grants.
const TOKEN: &str = "A21AAFake_access_token_for_tests";

pub struct PayPal;

impl Dialect for PayPal {
    fn stamp(&self, event: &mut Value, at: DateTime<Utc>) {
        event["create_time"] = json!(at.to_rfc3339_opts(SecondsFormat::Millis, true));
    }

    fn answer(&self, method: &str, target: &str, body: &[u8], events: &[Value]) -> Option<Reply> {
        if method == "POST" && target == TOKEN_PATH {
            return (body == b"grant_type=client_credentials").then(|| {
                json!({"scope": "https://uri.paypal.com/services/applications/webhooks",
                    "access_token": TOKEN, "token_type": "Bearer",
                    "app_id": "APP-80W284485P519543T", "expires_in": 32400})
                .into()
            });
        }
        if method != "GET" || target.split('?').next() != Some(LIST_PATH) {
            return None;
        }
        let query = query(target);
        let param = |name: &str| query.get(name).map(str::to_owned);
        let time = |name: &str| param(name).and_then(|t| DateTime::parse_from_rfc3339(&t).ok());
        let (start, end) = (time("start_time"), time("end_time"));
        let typed = param("event_type");
        let mut listed: Vec<&Value> = events
            .iter()
            .filter(|e| {
                let at = e["create_time"]
                    .as_str()
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
                typed.as_deref().is_none_or(|t| e["event_type"] == t)
                    && start.is_none_or(|s| at.is_some_and(|at| at >= s))
                    && end.is_none_or(|end| at.is_some_and(|at| at <= end))
            })
            .collect();
        listed.reverse();
        let offset: usize = param("offset").and_then(|n| n.parse().ok()).unwrap_or(0);
        let size = param("page_size")
            .and_then(|n| n.parse().ok())
            .unwrap_or(10usize)
            .min(MAX_PAGE);
        let page: Vec<Value> = listed
            .iter()
            .skip(offset)
            .take(size)
            .map(|e| (*e).clone())
            .collect();
        let unpaged: Vec<(String, String)> = query
            .0
            .iter()
            .filter(|(k, _)| k != "offset")
            .cloned()
            .collect();
        let here = |offset: usize| {
            let mut pairs = unpaged.clone();
            pairs.push(("offset".into(), offset.to_string()));
            format!(
                "https://api-m.sandbox.paypal.com{LIST_PATH}?{}",
                serde_urlencoded::to_string(pairs).unwrap()
            )
        };
        let mut links = vec![json!({"href": here(offset), "rel": "self", "method": "GET"})];
        if offset + size < listed.len() {
            links.push(json!({"href": here(offset + size), "rel": "next", "method": "GET"}));
        }
        Some(json!({"events": page, "count": page.len(), "links": links}).into())
    }

    fn refused(&self) -> (u16, Value) {
        (
            401,
            json!({"error": "invalid_client", "error_description": "Client Authentication failed"}),
        )
    }

    fn authorized(&self, target: &str, head: &str, key: &str) -> bool {
        let wanted = match target == TOKEN_PATH {
            true => format!("Basic {}", STANDARD.encode(key)),
            false => format!("Bearer {TOKEN}"),
        };
        http_header(head, "authorization") == Some(wanted)
    }

    fn lists(&self, target: &str) -> bool {
        target != TOKEN_PATH
    }
}
