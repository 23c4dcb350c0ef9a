//! The config's JSON Schema says what the build does: its defaults are the
//! build's, every key is described, and each kind rule names real kinds.

use serde_json::{Value, json};

use super::json_schema;
use crate::domain::{OnStale, OrderingPolicy};
use crate::providers::{known_kinds, provider_for};

fn schema() -> Value {
    json_schema(&|_| Vec::new())
}

fn source(schema: &Value) -> &Value {
    &schema["properties"]["sources"]["items"]
}

fn source_key(schema: &Value, key: &str) -> Value {
    source(schema)["properties"][key].clone()
}

/// Every object schema with properties, by its path.
fn objects<'a>(at: String, value: &'a Value, found: &mut Vec<(String, &'a Value)>) {
    match value {
        Value::Object(object) => {
            if object.get("properties").is_some_and(Value::is_object) {
                found.push((at.clone(), value));
            }
            for (key, inner) in object {
                objects(format!("{at}/{key}"), inner, found);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                objects(format!("{at}/{i}"), inner, found);
            }
        }
        _ => {}
    }
}

#[test]
fn every_key_has_a_one_line_description() {
    let schema = schema();
    let mut checked = 0;
    let mut found = Vec::new();
    objects(String::new(), &schema, &mut found);
    // The kind rules' conditions, and a source's per-kind limits, name keys
    // described where they are defined.
    let described_elsewhere = |at: &str| at.contains("/if") || at.contains("sources/items/allOf");
    for (at, object) in found.into_iter().filter(|(at, _)| !described_elsewhere(at)) {
        for (key, property) in object["properties"].as_object().unwrap() {
            if *property == json!(false) {
                continue;
            }
            let description = property["description"].as_str().unwrap_or_default();
            assert!(!description.is_empty(), "{at}/{key} has no description");
            assert!(!description.contains('\n'), "{at}/{key}: {description:?}");
            checked += 1;
        }
    }
    // The top level, the sources and the destinations at least.
    assert!(checked > 60, "{checked}");
}

#[test]
fn ordering_defaults_are_the_policys() {
    let schema = schema();
    let policy = OrderingPolicy::default();
    assert_eq!(
        source_key(&schema, "ordering")["default"],
        json!(policy.mode.as_str())
    );
    assert_eq!(
        source_key(&schema, "first_sequence")["default"],
        json!(policy.first_sequence)
    );
    assert_eq!(
        source_key(&schema, "gap_timeout_secs")["default"],
        json!(policy.gap_timeout_secs)
    );
    assert_eq!(
        source_key(&schema, "release_batch")["default"],
        json!(policy.release_batch)
    );
    let table = source_key(&schema, "on_stale")["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|choice| choice["type"] == "object")
        .unwrap()["properties"]
        .clone();
    let stale = OnStale::default();
    let name = |action| match action {
        crate::domain::StaleAction::Hold => "hold",
        crate::domain::StaleAction::Apply => "apply",
    };
    assert_eq!(table["credit"]["default"], json!(name(stale.credit)));
    assert_eq!(table["debit"]["default"], json!(name(stale.debit)));
}

#[test]
fn the_widest_lookback_is_the_longest_provider_window() {
    let longest = known_kinds()
        .filter_map(|k| provider_for(k)?.reconcile_api())
        .map(|api| api.retention_days * 24 * 3600)
        .max()
        .unwrap();
    let schema = schema();
    let lookback = &source_key(&schema, "reconcile")["properties"]["lookback_secs"];
    assert_eq!(lookback["maximum"], json!(longest));
}

#[test]
fn a_source_names_a_known_kind_and_only_its_own_keys() {
    let schema = schema();
    let kinds: Vec<&str> = known_kinds().collect();
    assert_eq!(source_key(&schema, "kind")["enum"], json!(kinds));
    let rules = source(&schema)["allOf"].as_array().unwrap();
    let rule_for = |key: &str| {
        rules
            .iter()
            .find(|r| r["then"]["properties"][key] == json!(false))
            .unwrap_or_else(|| panic!("no rule for {key}"))["if"]["not"]["properties"]["kind"]
            ["enum"]
            .clone()
    };
    assert_eq!(rule_for("notification_url"), json!(["square"]));
    assert_eq!(rule_for("certificates"), json!(["paypal"]));
    assert_eq!(rule_for("signed_payload"), json!(["generic-hmac"]));
    assert_eq!(
        rule_for("payment_path"),
        json!(["standard-webhooks", "generic-hmac"])
    );
}

#[test]
fn a_destination_kind_takes_the_common_keys_and_its_own() {
    /// A kind's keys, as a destination kind's file declares them.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Settings {
        /// The one key of this kind.
        only_mine: String,
    }
    let schema = json_schema(&|generator| {
        vec![(
            "test",
            <Settings as schemars::JsonSchema>::json_schema(generator),
        )]
    });
    let rules = schema["properties"]["destinations"]["items"]["allOf"]
        .as_array()
        .unwrap();
    assert_eq!(rules.len(), 1);
    let then = &rules[0]["then"];
    assert_eq!(rules[0]["if"]["properties"]["kind"]["const"], json!("test"));
    assert_eq!(then["additionalProperties"], json!(false));
    for key in [
        "name",
        "kind",
        "events",
        "max_attempts",
        "timeout_secs",
        "only_mine",
    ] {
        assert!(then["properties"].get(key).is_some(), "{key}");
    }
    assert_eq!(then["required"], json!(["only_mine"]));
}
