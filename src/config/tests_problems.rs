//! What a config that cannot run reports: every problem at once, the
//! variable to set, placeholder warnings that never show a secret.

use super::tests::parse;

#[test]
fn every_problem_of_a_config_is_reported_at_once() {
    let error = parse(
        r#"
max_body_bytes = 0
[[sources]]
name = "stripe"
kind = "stripe"
secrets = ["env:STRIPE_WEBHOOK_SECRET", "env:STRIPE_WEBHOOK_SECRET_PREVIOUS"]
[[sources]]
name = "billing"
kind = "standard-webhooks"
secrets = ["env:BILLING_WEBHOOK_SECRET"]
tolerance_secs = 0
"#,
        &[("STRIPE_WEBHOOK_SECRET_PREVIOUS", "")],
    )
    .unwrap_err();
    let all: Vec<(String, String)> = error
        .all()
        .map(|e| (e.key.clone(), e.message.clone()))
        .collect();
    let expected = [
        ("max_body_bytes", "must be between 1 and 67108864"),
        (
            "sources[stripe].secrets[0]",
            "environment variable STRIPE_WEBHOOK_SECRET is not set",
        ),
        (
            "sources[stripe].secrets[1]",
            "environment variable STRIPE_WEBHOOK_SECRET_PREVIOUS is empty",
        ),
        (
            "sources[billing].secrets[0]",
            "environment variable BILLING_WEBHOOK_SECRET is not set",
        ),
        (
            "sources[billing].tolerance_secs",
            "must be between 1 and 604800",
        ),
    ];
    assert_eq!(
        all,
        expected
            .iter()
            .map(|(k, m)| (k.to_string(), m.to_string()))
            .collect::<Vec<_>>()
    );
    let text = error.to_string();
    assert!(
        text.starts_with("5 config errors:\n  max_body_bytes: "),
        "{text}"
    );
    assert_eq!(text.lines().count(), 6, "{text}");
}

#[test]
fn a_source_without_secrets_names_its_own_variable() {
    let error = parse(
        "[[sources]]\nname = \"stripe-eu\"\nkind = \"stripe\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(
        error.message,
        "no webhook secret configured: set secrets = [\"...\"] or HOOKLEDGER_SOURCE_STRIPE_EU_SECRETS"
    );
}

#[test]
fn secrets_that_look_like_placeholders_are_warned_about() {
    let config = parse(
        r#"
[[sources]]
name = "stripe"
kind = "stripe"
secrets = ["$STRIPE_WEBHOOK_SECRET", "${OTHER}", "<your secret>", "whsec_real"]
"#,
        &[],
    )
    .unwrap();
    assert_eq!(
        config.warnings,
        [
            "sources[stripe].secrets[0] is a shell variable reference, taken literally; to read \
             the environment variable write \"env:STRIPE_WEBHOOK_SECRET\"",
            "sources[stripe].secrets[1] is a shell variable reference, taken literally; to read \
             the environment variable write \"env:OTHER\"",
            "sources[stripe].secrets[2] is written in <angle brackets>, like a placeholder; it \
             is used as the secret as written",
        ]
    );
    // A real secret that happens to contain a placeholder word is named,
    // never shown.
    let config = parse(
        "[[sources]]\nname = \"s\"\nkind = \"stripe\"\nsecrets = [\"whsec_aXxXxLive0todo9Q\"]\n",
        &[],
    )
    .unwrap();
    assert_eq!(config.warnings.len(), 1);
    assert!(
        !config.warnings[0].contains("aXxXx"),
        "{:?}",
        config.warnings
    );
}

#[test]
fn toml_errors_never_quote_a_value() {
    let error = parse(
        "[[sources]]\nname = \"s\"\nkind = \"stripe\"\nsecrets = \"whsec_REAL\\\"quoted\"\n",
        &[],
    )
    .unwrap_err();
    assert!(!error.message.contains("whsec_REAL"), "{error}");
    assert!(error.message.contains("a string"), "{error}");
}

#[test]
fn the_metrics_token_is_resolved_and_must_be_long() {
    let source = "[[sources]]\nname = \"demo\"\nkind = \"standard-webhooks\"\n\
                  secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n";
    let open = parse(source, &[]).unwrap();
    assert!(open.metrics_token.is_none());
    let from_env = parse(
        &format!("[metrics]\ntoken = \"env:METRICS_TOKEN\"\n{source}"),
        &[("METRICS_TOKEN", "scrape-me-0123456789")],
    )
    .unwrap();
    assert_eq!(
        from_env.metrics_token.unwrap().expose(),
        "scrape-me-0123456789"
    );
    let short = parse(&format!("[metrics]\ntoken = \"short\"\n{source}"), &[]).unwrap_err();
    let problems: Vec<(String, String)> = short
        .all()
        .map(|e| (e.key.clone(), e.message.clone()))
        .collect();
    assert_eq!(
        problems,
        [(
            "metrics.token".to_owned(),
            "must be at least 16 characters".to_owned()
        )]
    );
    // The admin token (tests::parse sets it) is never the scrapers'.
    let shared = parse(
        &format!("[metrics]\ntoken = \"admin-token-0123456789\"\n{source}"),
        &[],
    )
    .unwrap_err();
    assert_eq!(shared.key, "metrics.token");
    assert!(
        shared.message.contains("is an admin token"),
        "{}",
        shared.message
    );
}

#[test]
fn named_admin_tokens_are_checked() {
    let source = "[[sources]]\nname = \"demo\"\nkind = \"standard-webhooks\"\n\
                  secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n";
    let tokens = |body: &str| format!("{source}[[admin.tokens]]\n{body}\n");
    let good = parse(
        &tokens("name = \"support\"\ntoken = \"env:SUPPORT\"\nread_only = true"),
        &[("SUPPORT", "support-token-0123456789")],
    )
    .unwrap();
    let support = &good.admin.tokens[0];
    assert_eq!(
        (support.name.as_str(), support.read_only),
        ("support", true)
    );
    for (body, key, message) in [
        (
            "name = \"admin\"\ntoken = \"another-token-0123456\"",
            "admin.tokens[0].name",
            "admin is taken",
        ),
        (
            "name = \"a b\"\ntoken = \"another-token-0123456\"",
            "admin.tokens[0].name",
            "must be",
        ),
        (
            "name = \"x\"\ntoken = \"short\"",
            "admin.tokens[0].token",
            "at least 16",
        ),
        // The main admin token (tests::parse sets it) cannot be shared.
        (
            "name = \"x\"\ntoken = \"admin-token-0123456789\"",
            "admin.tokens[0].token",
            "another admin token's",
        ),
    ] {
        let error = parse(&tokens(body), &[]).unwrap_err();
        let problem = error.all().next().unwrap();
        assert_eq!(problem.key, key, "{body}");
        assert!(
            problem.message.contains(message),
            "{body}: {}",
            problem.message
        );
    }
}

/// A square source signs its notification URL, so config refuses one
/// without it, naming the key after the source (the kind's own check is
/// in `providers/square/tests.rs`).
#[test]
fn a_square_source_needs_its_notification_url() {
    let config = |extra: &str| {
        crate::config::from_toml(
            &format!(
                "[admin]\ntoken = \"admin-token-0123456789\"\n[[sources]]\nname = \"sq\"\n\
                 kind = \"square\"\nsecrets = [\"sig-key\"]\n{extra}"
            ),
            &|_| None,
        )
    };
    let refused = config("").unwrap_err().to_string();
    assert!(
        refused.starts_with("config error: sources[sq].notification_url: kind square signs"),
        "{refused}"
    );
    assert!(config("notification_url = \"https://hooks.example.com/sq\"").is_ok());
}

#[test]
fn the_anchor_key_is_resolved_and_must_be_long() {
    let source = "[[sources]]\nname = \"demo\"\nkind = \"standard-webhooks\"\n\
                  secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n";
    let unsigned = parse(source, &[]).unwrap();
    assert!(unsigned.anchors.key.is_none());
    assert_eq!(unsigned.anchors.interval.as_secs(), 3600);
    let from_env = parse(
        &format!("[anchors]\nkey = \"env:ANCHOR_KEY\"\ninterval_secs = 600\n{source}"),
        &[("ANCHOR_KEY", "a key of thirty-two characters!!")],
    )
    .unwrap();
    assert_eq!(
        from_env.anchors.key.unwrap().expose(),
        "a key of thirty-two characters!!"
    );
    assert_eq!(from_env.anchors.interval.as_secs(), 600);
    let short = parse(
        &format!("[anchors]\nkey = \"sixteen chars!!!\"\ninterval_secs = 5\n{source}"),
        &[],
    )
    .unwrap_err();
    let problems: Vec<String> = short.all().map(|e| e.key.clone()).collect();
    assert_eq!(problems, ["anchors.key", "anchors.interval_secs"]);
}
