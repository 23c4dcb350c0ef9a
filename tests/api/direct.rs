//! What tests that commit deliveries through the library (not HTTP) share:
//! a webhook delivery of a body, and a source that names payments.

use chrono::{DateTime, Utc};
use hookledger::domain::Origin;
use hookledger::ingest::RawDelivery;

use crate::helpers::DEMO_SECRET;

/// A webhook delivery of `body` (its SHA-256 `digest`), received at
/// `received_at`, with no signature details.
pub fn webhook<'a>(body: &'a [u8], digest: &'a str, received_at: DateTime<Utc>) -> RawDelivery<'a> {
    RawDelivery {
        payload: body,
        payload_sha256: digest,
        received_at,
        signature_headers: None,
        signed_at: None,
        signed_event_id: None,
        origin: Origin::Webhook,
    }
}

/// `sales`: a Standard Webhooks sender whose credits name their payment
/// and whose refunds name the payment they refund, with `extra` lines
/// (its `on_stale`, say).
pub fn sales_source(extra: &str) -> String {
    format!(
        r#"
[[sources]]
name = "sales"
kind = "standard-webhooks"
secrets = ["{DEMO_SECRET}"]
payment_path = "data.payment_id"
reverses_path = "data.payment_id"
{extra}
"#
    )
}
