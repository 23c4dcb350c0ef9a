//! Environment overrides: every scalar in the config file outside
//! `[[destinations]]` can be set by an environment variable, so a container
//! needs no file at all (a destination's secret is read from one with
//! `env:NAME`).
//!
//! Top level and sections: `HOOKLEDGER_<KEY>` and `HOOKLEDGER_<SECTION>_<KEY>`
//! (`HOOKLEDGER_DATABASE_URL`, `HOOKLEDGER_ADMIN_TOKEN`, ...). Sources:
//! `HOOKLEDGER_SOURCE_<NAME>_<KEY>` with the name upper-cased and `-` as `_`;
//! `..._SECRETS` is a comma-separated list.

use std::str::FromStr;

use super::ConfigError;
use super::raw::{RawConfig, RawOnStale, RawOnStaleTable, RawSource};
use crate::domain::{AmountFormat, NegativeBalance, OrderingMode, StaleAction};

/// Reads one environment variable; injected so tests need not touch the
/// process environment.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The variable parsed, if set; a value that does not parse is recorded in
/// `errors` (every problem of a config is reported at once).
fn parsed<T: FromStr>(env: Env<'_>, errors: &mut Vec<ConfigError>, var: &str) -> Option<T> {
    let text = env(var)?;
    match text.trim().parse() {
        Ok(value) => Some(value),
        Err(_) => {
            errors.push(ConfigError::new(var, format!("cannot parse {text:?}")));
            None
        }
    }
}

/// The environment variable that sets `key` of the source named `name`.
pub(super) fn source_var(name: &str, key: &str) -> String {
    format!(
        "HOOKLEDGER_SOURCE_{}_{key}",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}

/// Applies every override; the values that do not parse are all returned.
pub fn apply(raw: &mut RawConfig, env: Env<'_>) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    let errors = &mut errors;
    set(&mut raw.listen, env("HOOKLEDGER_LISTEN"));
    set(&mut raw.database_url, env("HOOKLEDGER_DATABASE_URL"));
    set(&mut raw.data_dir, env("HOOKLEDGER_DATA_DIR"));
    set(
        &mut raw.max_body_bytes,
        parsed(env, errors, "HOOKLEDGER_MAX_BODY_BYTES"),
    );
    set(&mut raw.workers, parsed(env, errors, "HOOKLEDGER_WORKERS"));
    set(
        &mut raw.shutdown_timeout_secs,
        parsed(env, errors, "HOOKLEDGER_SHUTDOWN_TIMEOUT_SECS"),
    );
    set(
        &mut raw.drain_secs,
        parsed(env, errors, "HOOKLEDGER_DRAIN_SECS"),
    );
    set(
        &mut raw.release_sweep_secs,
        parsed(env, errors, "HOOKLEDGER_RELEASE_SWEEP_SECS"),
    );
    set(
        &mut raw.database.max_connections,
        parsed(env, errors, "HOOKLEDGER_DATABASE_MAX_CONNECTIONS"),
    );
    set(
        &mut raw.database.acquire_timeout_secs,
        parsed(env, errors, "HOOKLEDGER_DATABASE_ACQUIRE_TIMEOUT_SECS"),
    );
    set(
        &mut raw.database.busy_timeout_ms,
        parsed(env, errors, "HOOKLEDGER_DATABASE_BUSY_TIMEOUT_MS"),
    );
    set(
        &mut raw.database.statement_timeout_ms,
        parsed(env, errors, "HOOKLEDGER_DATABASE_STATEMENT_TIMEOUT_MS"),
    );
    set(
        &mut raw.limits.read_timeout_secs,
        parsed(env, errors, "HOOKLEDGER_LIMITS_READ_TIMEOUT_SECS"),
    );
    set(
        &mut raw.limits.max_connections,
        parsed(env, errors, "HOOKLEDGER_LIMITS_MAX_CONNECTIONS"),
    );
    set(
        &mut raw.limits.max_connections_per_address,
        parsed(env, errors, "HOOKLEDGER_LIMITS_MAX_CONNECTIONS_PER_ADDRESS"),
    );
    set(
        &mut raw.limits.log_summary_secs,
        parsed(env, errors, "HOOKLEDGER_LIMITS_LOG_SUMMARY_SECS"),
    );
    set(
        &mut raw.retention.payload_days,
        parsed(env, errors, "HOOKLEDGER_RETENTION_PAYLOAD_DAYS"),
    );
    set(
        &mut raw.retention.outbox_days,
        parsed(env, errors, "HOOKLEDGER_RETENTION_OUTBOX_DAYS"),
    );
    set(
        &mut raw.retention.purge_interval_secs,
        parsed(env, errors, "HOOKLEDGER_RETENTION_PURGE_INTERVAL_SECS"),
    );
    if let Some(list) = env("HOOKLEDGER_LIMITS_TRUSTED_PROXIES") {
        raw.limits.trusted_proxies = comma_list(&list);
    }
    if let Some(token) = env("HOOKLEDGER_ADMIN_TOKEN") {
        raw.admin.token = Some(token);
        raw.admin.token_from = Some("HOOKLEDGER_ADMIN_TOKEN".to_owned());
    }
    set(
        &mut raw.admin.session_ttl_secs,
        parsed(env, errors, "HOOKLEDGER_ADMIN_SESSION_TTL_SECS"),
    );
    for source in &mut raw.sources {
        apply_source(source, env, errors);
    }
    std::mem::take(errors)
}

/// `a, b,,c` -> `["a", "b", "c"]`.
fn comma_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn apply_source(source: &mut RawSource, env: Env<'_>, errors: &mut Vec<ConfigError>) {
    let name = source.name.clone();
    let var = |key: &str| source_var(&name, key);
    if let Some(list) = env(&var("SECRETS")) {
        source.secrets = comma_list(&list);
        source.secrets_from = Some(format!("environment variable {}", var("SECRETS")));
    }
    set(
        &mut source.tolerance_secs,
        parsed(env, errors, &var("TOLERANCE_SECS")),
    );
    set(&mut source.account_path, env(&var("ACCOUNT_PATH")));
    if let Some(text) = env(&var("ON_STALE")) {
        match parse_on_stale(&text) {
            Some(on_stale) => source.on_stale = Some(on_stale),
            None => errors.push(ConfigError::new(
                var("ON_STALE"),
                "must be hold, apply, or per effect like credit=apply,debit=hold",
            )),
        }
    }
    if let Some(text) = env(&var("ORDERING")) {
        match text.trim() {
            "high-water" => source.ordering = Some(OrderingMode::HighWater),
            "contiguous" => source.ordering = Some(OrderingMode::Contiguous),
            _ => errors.push(ConfigError::new(
                var("ORDERING"),
                "must be high-water or contiguous",
            )),
        }
    }
    set(
        &mut source.first_sequence,
        parsed(env, errors, &var("FIRST_SEQUENCE")),
    );
    set(
        &mut source.gap_timeout_secs,
        parsed(env, errors, &var("GAP_TIMEOUT_SECS")),
    );
    set(
        &mut source.release_batch,
        parsed(env, errors, &var("RELEASE_BATCH")),
    );
    if let Some(list) = env(&var("CREDIT_TYPES")) {
        source.credit_types = Some(comma_list(&list));
    }
    if let Some(list) = env(&var("CERTIFICATES")) {
        source.certificates = Some(comma_list(&list));
    }
    if let Some(list) = env(&var("DEBIT_TYPES")) {
        source.debit_types = Some(comma_list(&list));
    }
    for (slot, name) in [
        (&mut source.amount_path, "AMOUNT_PATH"),
        (&mut source.currency_path, "CURRENCY_PATH"),
        (&mut source.sequence_path, "SEQUENCE_PATH"),
        (&mut source.object_path, "OBJECT_PATH"),
        (&mut source.payment_path, "PAYMENT_PATH"),
        (&mut source.reverses_path, "REVERSES_PATH"),
        (&mut source.notification_url, "NOTIFICATION_URL"),
        (&mut source.webhook_id, "WEBHOOK_ID"),
        (&mut source.scope, "SCOPE"),
    ] {
        set(slot, env(&var(name)));
    }
    if let Some(text) = env(&var("AMOUNT_FORMAT")) {
        match AmountFormat::parse(text.trim()) {
            Some(format) => source.amount_format = Some(format),
            None => errors.push(ConfigError::new(
                var("AMOUNT_FORMAT"),
                "must be minor, minor-string or decimal",
            )),
        }
    }
    if let Some(text) = env(&var("NEGATIVE_BALANCE")) {
        match text.trim() {
            "hold" => source.negative_balance = Some(NegativeBalance::Hold),
            "allow" => source.negative_balance = Some(NegativeBalance::Allow),
            _ => errors.push(ConfigError::new(
                var("NEGATIVE_BALANCE"),
                "must be hold or allow",
            )),
        }
    }
}

fn parse_action(text: &str) -> Option<StaleAction> {
    match text.trim() {
        "hold" => Some(StaleAction::Hold),
        "apply" => Some(StaleAction::Apply),
        _ => None,
    }
}

/// `hold`, `apply`, or `credit=apply,debit=hold` (either key may be left out).
fn parse_on_stale(text: &str) -> Option<RawOnStale> {
    if let Some(action) = parse_action(text) {
        return Some(RawOnStale::Both(action));
    }
    let mut table = RawOnStaleTable::default();
    for item in text.split(',') {
        let (key, value) = item.split_once('=')?;
        let action = Some(parse_action(value)?);
        match key.trim() {
            "credit" if table.credit.is_none() => table.credit = action,
            "debit" if table.debit.is_none() => table.debit = action,
            _ => return None,
        }
    }
    Some(RawOnStale::PerEffect(table))
}
