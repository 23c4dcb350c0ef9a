//! Lemon Squeezy end to end: a paid order credits once per order; a refund
//! reports the order's running refunded total, of which only what is new
//! is debited. There is no event id, and the `X-Event-Name` header is
//! unsigned: the signed body decides.

use std::cell::RefCell;

use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;

pub const LEMONSQUEEZY: Kind = Kind {
    source: "lemonsqueezy",
    kind: "lemonsqueezy",
    secret: "ls-signing-Xh7Qe2Vb9Tm4",
    old_secret: "ls-signing-Pc3Ry8Nd1Kw6",
    config: r#"
[[sources]]
name = "lemonsqueezy"
kind = "lemonsqueezy"
secrets = ["ls-signing-Xh7Qe2Vb9Tm4", "ls-signing-Pc3Ry8Nd1Kw6"]
"#,
    payment,
    refund,
    key_of,
};

thread_local! {
    /// The refunds each payment has had in this test, in order, as the
    /// provider remembers them: (payment, refund id, amount).
    static REFUNDS: RefCell<Vec<(String, String, i64)>> = const { RefCell::new(Vec::new()) };
}

/// The running refunded total a provider that reports one (Lemon Squeezy,
/// Polar) states with refund `refund_id` of `amount` on `payment`: every
/// earlier refund of the payment plus this one. The shared scenarios speak
/// of single refunds; this turns them into the totals the provider sends.
/// Per thread: each test runs on its own thread, and its body on that
/// thread (`block_on`).
pub fn running_total(payment: &str, refund_id: &str, amount: i64) -> i64 {
    REFUNDS.with(|refunds| {
        let mut refunds = refunds.borrow_mut();
        let known = refunds
            .iter()
            .any(|(p, r, _)| p == payment && r == refund_id);
        if !known {
            refunds.push((payment.to_owned(), refund_id.to_owned(), amount));
        }
        let mut total = 0;
        for (_, r, a) in refunds.iter().filter(|(p, ..)| p == payment) {
            total += a;
            if r == refund_id {
                break;
            }
        }
        total
    })
}

fn order(payment: &str, amount: i64) -> Value {
    edited(
        "lemonsqueezy",
        "order_created",
        &[
            ("data.id", json!(payment)),
            ("data.attributes.subtotal", json!(amount)),
            ("data.attributes.total", json!(amount)),
            ("data.attributes.subtotal_usd", json!(amount)),
            ("data.attributes.total_usd", json!(amount)),
        ],
    )
}

fn payment(_event_id: &str, payment: &str, amount: i64) -> Value {
    order(payment, amount)
}

/// The order as `order_refunded` reports it, with this refunded total.
fn refunded(payment: &str, total: i64) -> Value {
    edited(
        "lemonsqueezy",
        "order_refunded",
        &[
            ("data.id", json!(payment)),
            ("data.attributes.refunded_amount", json!(total)),
            ("data.attributes.refunded_amount_usd", json!(total)),
        ],
    )
}

fn refund(_event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    refunded(payment, running_total(payment, refund_id, amount))
}

fn key_of(body: &Value) -> String {
    let order = body["data"]["id"].as_str().unwrap();
    match body["meta"]["event_name"].as_str() {
        Some("order_refunded") => format!(
            "order_refunded:{order}:{}",
            body["data"]["attributes"]["refunded_amount"]
        ),
        _ => format!("order:{order}"),
    }
}

/// Partial refunds raise the running total; each debits what it adds. A
/// lower total arriving late adds nothing, a copy of a total seen is a
/// duplicate, and the full refund ends at zero.
async fn each_new_refunded_total_debits_what_it_adds(backend: Backend) {
    let app = LEMONSQUEEZY.spawn(backend).await;
    LEMONSQUEEZY.send(&app, &order("2816504", 1500)).await;
    let answer = LEMONSQUEEZY.send(&app, &refunded("2816504", 800)).await;
    assert_eq!(answer["event_id"], "order_refunded:2816504:800", "{answer}");
    assert_eq!(app.balance("acct_1", "USD").await, 700);
    let late = LEMONSQUEEZY.send(&app, &refunded("2816504", 300)).await;
    assert_eq!(late["status"], "ignored", "{late}");
    let mut copy = refunded("2816504", 800);
    copy["data"]["attributes"]["updated_at"] = json!("2026-06-01T12:20:00.000000Z");
    assert_eq!(LEMONSQUEEZY.send(&app, &copy).await["duplicate"], true);
    assert_eq!(app.balance("acct_1", "USD").await, 700);
    let full = LEMONSQUEEZY.send(&app, &refunded("2816504", 1500)).await;
    assert_eq!(full["status"], "applied", "{full}");
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

/// The signed `meta.event_name` decides, never `X-Event-Name`; an order
/// not yet paid is ignored under a key its payment never has.
async fn the_signed_event_name_decides(backend: Backend) {
    let app = LEMONSQUEEZY.spawn(backend).await;
    let mut pending = order("2816505", 1500);
    pending["data"]["attributes"]["status"] = json!("pending");
    assert_eq!(LEMONSQUEEZY.send(&app, &pending).await["status"], "ignored");
    let paid = LEMONSQUEEZY.send(&app, &order("2816505", 1500)).await;
    assert_eq!(
        (paid["status"].as_str(), paid["event_id"].as_str()),
        (Some("applied"), Some("order:2816505"))
    );
    let mut refund = LEMONSQUEEZY.sign(&refunded("2816505", 500));
    let name = refund
        .headers
        .iter_mut()
        .find(|(n, _)| *n == "X-Event-Name")
        .expect("the signer names the event");
    assert_eq!(name.1, "order_refunded");
    name.1 = "order_created".to_owned();
    let answer = crate::helpers::json_with_status(
        LEMONSQUEEZY.post(&app, &refund).await,
        reqwest::StatusCode::OK,
    )
    .await;
    assert_eq!(answer["status"], "applied", "{answer}");
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

crate::kind_scenarios!(LEMONSQUEEZY; each_new_refunded_total_debits_what_it_adds, the_signed_event_name_decides);
