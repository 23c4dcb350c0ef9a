//! The message as sent: version 1 of the JSON in `schema/message.v1.json`,
//! rendered from the stored row on every attempt, so every attempt and
//! every replay of one message carries the same body.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::store::OutboxRow;

pub const VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct Message<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    message_type: &'a str,
    version: u32,
    account_id: Option<&'a str>,
    currency: Option<&'a str>,
    amount_minor: Option<i64>,
    balance_after_minor: Option<i64>,
    account_seq: Option<i64>,
    source: &'a str,
    event_id: &'a str,
    object_id: Option<&'a str>,
    occurred_at: Option<String>,
    posted_at: String,
    operator_applied: bool,
    status: &'a str,
    reason: Option<&'a str>,
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The JSON body of `row`'s message.
pub fn render(row: &OutboxRow) -> Vec<u8> {
    let message = Message {
        id: &row.message_id,
        message_type: &row.message_type,
        version: VERSION,
        account_id: row.account_id.as_deref(),
        currency: row.currency.as_deref(),
        amount_minor: row.amount_minor,
        balance_after_minor: row.balance_after_minor,
        account_seq: row.account_seq,
        source: &row.source,
        event_id: &row.event_id,
        object_id: row.object_id.as_deref(),
        occurred_at: row.occurred_at.map(timestamp),
        posted_at: timestamp(row.posted_at),
        operator_applied: row.operator_applied,
        status: &row.event_status,
        reason: row.reason.as_deref(),
    };
    serde_json::to_vec(&message).expect("a message always serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted() -> OutboxRow {
        OutboxRow {
            outbox_id: 9,
            destination: "billing".into(),
            message_id: "msg_0123456789abcdef0123456789abcdef".into(),
            message_type: "ledger.posted".into(),
            source: "stripe".into(),
            event_id: "evt_1".into(),
            event_status: "applied".into(),
            reason: None,
            account_id: Some("cus_42".into()),
            currency: Some("JPY".into()),
            amount_minor: Some(-1500),
            balance_after_minor: Some(3000),
            account_seq: Some(3),
            object_id: Some("pi_1".into()),
            occurred_at: None,
            posted_at: "2026-11-24T10:00:00.123Z".parse().unwrap(),
            operator_applied: false,
            attempts: 1,
        }
    }

    #[test]
    fn a_posting_renders_every_field_of_version_1() {
        let body: serde_json::Value = serde_json::from_slice(&render(&posted())).unwrap();
        assert_eq!(body["id"], "msg_0123456789abcdef0123456789abcdef");
        assert_eq!(body["type"], "ledger.posted");
        assert_eq!(body["version"], 1);
        assert_eq!(body["amount_minor"], -1500);
        assert_eq!(body["balance_after_minor"], 3000);
        assert_eq!(body["account_seq"], 3);
        assert_eq!(body["currency"], "JPY");
        assert_eq!(body["occurred_at"], serde_json::Value::Null);
        assert_eq!(body["posted_at"], "2026-11-24T10:00:00.123000Z");
        assert_eq!(body["operator_applied"], false);
    }

    /// The shipped schema names exactly the fields rendered, and each
    /// rendered value has a type the schema allows.
    #[test]
    fn the_schema_matches_what_is_rendered() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/message.v1.json")).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let held = OutboxRow {
            message_type: "event.held".into(),
            message_id: "msg_fedcba9876543210fedcba9876543210".into(),
            event_status: "stale".into(),
            reason: Some("out of order".into()),
            balance_after_minor: None,
            account_seq: None,
            occurred_at: Some("2026-11-24T09:00:00Z".parse().unwrap()),
            ..posted()
        };
        for row in [posted(), held] {
            let body: serde_json::Value = serde_json::from_slice(&render(&row)).unwrap();
            let body = body.as_object().unwrap();
            let mut keys: Vec<&str> = body.keys().map(String::as_str).collect();
            let mut named: Vec<&str> = properties.keys().map(String::as_str).collect();
            keys.sort_unstable();
            named.sort_unstable();
            assert_eq!(keys, named);
            let mut required = required.clone();
            required.sort_unstable();
            assert_eq!(keys, required);
            for (key, value) in body {
                let rule = &properties[key];
                let kind = match value {
                    serde_json::Value::Null => "null",
                    serde_json::Value::Bool(_) => "boolean",
                    serde_json::Value::Number(_) => "integer",
                    serde_json::Value::String(_) => "string",
                    _ => "other",
                };
                let allowed = match &rule["type"] {
                    serde_json::Value::String(one) => vec![one.as_str()],
                    serde_json::Value::Array(many) => {
                        many.iter().map(|t| t.as_str().unwrap()).collect()
                    }
                    _ => Vec::new(),
                };
                let listed = rule["enum"]
                    .as_array()
                    .is_none_or(|values| values.contains(value));
                let constant = rule.get("const").is_none_or(|c| c == value);
                assert!(
                    (allowed.is_empty() || allowed.contains(&kind)) && listed && constant,
                    "{key} = {value} against {rule}"
                );
            }
        }
    }

    #[test]
    fn the_same_row_renders_the_same_bytes() {
        assert_eq!(render(&posted()), render(&posted()));
    }
}
