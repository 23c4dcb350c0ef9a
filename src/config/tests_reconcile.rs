//! `[sources.reconcile]`: taken by the kinds with a feed, its key from the
//! environment and never shown, every problem named by its key.

use std::time::Duration;

use super::tests::parse;

const STRIPE: &str = "[[sources]]\nname = \"st\"\nkind = \"stripe\"\nsecrets = [\"whsec_abc\"]\n";

/// The one problem of the config, as `key: message`.
fn problem(text: &str, env: &[(&str, &str)]) -> String {
    let error = parse(text, env).unwrap_err();
    let all: Vec<_> = error
        .all()
        .map(|e| format!("{}: {}", e.key, e.message))
        .collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

#[test]
fn a_stripe_source_reconciles_with_the_kinds_defaults_and_its_key_unseen() {
    let text = format!("{STRIPE}[sources.reconcile]\napi_key = \"env:STRIPE_KEY\"\n");
    let config = parse(&text, &[("STRIPE_KEY", "rk_live_readonly_0123456789")]).unwrap();
    let reconcile = config.sources[0].reconcile.as_ref().unwrap();
    assert_eq!(reconcile.api_key.expose(), "rk_live_readonly_0123456789");
    assert_eq!(reconcile.api_base, "https://api.stripe.com");
    assert_eq!(reconcile.interval, Some(Duration::from_secs(600)));
    assert_eq!(reconcile.lookback, Duration::from_secs(259_200));
    assert_eq!(reconcile.request_gap, None, "the kind's own pacing");
    let shown = format!("{:?}", config.sources[0]);
    assert!(!shown.contains("rk_live"), "{shown}");
    let on_demand = format!("{text}interval_secs = 0\n");
    let config = parse(&on_demand, &[("STRIPE_KEY", "rk_x")]).unwrap();
    assert_eq!(config.sources[0].reconcile.as_ref().unwrap().interval, None);
    let paced = format!("{text}request_gap_ms = 250\n");
    let config = parse(&paced, &[("STRIPE_KEY", "rk_x")]).unwrap();
    let gap = config.sources[0].reconcile.as_ref().unwrap().request_gap;
    assert_eq!(gap, Some(Duration::from_millis(250)));
}

#[test]
fn what_reconcile_refuses_is_named_by_its_key() {
    let with = |lines: &str| format!("{STRIPE}[sources.reconcile]\napi_key = \"rk\"\n{lines}");
    for (text, said) in [
        (
            "[[sources]]\nname = \"sw\"\nkind = \"standard-webhooks\"\nsecrets = [\"whsec_YWJj\"]\n\
             [sources.reconcile]\napi_key = \"rk\"\n"
                .to_owned(),
            "sources[sw].reconcile: kind standard-webhooks has no reconcile yet",
        ),
        (with("lookback_secs = 10\n"), "sources[st].reconcile.lookback_secs: must be 60 to"),
        (with("request_gap_ms = 0\n"), "sources[st].reconcile.request_gap_ms: must be 1 to"),
        (
            with("request_gap_ms = 60001\n"),
            "sources[st].reconcile.request_gap_ms: must be 1 to",
        ),
        (
            with("api_base = \"http://api.example.com\"\n"),
            "sources[st].reconcile.api_base: http:// only to a loopback address",
        ),
        (
            format!("{STRIPE}[sources.reconcile]\napi_key = \"env:MISSING\"\n"),
            "sources[st].reconcile.api_key:",
        ),
        (
            format!("{STRIPE}[sources.reconcile]\napi_key = \"rk_live 1\"\n"),
            "sources[st].reconcile.api_key: must be visible ASCII",
        ),
    ] {
        let said_now = problem(&text, &[]);
        assert!(said_now.starts_with(said), "{said_now}");
    }
    let unknown = parse(&with("every = 5\n"), &[]).unwrap_err().to_string();
    assert!(unknown.contains("every"), "{unknown}");
}

#[test]
fn each_kind_reads_back_as_far_as_its_provider_keeps_events() {
    let paddle = "[[sources]]\nname = \"pd\"\nkind = \"paddle\"\nsecrets = [\"pdl_ntfset_x\"]\n\
                  [sources.reconcile]\napi_key = \"pdl_k\"\n";
    let ninety_days = format!("{paddle}lookback_secs = 7776000\n");
    let config = parse(&ninety_days, &[]).unwrap();
    let reconcile = config.sources[0].reconcile.as_ref().unwrap();
    assert_eq!(reconcile.api_base, "https://api.paddle.com");
    assert_eq!(reconcile.retention, Duration::from_secs(7_776_000));
    let past = problem(&format!("{paddle}lookback_secs = 7776001\n"), &[]);
    assert!(past.contains("90 days"), "{past}");
    let stripe = problem(
        &format!("{STRIPE}[sources.reconcile]\napi_key = \"rk\"\nlookback_secs = 2592001\n"),
        &[],
    );
    assert!(stripe.contains("30 days"), "{stripe}");
}

#[test]
fn a_paypal_source_reconciles_with_its_apps_client_id_and_secret() {
    let paypal = "[[sources]]\nname = \"pp\"\nkind = \"paypal\"\nwebhook_id = \"4JH86294D6297924G\"\n\
                  certificates = [\"tests/fixtures/paypal/throwaway-cert.pem\"]\n\
                  [sources.reconcile]\n";
    let text = format!("{paypal}api_key = \"env:PAYPAL_APP\"\n");
    let config = parse(&text, &[("PAYPAL_APP", "AbC123id:EFG456secret")]).unwrap();
    let reconcile = config.sources[0].reconcile.as_ref().unwrap();
    assert_eq!(reconcile.api_base, "https://api-m.paypal.com");
    for bare in ["AbC123id", "AbC123id:", ":EFG456secret"] {
        let said = problem(&text, &[("PAYPAL_APP", bare)]);
        assert!(
            said.contains("must be the app's CLIENT_ID:SECRET"),
            "{said}"
        );
        assert!(!said.contains("EFG456"), "{said}");
    }
}

#[test]
fn a_shopify_source_names_its_shop() {
    let shopify = "[[sources]]\nname = \"sh\"\nkind = \"shopify\"\nsecrets = [\"shpss_x\"]\n\
                   [sources.reconcile]\napi_key = \"shpat_x\"\n";
    let said = problem(shopify, &[]);
    assert!(
        said.starts_with("sources[sh].reconcile.api_base: is required for kind shopify"),
        "{said}"
    );
    let named = format!("{shopify}api_base = \"https://hookledger-test.myshopify.com\"\n");
    let config = parse(&named, &[]).unwrap();
    let reconcile = config.sources[0].reconcile.as_ref().unwrap();
    assert_eq!(reconcile.api_base, "https://hookledger-test.myshopify.com");
    assert_eq!(reconcile.retention, Duration::from_secs(60 * 24 * 3600));
}
