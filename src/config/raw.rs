//! The config file as written: plain serde types, every key optional so that
//! defaults and environment overrides can be layered before validation.

use serde::Deserialize;

use crate::source::OnStale;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub listen: Option<String>,
    pub database_url: Option<String>,
    pub data_dir: Option<String>,
    pub max_body_bytes: Option<u64>,
    pub workers: Option<u64>,
    #[serde(default)]
    pub database: RawDatabase,
    #[serde(default)]
    pub admin: RawAdmin,
    #[serde(default)]
    pub sources: Vec<RawSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDatabase {
    pub max_connections: Option<u64>,
    pub acquire_timeout_secs: Option<u64>,
    pub busy_timeout_ms: Option<u64>,
    pub statement_timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    pub token: Option<String>,
    pub session_ttl_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub secrets: Vec<String>,
    pub tolerance_secs: Option<u64>,
    pub on_stale: Option<OnStale>,
    pub account_path: Option<String>,
}
