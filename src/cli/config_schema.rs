//! `hookledger config-schema`: the config file's JSON Schema, which `init`
//! also writes beside the config it writes (`#:schema` names it) and which
//! is committed as `schema/hookledger.schema.json`.

use crate::config::schema::json_schema;
use crate::outbox::destinations::settings_schemas;

/// The file name `init` writes the schema under, beside the config.
pub const SCHEMA_FILE: &str = "hookledger.schema.json";

/// The schema as printed: pretty JSON, one trailing newline.
pub fn schema_text() -> String {
    let schema = json_schema(&settings_schemas);
    let mut text = serde_json::to_string_pretty(&schema).expect("a JSON value prints");
    text.push('\n');
    text
}
