//! Coinbase Commerce end to end: only a confirmed charge credits, once per
//! charge whatever event reports it; Coinbase's own signed test body, sent
//! byte for byte, verifies (and, a new charge, moves nothing). Coinbase has
//! no refund event.

use hookledger::cli::SignedRequest;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;
use crate::helpers::json_with_status;

/// The secret of Coinbase's own test vector (coinbase-commerce-python
/// `tests/test_webhook.py`), so the vector can be delivered end to end.
const SDK_SECRET: &str = "30291a20-0bd1-4267-9b0f-e6e7b123c0bf";

pub const COINBASE: Kind = Kind {
    source: "coinbase",
    kind: "coinbase",
    secret: SDK_SECRET,
    old_secret: "b7e2c9d4-5a1f-4e3b-8c6d-2f0a9e8b7c6d",
    config: r#"
[[sources]]
name = "coinbase"
kind = "coinbase"
secrets = ["30291a20-0bd1-4267-9b0f-e6e7b123c0bf", "b7e2c9d4-5a1f-4e3b-8c6d-2f0a9e8b7c6d"]
"#,
    payment,
    refund,
    key_of,
};

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    // USD has two decimal places.
    let amount = json!(format!("{}.{:02}", amount / 100, amount % 100));
    edited(
        "coinbase",
        "charge_confirmed",
        &[
            ("event.id", json!(event_id)),
            ("event.data.id", json!(payment)),
            ("event.data.pricing.local.amount", amount.clone()),
            ("event.data.pricing.settlement.amount", amount),
        ],
    )
}

fn refund(_event_id: &str, _refund_id: &str, _payment: &str, _amount: i64) -> Value {
    unreachable!("Coinbase Commerce has no refund event")
}

fn key_of(body: &Value) -> String {
    format!("charge:{}", body["event"]["data"]["id"].as_str().unwrap())
}

async fn only_a_confirmed_charge_credits_and_only_once(backend: Backend) {
    let app = COINBASE.spawn(backend).await;
    let mut pending = payment("e1", "charge_1", 1500);
    pending["event"]["type"] = json!("charge:pending");
    let answer = COINBASE.send(&app, &pending).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (Some("ignored"), Some("e1"))
    );
    let confirmed = COINBASE.send(&app, &payment("e2", "charge_1", 1500)).await;
    assert_eq!(
        (confirmed["status"].as_str(), confirmed["event_id"].as_str()),
        (Some("applied"), Some("charge:charge_1"))
    );
    let again = COINBASE.send(&app, &payment("e3", "charge_1", 1500)).await;
    assert_eq!(
        again["duplicate"], true,
        "another event, same charge: {again}"
    );
    assert_eq!(app.balance("acct_1", "USD").await, 1500);
    app.assert_invariants().await;
}

/// `PAYLOAD_STR` and `SIG_HEADER` of coinbase-commerce-python's webhook
/// test, posted exactly as Coinbase's SDK verifies them.
async fn the_sdk_test_body_verifies_end_to_end(backend: Backend) {
    let app = COINBASE.spawn(backend).await;
    let body = concat!(
        r#"{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"#,
        r#""event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created","#,
        r#""api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","#,
        r#""data":{"code":"66BEOV2A","name":"The Sovereign Individual","#,
        r#""description":"Mastering the Transition to the Information Age","#,
        r#""hosted_url":"https://commerce.coinbase.com/charges/66BEOV2A","#,
        r#""created_at":"2017-01-31T20:49:02Z","expires_at":"2017-01-31T21:04:02Z","#,
        r#""timeline":[{"time":"2017-01-31T20:49:02Z","status":"NEW"}],"#,
        r#""metadata":{},"pricing_type":"no_price","payments":[],"#,
        r#""addresses":{"bitcoin":"0000000000000000000000000000000000","#,
        r#""ethereum":"0x0000000000000000000000000000000000000000","#,
        r#""litecoin":"3000000000000000000000000000000000","#,
        r#""bitcoincash":"bitcoincash:000000000000000000000000000000000000000000"}}}}"#
    );
    let request = SignedRequest {
        body: body.as_bytes().to_vec(),
        headers: vec![(
            "X-CC-Webhook-Signature",
            "8be7742c7d372f08a6a3224edadf18a22b65fa9e28f3f2de97376cdaa092590d".to_owned(),
        )],
    };
    let answer = json_with_status(COINBASE.post(&app, &request).await, StatusCode::OK).await;
    assert_eq!(
        (answer["status"].as_str(), answer["event_id"].as_str()),
        (
            Some("ignored"),
            Some("24934862-d980-46cb-9402-43c81b0cdba6")
        )
    );
    app.assert_invariants().await;
}

crate::kind_scenarios!(
    COINBASE, no_refunds;
    only_a_confirmed_charge_credits_and_only_once,
    the_sdk_test_body_verifies_end_to_end
);
