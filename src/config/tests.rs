use std::collections::HashMap;
use std::time::Duration;

use super::*;
use crate::domain::{OnStale, OrderingMode, OrderingPolicy, StaleAction};

pub(super) fn with_env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

const TOKEN: &str = "admin-token-0123456789";

pub(super) fn parse(text: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    from_toml(
        &format!("{text}\n[admin]\ntoken = \"{TOKEN}\"\n"),
        &with_env(vars),
    )
}

fn error_key(text: &str) -> String {
    parse(text, &[]).unwrap_err().key
}

#[test]
fn a_full_config_parses_with_defaults() {
    let config = parse(
        r#"
listen = "0.0.0.0:9000"
database_url = "postgres://localhost/hl"
[[sources]]
name = "stripe"
kind = "stripe"
secrets = ["whsec_a", "env:STRIPE_OLD"]
[[sources]]
name = "inhouse"
kind = "standard-webhooks"
secrets = ["whsec_YWJj"]
on_stale = "apply"
tolerance_secs = 60
"#,
        &[("STRIPE_OLD", "whsec_b")],
    )
    .unwrap();
    assert_eq!(config.listen, "0.0.0.0:9000");
    assert_eq!(config.max_body_bytes, 262_144);
    assert_eq!(config.sources.len(), 2);
    let stripe = &config.sources[0];
    assert_eq!(stripe.keys.len(), 2);
    assert_eq!(stripe.keys[1].expose(), b"whsec_b");
    assert_eq!(
        (stripe.tolerance_secs, stripe.ordering),
        (300, OrderingPolicy::default())
    );
    assert_eq!(
        stripe.mapping.account_path.as_str(),
        "data.object.metadata.account_id"
    );
    assert_eq!(
        (
            config.sources[1].tolerance_secs,
            config.sources[1].ordering.on_stale
        ),
        (60, OnStale::both(StaleAction::Apply))
    );
    assert!(config.self_managed.is_empty());
}

#[test]
fn environment_overrides_scalars_and_source_settings() {
    let config = parse(
        "[[sources]]\nname = \"stripe-eu\"\nkind = \"stripe\"\nsecrets = [\"whsec_a\"]\n",
        &[
            ("HOOKLEDGER_LISTEN", "0.0.0.0:1"),
            ("HOOKLEDGER_MAX_BODY_BYTES", "1024"),
            ("HOOKLEDGER_SOURCE_STRIPE_EU_SECRETS", "whsec_x, whsec_y"),
            ("HOOKLEDGER_SOURCE_STRIPE_EU_ON_STALE", "apply"),
        ],
    )
    .unwrap();
    assert_eq!(
        (config.listen.as_str(), config.max_body_bytes),
        ("0.0.0.0:1", 1024)
    );
    assert_eq!(config.sources[0].keys.len(), 2);
    assert_eq!(
        config.sources[0].ordering.on_stale,
        OnStale::both(StaleAction::Apply)
    );
}

fn ordering_of(text: &str, vars: &[(&str, &str)]) -> Result<OrderingPolicy, ConfigError> {
    let source = format!(
        "[[sources]]\nname = \"ledger\"\nkind = \"standard-webhooks\"\nsecrets = [\"whsec_YWJj\"]\n{text}"
    );
    parse(&source, vars).map(|config| config.sources[0].ordering)
}

#[test]
fn ordering_defaults_to_high_water_applying_late_credits_and_holding_late_debits() {
    let policy = ordering_of("", &[]).unwrap();
    assert_eq!(policy.mode, OrderingMode::HighWater);
    assert_eq!(
        policy.on_stale,
        OnStale {
            credit: StaleAction::Apply,
            debit: StaleAction::Hold
        }
    );
    assert_eq!(
        (
            policy.first_sequence,
            policy.gap_timeout_secs,
            policy.release_batch
        ),
        (1, 3600, 500)
    );
}

#[test]
fn on_stale_takes_one_action_or_one_per_effect() {
    let hold = ordering_of("on_stale = \"hold\"", &[]).unwrap();
    assert_eq!(hold.on_stale, OnStale::both(StaleAction::Hold));
    let table = ordering_of("on_stale = { credit = \"hold\", debit = \"apply\" }", &[]).unwrap();
    assert_eq!(
        table.on_stale,
        OnStale {
            credit: StaleAction::Hold,
            debit: StaleAction::Apply
        }
    );
    let partial = ordering_of("on_stale = { debit = \"apply\" }", &[]).unwrap();
    assert_eq!(partial.on_stale, OnStale::both(StaleAction::Apply));
    let bad = ordering_of("on_stale = { credit = \"drop\" }", &[]).unwrap_err();
    assert_eq!(bad.key, "line 5", "{bad}");
    assert!(bad.message.contains("credit = "), "{}", bad.message);
    let typo = ordering_of("on_stale = { credits = \"hold\" }", &[]).unwrap_err();
    assert_eq!(typo.key, "line 5", "{typo}");
}

#[test]
fn ordering_keys_come_from_the_environment_too() {
    let var = |key: &str| format!("HOOKLEDGER_SOURCE_LEDGER_{key}");
    let vars = [
        (var("ORDERING"), "contiguous"),
        (var("ON_STALE"), "credit=hold, debit=apply"),
        (var("FIRST_SEQUENCE"), "0"),
        (var("GAP_TIMEOUT_SECS"), "60"),
        (var("RELEASE_BATCH"), "7"),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let policy = ordering_of("", &vars).unwrap();
    assert_eq!(
        policy,
        OrderingPolicy {
            mode: OrderingMode::Contiguous,
            on_stale: OnStale {
                credit: StaleAction::Hold,
                debit: StaleAction::Apply
            },
            first_sequence: 0,
            gap_timeout_secs: 60,
            release_batch: 7,
        }
    );
    for (key, value) in [
        ("ON_STALE", "credit=apply,credit=hold"),
        ("ON_STALE", "later"),
        ("ORDERING", "strict"),
    ] {
        let name = var(key);
        let err = ordering_of("", &[(&name, value)]).unwrap_err();
        assert_eq!(err.key, name, "{value}");
    }
}

#[test]
fn contiguous_ordering_is_refused_for_kinds_without_a_sequence_number() {
    let err = parse(
        "[[sources]]\nname = \"s\"\nkind = \"stripe\"\nsecrets = [\"x\"]\nordering = \"contiguous\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(err.key, "sources[s].ordering");
    assert!(err.message.contains("kind stripe"), "{}", err.message);
    for (line, key) in [
        ("first_sequence = -1", "first_sequence"),
        ("gap_timeout_secs = 0", "gap_timeout_secs"),
        ("release_batch = 0", "release_batch"),
        ("release_batch = 10001", "release_batch"),
    ] {
        let err = ordering_of(line, &[]).unwrap_err();
        assert_eq!(err.key, format!("sources[ledger].{key}"), "{line}");
    }
}

#[test]
fn errors_name_the_offending_key() {
    let source = |extra: &str| {
        format!("[[sources]]\nname = \"s\"\nkind = \"stripe\"\nsecrets = [\"x\"]\n{extra}")
    };
    assert_eq!(
        error_key(&source("").replace("stripe", "bitcoin-by-fax")),
        "sources[s].kind"
    );
    assert_eq!(
        error_key(&source("").replace("[\"x\"]", "[]")),
        "sources[s].secrets"
    );
    assert_eq!(
        error_key(&source("").replace("\"x\"", "\"env:NOPE\"")),
        "sources[s].secrets[0]"
    );
    assert_eq!(
        error_key(&format!("{}{}", source(""), source(""))),
        "sources[s].name"
    );
    assert_eq!(
        error_key(&source("").replace("name = \"s\"", "name = \"S!\"")),
        "sources[0].name"
    );
    assert_eq!(
        error_key(&source("account_path = \"a..b\"")),
        "sources[s].account_path"
    );
    assert_eq!(
        error_key(&source("tolerance_secs = 0")),
        "sources[s].tolerance_secs"
    );
    assert_eq!(error_key("database_url = \"mysql://x\""), "database_url");
    assert_eq!(error_key("max_body_bytes = 0"), "max_body_bytes");
    let unknown = parse("lisen = \"x\"", &[]).unwrap_err();
    assert_eq!(unknown.key, "line 1");
    assert!(unknown.message.contains("lisen"), "{}", unknown.message);
    let bad_secret = parse(&source("").replace("stripe", "standard-webhooks"), &[]).unwrap_err();
    assert_eq!(bad_secret.key, "sources[s].secrets[0]");
}

#[test]
fn secrets_never_appear_in_debug_output_or_errors() {
    let config = parse(
        "[[sources]]\nname = \"s\"\nkind = \"stripe\"\nsecrets = [\"whsec_hush\"]\n",
        &[],
    )
    .unwrap();
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("whsec_hush") && !debug.contains(TOKEN),
        "{debug}"
    );
    let err = parse(
        "[[sources]]\nname = \"s\"\nkind = \"standard-webhooks\"\nsecrets = [\"whsec_hush!\"]\n",
        &[],
    );
    assert!(!err.unwrap_err().to_string().contains("hush"));
}

#[test]
fn short_admin_tokens_are_refused() {
    let err = from_toml("[admin]\ntoken = \"short\"\n", &with_env(&[])).unwrap_err();
    assert_eq!(err.key, "admin.token");
}

#[test]
fn without_a_file_a_demo_source_and_token_are_generated_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let env = with_env(&[("HOOKLEDGER_DATA_DIR", data.to_str().unwrap())]);
    let first = build::build(RawConfig::default(), &env, true, &kinds_at_start_up).unwrap();
    assert_eq!(first.sources[0].name.as_str(), "demo");
    assert_eq!(first.sources[0].provider.kind(), "standard-webhooks");
    assert_eq!(first.self_managed.len(), 2);
    assert!(
        first.database_url.starts_with("sqlite://")
            && first.database_url.ends_with("data/hookledger.db")
    );
    let second = build::build(RawConfig::default(), &env, true, &kinds_at_start_up).unwrap();
    assert_eq!(second.self_managed.len(), 2);
    assert_eq!(first.admin.token, second.admin.token);
    assert_eq!(first.sources[0].keys, second.sources[0].keys);
}

/// The example runs with one edit: the Stripe signing secret. The admin
/// token is generated (here in a temporary data_dir).
#[test]
fn the_example_config_needs_one_variable() {
    let text = include_str!("../../hookledger.example.toml");
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().display().to_string();
    let missing = from_toml(text, &with_env(&[("HOOKLEDGER_DATA_DIR", &data_dir)])).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "config error: sources[stripe].secrets[0]: environment variable STRIPE_WEBHOOK_SECRET is not set"
    );
    let env = with_env(&[
        ("HOOKLEDGER_DATA_DIR", &data_dir),
        ("STRIPE_WEBHOOK_SECRET", "whsec_current"),
    ]);
    let config = from_toml(text, &env).unwrap();
    let names: Vec<_> = config.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["stripe"]);
    assert_eq!(config.sources[0].keys.len(), 1);
    assert_eq!(config.self_managed[0].what, "admin token");
    assert!(config.database_url.starts_with("sqlite://"));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn limits_default_and_can_be_set_in_the_file_or_the_environment() {
    let defaults = parse("", &[]).unwrap().limits;
    assert_eq!(defaults, Limits::default());
    assert_eq!(
        (defaults.read_timeout.as_secs(), defaults.max_connections),
        (5, 1024)
    );
    assert_eq!(defaults.max_connections_per_address, Some(64));
    let set = parse(
        "[limits]\nread_timeout_secs = 2\nmax_connections = 50\nmax_connections_per_address = 0",
        &[("HOOKLEDGER_LIMITS_MAX_CONNECTIONS", "70")],
    )
    .unwrap()
    .limits;
    assert_eq!(set.read_timeout, Duration::from_secs(2));
    assert_eq!(set.max_connections, 70, "the environment wins");
    assert_eq!(set.max_connections_per_address, None, "0 turns it off");
}

#[test]
fn trusted_proxies_and_the_log_window_can_be_set() {
    let limits = parse(
        "[limits]\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]\nlog_summary_secs = 5",
        &[],
    )
    .unwrap()
    .limits;
    assert_eq!(limits.trusted_proxies.0.len(), 2);
    assert_eq!(limits.log_summary, Duration::from_secs(5));
    let from_env = parse(
        "",
        &[(
            "HOOKLEDGER_LIMITS_TRUSTED_PROXIES",
            "192.0.2.1, 10.1.0.0/16",
        )],
    )
    .unwrap()
    .limits;
    assert_eq!(from_env.trusted_proxies.0.len(), 2);
    assert_eq!(
        parse("[limits]\ntrusted_proxies = [\"lb.internal\"]", &[])
            .unwrap_err()
            .to_string(),
        "config error: limits.trusted_proxies: \"lb.internal\" is not an IP address or CIDR range"
    );
}

#[test]
fn the_per_address_share_is_at_most_half() {
    let smaller = parse("[limits]\nmax_connections = 100", &[])
        .unwrap()
        .limits;
    assert_eq!(
        smaller.max_connections_per_address,
        Some(50),
        "the default share shrinks with the instance"
    );
    assert!(
        parse(
            "[limits]\nmax_connections = 100\nmax_connections_per_address = 50",
            &[]
        )
        .is_ok()
    );
    assert_eq!(
        error_key("[limits]\nmax_connections = 100\nmax_connections_per_address = 51"),
        "limits.max_connections_per_address"
    );
}

#[test]
fn limits_out_of_range_name_their_key() {
    assert_eq!(
        error_key("[limits]\nread_timeout_secs = 0"),
        "limits.read_timeout_secs"
    );
    assert_eq!(
        error_key("[limits]\nmax_connections = 0"),
        "limits.max_connections"
    );
}
