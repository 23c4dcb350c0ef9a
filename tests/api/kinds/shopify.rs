//! Shopify end to end: a paid order credits once per order, a refund debits
//! its successful transactions. Nothing but the body is signed, so the
//! traps are in the headers: a replay under new `X-Shopify-Webhook-Id` /
//! `X-Shopify-Event-Id` headers is a duplicate, and a forged
//! `X-Shopify-Topic` cannot turn a body into a credit or a refund it is not.

use hookledger::cli::SignedRequest;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::{edited, fixture};

pub const SHOPIFY: Kind = Kind {
    source: "shopify",
    kind: "shopify",
    secret: "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",
    old_secret: "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",
    config: r#"
[[sources]]
name = "shopify"
kind = "shopify"
secrets = ["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", "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"]
"#,
    payment,
    refund,
    key_of,
};

/// Minor units of USD as Shopify writes money: `"15.00"`.
fn decimal(minor: i64) -> Value {
    json!(format!("{}.{:02}", minor / 100, minor % 100))
}

fn order(payment: &str, amount: i64) -> Value {
    let money = json!({"amount": decimal(amount), "currency_code": "USD"});
    edited(
        "shopify",
        "orders/paid",
        &[
            ("id", json!(payment)),
            ("total_price", decimal(amount)),
            ("current_total_price", decimal(amount)),
            ("total_price_set.shop_money", money.clone()),
            ("total_price_set.presentment_money", money),
        ],
    )
}

fn payment(_event_id: &str, payment: &str, amount: i64) -> Value {
    order(payment, amount)
}

fn refund(_event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    let mut body = fixture("shopify", "refunds/create");
    body["id"] = json!(refund_id);
    body["order_id"] = json!(payment);
    let transaction = &mut body["transactions"][0];
    transaction["order_id"] = json!(payment);
    transaction["amount"] = decimal(amount);
    body
}

fn id(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

fn key_of(body: &Value) -> String {
    if body.get("order_id").is_some() {
        format!("refund:{}", id(&body["id"]))
    } else {
        format!("orders/paid:{}", id(&body["id"]))
    }
}

/// `signed` with the header `name` set to `value` (none is signed).
fn with_header(mut signed: SignedRequest, name: &str, value: &str) -> SignedRequest {
    let header = signed
        .headers
        .iter_mut()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .expect("the signer sends the header");
    header.1 = value.to_owned();
    signed
}

async fn post_ok(app: &crate::helpers::TestApp, signed: &SignedRequest) -> Value {
    crate::helpers::json_with_status(SHOPIFY.post(app, signed).await, reqwest::StatusCode::OK).await
}

/// Shopify's id headers are unsigned: a captured body replayed under fresh
/// ones must not credit or debit again.
async fn a_replay_with_new_id_headers_is_a_duplicate(backend: Backend) {
    let app = SHOPIFY.spawn(backend).await;
    for (body, balance) in [
        (payment("", "5983476826294", 1500), 1500),
        (refund("", "929361472", "5983476826294", 500), 1000),
    ] {
        let signed = SHOPIFY.sign(&body);
        let first = post_ok(&app, &signed).await;
        assert_eq!(first["status"], "applied", "{first}");
        let replay = with_header(signed, "X-Shopify-Webhook-Id", "f3d2b1a0-replayed");
        let replay = with_header(replay, "X-Shopify-Event-Id", "0a1b2c3d-forged");
        let replay = with_header(replay, "X-Shopify-Triggered-At", "2026-06-01T12:30:00Z");
        let again = post_ok(&app, &replay).await;
        assert_eq!(
            (again["duplicate"].as_bool(), &again["event_id"]),
            (Some(true), &first["event_id"]),
            "{again}"
        );
        assert_eq!(app.balance("acct_1", "USD").await, balance);
    }
    app.assert_invariants().await;
}

/// The topic only picks the rule; the signed body must have its shape.
async fn a_forged_topic_cannot_make_a_credit_or_a_refund(backend: Backend) {
    let app = SHOPIFY.spawn(backend).await;
    SHOPIFY.send(&app, &payment("", "pay_1", 1500)).await;
    let a_refund = SHOPIFY.sign(&refund("", "rf_1", "pay_1", 500));
    let as_credit = with_header(a_refund.clone(), "X-Shopify-Topic", "orders/paid");
    assert_eq!(post_ok(&app, &as_credit).await["status"], "ignored");
    let another_order = SHOPIFY.sign(&order("pay_2", 1500));
    let as_refund = with_header(another_order, "X-Shopify-Topic", "refunds/create");
    assert_eq!(post_ok(&app, &as_refund).await["status"], "ignored");
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    // An order not yet paid, announced as paid: ignored, and its key is not
    // the one its payment needs later.
    let mut unpaid = order("pay_3", 700);
    unpaid["financial_status"] = json!("pending");
    let forged = with_header(SHOPIFY.sign(&unpaid), "X-Shopify-Topic", "orders/paid");
    assert_eq!(post_ok(&app, &forged).await["status"], "ignored");
    let paid = SHOPIFY.send(&app, &order("pay_3", 700)).await;
    assert_eq!(
        (paid["status"].as_str(), paid["event_id"].as_str()),
        (Some("applied"), Some("orders/paid:pay_3"))
    );
    // The refund under its own topic still debits, once.
    assert_eq!(post_ok(&app, &a_refund).await["status"], "applied");
    assert_eq!(app.balance("acct_1", "USD").await, 1500 + 700 - 500);
    app.assert_invariants().await;
}

crate::kind_scenarios!(SHOPIFY; a_replay_with_new_id_headers_is_a_duplicate, a_forged_topic_cannot_make_a_credit_or_a_refund);
