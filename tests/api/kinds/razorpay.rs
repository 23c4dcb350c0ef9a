//! Razorpay end to end: a captured payment credits once per payment, a
//! processed refund debits its own amount. The `x-razorpay-event-id`
//! header is unsigned, so a replay under a new one is a duplicate; the
//! automatic refund of a payment never captured debits nothing.

use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;
use crate::helpers::json_with_status;

pub const RAZORPAY: Kind = Kind {
    source: "razorpay",
    kind: "razorpay",
    secret: "rzp-webhook-Wq3v8Zt1Kc6Bn0Xs",
    old_secret: "rzp-webhook-Hd5m2Lp9Fy4Rg7Ja",
    config: r#"
[[sources]]
name = "razorpay"
kind = "razorpay"
secrets = ["rzp-webhook-Wq3v8Zt1Kc6Bn0Xs", "rzp-webhook-Hd5m2Lp9Fy4Rg7Ja"]
"#,
    payment,
    refund,
    key_of,
};

const PAYMENT: &str = "payload.payment.entity";
const REFUND: &str = "payload.refund.entity";

fn payment(_event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "razorpay",
        "payment.captured",
        &[
            (&format!("{PAYMENT}.id"), json!(payment)),
            (&format!("{PAYMENT}.amount"), json!(amount)),
            (&format!("{PAYMENT}.base_amount"), json!(amount)),
            (&format!("{PAYMENT}.currency"), json!("USD")),
        ],
    )
}

fn refund(_event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "razorpay",
        "refund.processed",
        &[
            (&format!("{REFUND}.id"), json!(refund_id)),
            (&format!("{REFUND}.payment_id"), json!(payment)),
            (&format!("{REFUND}.amount"), json!(amount)),
            (&format!("{REFUND}.currency"), json!("USD")),
            (&format!("{PAYMENT}.id"), json!(payment)),
            (&format!("{PAYMENT}.amount_refunded"), json!(amount)),
            (&format!("{PAYMENT}.currency"), json!("USD")),
        ],
    )
}

fn key_of(body: &Value) -> String {
    let id = |entity: &str| {
        body["payload"][entity]["entity"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    match body["event"].as_str() {
        Some("refund.processed") => format!("refund:{}", id("refund")),
        _ => format!("payment:{}", id("payment")),
    }
}

/// The event id header is unsigned: a replay under a new one (or a forged
/// one) is the same payment, credited once; the same for a refund.
async fn a_replay_with_a_new_event_id_header_is_a_duplicate(backend: Backend) {
    let app = RAZORPAY.spawn(backend).await;
    for body in [
        payment("", "pay_Qk7Tn2vXy9LmB4", 1500),
        refund("", "rfnd_Qk8A1cZpW6rT3n", "pay_Qk7Tn2vXy9LmB4", 500),
    ] {
        assert_eq!(RAZORPAY.send(&app, &body).await["status"], "applied");
        for id in ["Qk8B0mJ3tY7uW2", "forged"] {
            let replay = RAZORPAY.sign_with(RAZORPAY.secret, &body, id);
            assert_eq!(
                replay.headers[1],
                ("X-Razorpay-Event-Id", id.to_owned()),
                "the header a replay changes"
            );
            let again =
                json_with_status(RAZORPAY.post(&app, &replay).await, reqwest::StatusCode::OK).await;
            assert_eq!(again["duplicate"], true, "{again}");
        }
    }
    assert_eq!(app.balance("acct_1", "USD").await, 1000);
    app.assert_invariants().await;
}

/// Razorpay refunds an authorized payment that is never captured; it was
/// never credited, so its refund must not wait for a credit that will
/// never come, nor debit anything.
async fn an_uncaptured_payments_auto_refund_debits_nothing(backend: Backend) {
    let app = RAZORPAY.spawn(backend).await;
    RAZORPAY
        .send(&app, &payment("", "pay_captured", 1500))
        .await;
    let mut auto = refund("", "rfnd_auto", "pay_never_captured", 1500);
    auto["payload"]["payment"]["entity"]["captured"] = json!(false);
    auto["payload"]["payment"]["entity"]["status"] = json!("refunded");
    let answer = RAZORPAY.send(&app, &auto).await;
    assert_eq!(answer["status"], "ignored", "{answer}");
    // order.paid reports the captured payment again: not a second credit.
    let mut order_paid = payment("", "pay_captured", 1500);
    order_paid["event"] = json!("order.paid");
    order_paid["contains"] = json!(["payment", "order"]);
    order_paid["payload"]["order"] = json!({"entity": {
        "id": "order_Qk7TlW0pF3sK8e", "entity": "order", "amount": 1500, "amount_paid": 1500,
        "amount_due": 0, "currency": "USD", "receipt": "rcpt_42", "status": "paid",
        "attempts": 1, "notes": {"account_id": "acct_1"}, "created_at": 1780315180,
    }});
    assert_eq!(RAZORPAY.send(&app, &order_paid).await["status"], "ignored");
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

crate::kind_scenarios!(RAZORPAY; a_replay_with_a_new_event_id_header_is_a_duplicate, an_uncaptured_payments_auto_refund_debits_nothing);
