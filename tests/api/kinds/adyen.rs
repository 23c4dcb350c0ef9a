//! Adyen end to end: a notification is a batch, each item signed inside the
//! body and stored as its own event in one transaction; Adyen gets its
//! `[accepted]`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;

const KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

pub const ADYEN: Kind = Kind {
    source: "adyen",
    kind: "adyen",
    secret: KEY,
    old_secret: "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174",
    config: r#"
[[sources]]
name = "adyen"
kind = "adyen"
secrets = ["44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
    "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174"]
"#,
    payment,
    refund,
    key_of,
};

const ITEM: &str = "notificationItems.0.NotificationRequestItem";

fn payment(_event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "adyen",
        "AUTHORISATION",
        &[
            (&format!("{ITEM}.pspReference"), json!(payment)),
            (&format!("{ITEM}.amount.value"), json!(amount)),
        ],
    )
}

fn refund(_event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "adyen",
        "REFUND",
        &[
            (&format!("{ITEM}.pspReference"), json!(refund_id)),
            (&format!("{ITEM}.originalReference"), json!(payment)),
            (&format!("{ITEM}.amount.value"), json!(amount)),
        ],
    )
}

fn item(body: &Value) -> &Value {
    &body["notificationItems"][0]["NotificationRequestItem"]
}

fn key_of(body: &Value) -> String {
    let item = item(body);
    format!(
        "{}:{}:{}",
        item["pspReference"].as_str().unwrap(),
        item["eventCode"].as_str().unwrap(),
        item["success"].as_str().unwrap()
    )
}

/// Items of several notifications as one batch.
fn batch(notifications: &[Value]) -> Value {
    let items: Vec<Value> = notifications
        .iter()
        .map(|n| n["notificationItems"][0].clone())
        .collect();
    json!({"live": "false", "notificationItems": items})
}

async fn a_batch_is_one_transaction_with_duplicates_handled_per_item(backend: Backend) {
    let app = ADYEN.spawn(backend).await;
    ADYEN.send(&app, &payment("", "PAY_A", 1500)).await;
    let mixed = batch(&[
        payment("", "PAY_A", 1500),
        payment("", "PAY_B", 700),
        refund("", "REF_A", "PAY_A", 500),
    ]);
    // Adyen's own request gets Adyen's own answer.
    let signed = ADYEN.sign(&mixed);
    let plain = app.post_signed("adyen", &signed).await;
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(plain.text().await.unwrap(), "[accepted]");
    // The same batch again, asking for JSON: every item is a duplicate now.
    let answer = ADYEN.send(&app, &mixed).await;
    let events = answer["events"].as_array().expect("one answer per item");
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e["duplicate"] == true), "{answer}");
    assert_eq!(app.balance("acct_1", "USD").await, 1500 + 700 - 500);
    let stored = app.event("adyen", "PAY_B:AUTHORISATION:true").await;
    let payload: Value = serde_json::from_str(stored["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        payload["pspReference"], "PAY_B",
        "each item stores its own JSON"
    );
    app.assert_invariants().await;
}

async fn one_forged_item_refuses_the_whole_batch(backend: Backend) {
    let app = ADYEN.spawn(backend).await;
    let mut signed = ADYEN.sign(&batch(&[
        payment("", "PAY_A", 1500),
        payment("", "PAY_B", 700),
    ]));
    let text = String::from_utf8(signed.body.clone()).unwrap();
    signed.body = text
        .replacen("\"value\":700", "\"value\":70000", 1)
        .into_bytes();
    assert_ne!(signed.body, text.as_bytes());
    super::assert_refused(&app, &ADYEN, &signed, "signature_mismatch").await;
    assert!(app.events().await.is_empty(), "nothing of the batch stored");
}

async fn a_chargeback_reverses_the_payment(backend: Backend) {
    let app = ADYEN.spawn(backend).await;
    ADYEN
        .send(&app, &payment("", "QFQTPCQ8HXSKGK82", 1500))
        .await;
    let chargeback = edited("adyen", "CHARGEBACK", &[]);
    let answer = ADYEN.send(&app, &chargeback).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (Some("applied"), Some("CHARGEBACK:KMCJ5XW7LR8RH875"))
    );
    assert_eq!(app.balance("acct_1", "USD").await, 0);
    app.assert_invariants().await;
}

crate::kind_scenarios!(
    ADYEN;
    a_batch_is_one_transaction_with_duplicates_handled_per_item,
    one_forged_item_refuses_the_whole_batch,
    a_chargeback_reverses_the_payment,
);
