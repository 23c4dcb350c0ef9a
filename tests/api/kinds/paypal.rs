//! PayPal end to end: RSA signatures verified offline against the
//! certificates configured for the source, decimal amounts, refunds found
//! through their capture link; a request naming a certificate URL outside
//! PayPal is refused without anything being fetched.

use serde_json::{Value, json};

use super::Kind;
use crate::backend::Backend;
use crate::fixtures::edited;

pub const PAYPAL: Kind = Kind {
    source: "paypal",
    kind: "paypal",
    secret: include_str!("../../fixtures/paypal/throwaway-key.pem"),
    old_secret: include_str!("../../fixtures/paypal/other-key.pem"),
    config: concat!(
        "\n[[sources]]\nname = \"paypal\"\nkind = \"paypal\"\nwebhook_id = \"4JH86294D6297924G\"\n",
        "certificates = [\"",
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/paypal/throwaway-cert.pem\", \"",
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/paypal/other-cert.pem\"]\n"
    ),
    payment,
    refund,
    key_of,
};

/// `1500` minor units as PayPal writes them.
fn decimal(amount: i64) -> Value {
    json!(format!("{}.{:02}", amount / 100, amount % 100))
}

fn payment(event_id: &str, payment: &str, amount: i64) -> Value {
    edited(
        "paypal",
        "PAYMENT.CAPTURE.COMPLETED",
        &[
            ("id", json!(format!("WH-{event_id}"))),
            ("resource.id", json!(payment)),
            ("resource.amount.value", decimal(amount)),
        ],
    )
}

fn refund(event_id: &str, refund_id: &str, payment: &str, amount: i64) -> Value {
    let mut body = edited(
        "paypal",
        "PAYMENT.CAPTURE.REFUNDED",
        &[
            ("id", json!(format!("WH-{event_id}"))),
            ("resource.id", json!(refund_id)),
            ("resource.amount.value", decimal(amount)),
        ],
    );
    body["resource"]["links"][1]["href"] = json!(format!(
        "https://api.paypal.com/v2/payments/captures/{payment}"
    ));
    body
}

fn key_of(body: &Value) -> String {
    match body["event_type"].as_str() {
        Some("PAYMENT.CAPTURE.REFUNDED") => {
            format!("refund:{}", body["resource"]["id"].as_str().unwrap())
        }
        _ => body["id"].as_str().unwrap().to_owned(),
    }
}

async fn a_certificate_url_outside_paypal_is_refused(backend: Backend) {
    let app = PAYPAL.spawn(backend).await;
    let mut signed = PAYPAL.sign(&payment("e1", "CAP1", 1500));
    for (name, value) in &mut signed.headers {
        if *name == "PAYPAL-CERT-URL" {
            *value = "https://paypal-certs.evil.example/cert.pem".to_owned();
        }
    }
    super::assert_refused(&app, &PAYPAL, &signed, "malformed_signature_header").await;
    assert!(app.events().await.is_empty());
}

crate::kind_scenarios!(PAYPAL; a_certificate_url_outside_paypal_is_refused);
