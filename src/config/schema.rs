//! The config file's JSON Schema (draft-07, which taplo and the editors
//! built on it read): generated from the raw types, their doc comments and
//! the defaults they share with the build, then given what the types alone
//! cannot say: the kinds a source and a destination may name, the keys only
//! one kind reads, and each destination kind's own keys (given by the
//! outbox, which stands above the config).

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::kind_keys::{owned_keys, owners};
use super::raw::RawConfig;
use crate::providers::{Provider, known_kinds, provider_for};

/// Each destination kind's own keys as a schema object, by kind name.
pub type DestinationKinds<'a> = &'a dyn Fn(&mut SchemaGenerator) -> Vec<(&'static str, Schema)>;

/// The whole schema, as `hookledger config-schema` prints it.
pub fn json_schema(destination_kinds: DestinationKinds<'_>) -> Value {
    // Inline: in draft-07 a `$ref` hides the description and default beside
    // it, which are what an editor shows.
    let mut generator = SchemaSettings::draft07()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let destinations = destination_kinds(&mut generator);
    let mut root = generator.into_root_schema_for::<RawConfig>().to_value();
    tidy(&mut root);
    root["title"] = json!("hookledger configuration");
    root["description"] = json!(
        "hookledger.toml: docs/configuration.md describes every key; `hookledger \
         check-config` checks a file as start-up would."
    );
    source_kinds(&mut root["properties"]["sources"]["items"]);
    destination_items(
        &mut root["properties"]["destinations"]["items"],
        destinations,
    );
    root
}

/// One line per description (a doc comment's line breaks are the source's
/// wrapping), and no `null` (below).
fn tidy(value: &mut Value) {
    without_null(value);
    one_line(value);
}

fn one_line(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(text)) = object.get_mut("description") {
                *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            object.values_mut().for_each(one_line);
        }
        Value::Array(items) => items.iter_mut().for_each(one_line),
        _ => {}
    }
}

/// TOML has no null: a key left out is how a file says "the default", so
/// an `Option`'s schema drops the `null` schemars gives it.
fn without_null(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    object.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(choices)) = object.get_mut("anyOf") {
                choices.retain(|c| c.get("type").is_none_or(|t| t != "null"));
                if let [only] = choices.as_slice() {
                    let only = only.clone();
                    object.remove("anyOf");
                    if let Value::Object(only) = only {
                        object.extend(only);
                    }
                }
            }
            object.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

fn providers() -> impl Iterator<Item = &'static dyn Provider> {
    known_kinds().filter_map(provider_for)
}

fn kinds_where(test: impl Fn(&dyn Provider) -> bool) -> Vec<&'static str> {
    providers().filter(|p| test(*p)).map(|p| p.kind()).collect()
}

/// A rule that `key` may only be set when `kind` is one of `kinds`.
fn only_for(kinds: &[&str], key: &str) -> Value {
    json!({
        "if": {"not": {"properties": {"kind": {"enum": kinds}}}},
        "then": {"properties": {key: false}},
    })
}

/// A source's `kind`: the registered kinds, each kind's replay window, and
/// the keys only some kinds read.
fn source_kinds(source: &mut Value) {
    let properties = &mut source["properties"];
    properties["kind"]["enum"] = json!(known_kinds().collect::<Vec<_>>());
    let windows: Vec<String> = providers()
        .map(|p| format!("{} {}", p.kind(), p.default_tolerance_secs()))
        .collect();
    let described = properties["tolerance_secs"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    properties["tolerance_secs"]["description"] =
        json!(format!("{described} Defaults: {}.", windows.join(", ")));
    let mut rules: Vec<Value> = owned_keys()
        .into_iter()
        .map(|key| only_for(&owners(key), key))
        .collect();
    let payments = kinds_where(|p| p.payments_configured());
    rules.push(only_for(&payments, "payment_path"));
    rules.push(only_for(&payments, "reverses_path"));
    rules.push(only_for(
        &kinds_where(|p| p.reconcile_api().is_some()),
        "reconcile",
    ));
    // A kind that verifies with certificates takes no secrets.
    rules.push(json!({
        "if": {"properties": {"kind": {"enum": kinds_where(|p| p.verifies_with_certificates())}}},
        "then": {"properties": {"secrets": {"maxItems": 0}}},
    }));
    source["allOf"] = Value::Array(rules);
}

/// A destination's `kind`, and per kind every key it takes: the ones every
/// destination has and the kind's own, nothing else.
fn destination_items(destination: &mut Value, kinds: Vec<(&'static str, Schema)>) {
    let names: Vec<&str> = kinds.iter().map(|(name, _)| *name).collect();
    destination["properties"]["kind"]["enum"] = json!(names);
    let common = destination["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let rules = kinds
        .into_iter()
        .map(|(name, settings)| {
            let settings = settings.to_value();
            let mut properties: Map<String, Value> = common.clone();
            if let Some(own) = settings["properties"].as_object() {
                properties.extend(own.clone());
            }
            let mut then = json!({"properties": properties, "additionalProperties": false});
            if let Some(required) = settings.get("required") {
                then["required"] = required.clone();
            }
            json!({"if": {"properties": {"kind": {"const": name}}}, "then": then})
        })
        .collect();
    destination["allOf"] = Value::Array(rules);
}

#[cfg(test)]
#[path = "tests_schema.rs"]
mod tests;
