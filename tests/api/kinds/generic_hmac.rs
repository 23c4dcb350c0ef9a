//! generic-hmac end to end: a sender described entirely in config (header,
//! prefix, SHA-512, base64, a `{timestamp}.{body}` template, paths, types),
//! signed and verified exactly as configured.

use chrono::TimeDelta;
use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;

pub const GENERIC: Kind = Kind {
    source: "inhouse",
    kind: "generic-hmac",
    secret: "base64:c2VjcmV0IGZvciB0aGUgaW4taG91c2Ugc2VuZGVy",
    old_secret: "an older secret, still configured",
    config: r#"
[[sources]]
name = "inhouse"
kind = "generic-hmac"
secrets = ["base64:c2VjcmV0IGZvciB0aGUgaW4taG91c2Ugc2VuZGVy", "an older secret, still configured"]
signature_header = "X-Inhouse-Signature"
signature_prefix = "sha512="
algorithm = "sha512"
encoding = "base64"
signed_payload = "{timestamp}.{body}"
timestamp_header = "X-Inhouse-Timestamp"
event_id_path = "event.id"
type_path = "event.kind"
credit_types = ["sale.settled"]
debit_types = ["fee.charged"]
account_path = "event.customer"
amount_path = "event.total"
amount_format = "decimal"
currency_path = "event.currency"
sequence_path = "event.number"
"#,
    payment,
    refund,
    key_of,
};

fn body(event_id: &str, kind: &str, amount: i64, number: i64) -> Value {
    json!({"event": {
        "id": event_id,
        "kind": kind,
        "customer": "acct_1",
        "total": format!("{}.{:02}", amount / 100, amount % 100),
        "currency": "USD",
        "number": number,
    }})
}

fn payment(event_id: &str, _payment: &str, amount: i64) -> Value {
    body(event_id, "sale.settled", amount, 1)
}

/// Never called: the source maps no refund type.
fn refund(event_id: &str, _refund_id: &str, _payment: &str, amount: i64) -> Value {
    body(event_id, "fee.charged", amount, 2)
}

fn key_of(body: &Value) -> String {
    body["event"]["id"].as_str().unwrap().to_owned()
}

async fn listed_debit_types_debit_and_the_window_holds(backend: Backend) {
    let app = GENERIC.spawn(backend).await;
    GENERIC
        .send(&app, &body("s1", "sale.settled", 1500, 1))
        .await;
    let fee = GENERIC.send(&app, &body("f1", "fee.charged", 250, 2)).await;
    assert_eq!(fee["status"], "applied");
    let other = GENERIC
        .send(&app, &body("x1", "sale.created", 999, 3))
        .await;
    assert_eq!(other["status"], "ignored");
    assert_eq!(app.balance("acct_1", "USD").await, 1250);
    let signed = GENERIC.sign(&body("s2", "sale.settled", 100, 4));
    app.clock.advance(TimeDelta::seconds(301));
    super::assert_refused(&app, &GENERIC, &signed, "timestamp_outside_tolerance").await;
    app.assert_invariants().await;
}

crate::kind_scenarios!(GENERIC, no_refunds; listed_debit_types_debit_and_the_window_holds);
