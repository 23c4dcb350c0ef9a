//! The destinations' config, as `config::load` reads it with [`check`]:
//! both kinds, their defaults, every problem.

use super::*;
use crate::config::from_toml_reading;
use crate::domain::MessageType;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn env(name: &str) -> Option<String> {
    (name == "BILLING_SECRET").then(|| SECRET.to_owned())
}

fn parse(destinations: &str) -> Result<Vec<Destination>, String> {
    let text = format!("[admin]\ntoken = \"0123456789abcdef0123\"\n{destinations}");
    from_toml_reading(&text, &env, &check)
        .map(|config| config.destinations)
        .map_err(|e| e.to_string())
}

#[test]
fn both_kinds_parse_with_their_defaults() {
    let parsed = parse(
        r#"
[[destinations]]
name = "billing"
kind = "http"
url = "https://billing.internal/hooks?token=t0ps3cret"
secret = ["env:BILLING_SECRET", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"]
events = ["ledger.posted"]
ordered_by_account = true

[[destinations]]
name = "bus"
kind = "nats"
url = "nats://127.0.0.1:4222"
"#,
    )
    .unwrap();
    assert_eq!(parsed.len(), 2);
    let billing = &parsed[0];
    assert_eq!(billing.types, [MessageType::LedgerPosted]);
    assert!(billing.ordered_by_account);
    assert_eq!((billing.max_attempts, billing.timeout.as_secs()), (25, 10));
    let line = describe(billing, &env).unwrap();
    assert!(
        line.starts_with("http POST https://billing.internal/hooks (2 signing key(s))")
            && !line.contains("whsec_")
            && !format!("{billing:?}").contains(&SECRET[6..])
            && !format!("{billing:?}{line}").contains("t0ps3cret"),
        "{line}"
    );
    let bus = &parsed[1];
    assert_eq!(bus.types, MessageType::ALL);
    let line = describe(bus, &env).unwrap();
    assert!(
        line.starts_with(
            "nats nats://127.0.0.1:4222, subject hookledger.{type}, stream HOOKLEDGER;"
        ),
        "{line}"
    );
}

#[test]
fn every_problem_names_its_key() {
    let cases = [
        (
            "kind = \"http\"\nurl = \"https://x.test/\"",
            "destinations[d].secret: is required",
        ),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = \"not base64!\"",
            "destinations[d].secret[0]",
        ),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = \"whsec_c2hvcnQ=\"",
            "at least 16 bytes",
        ),
        (
            "kind = \"mqtt\"\nurl = \"https://x.test/\"",
            "unknown kind \"mqtt\"",
        ),
        (
            "kind = \"nats\"\nurl = \"nats://h:4222\"\nevents = [\"ledger.moved\"]",
            "destinations[d].events",
        ),
        (
            "kind = \"nats\"\nurl = \"nats://h:4222\"\nevents = []",
            "is empty",
        ),
        (
            "kind = \"nats\"\nurl = \"nats://h:4222\"\nsubject = \"{type}\"",
            "destinations[d].subject",
        ),
        (
            "kind = \"nats\"\nurl = \"nats://h:4222\"\nsecret = \"x\"",
            "destinations[d]: unknown field `secret`",
        ),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = \"env:BILLING_SECRET\"\nordered_by_acount = true",
            "destinations[d]: unknown field `ordered_by_acount`",
        ),
        ("kind = \"nats\"", "destinations[d].url: is required"),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = 5",
            "a string or a list of strings",
        ),
        (
            "kind = \"nats\"\nurl = \"nats://h:4222\"\nstream = 5",
            "destinations[d]: invalid type: integer `5`, expected a string",
        ),
        (
            "kind = \"nats\"\nurl = \"nats://h:4222\"\nstream = 2026-11-27",
            "destinations[d].stream: is a date",
        ),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = [\"env:BILLING_SECRET\", 2026-11-27T10:00:00Z]",
            "destinations[d].secret: is a date",
        ),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = \"env:BILLING_SECRET\"\nsubject = \"a.b\"",
            "destinations[d]: unknown field `subject`",
        ),
        (
            "kind = \"http\"\nurl = \"https://u:p@x.test/\"\nsecret = \"env:BILLING_SECRET\"",
            "credentials",
        ),
        (
            "kind = \"http\"\nurl = \"https://x.test/\"\nsecret = \"env:BILLING_SECRET\"\nmax_attempts = 0",
            "max_attempts",
        ),
        (
            "kind = \"nats\"\nurl = \"https://x.test/\"",
            "must start with nats://",
        ),
    ];
    for (body, expected) in cases {
        let error = parse(&format!("[[destinations]]\nname = \"d\"\n{body}\n")).unwrap_err();
        assert!(error.contains(expected), "{body}: {error}");
        assert!(!error.contains(&SECRET[6..]), "{error}");
    }
    let twice = "[[destinations]]\nname = \"d\"\nkind = \"nats\"\nurl = \"nats://h\"\n";
    let error = parse(&format!("{twice}{twice}")).unwrap_err();
    assert!(error.contains("used by another destination"), "{error}");
}

/// A mistyped common key (`ordered_by_acount`) reaches the kind's own
/// settings: each kind must refuse it, or it would be dropped silently.
#[test]
fn every_kind_refuses_a_key_it_does_not_know() {
    for name in known_kinds() {
        let mut settings = toml::Table::new();
        settings.insert("ordered_by_acount".into(), toml::Value::Boolean(true));
        let parse = parser_for(name).unwrap();
        let error = parse(settings, &|_| None, "destinations[d]").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("unknown field `ordered_by_acount`"),
            "{name}: {error}"
        );
    }
}

/// A config read without the kinds (`from_toml`) meets them at start-up:
/// every destination its kind refuses is named at once, as at load.
#[test]
fn start_up_names_every_destination_its_kind_refuses() {
    let text = "[admin]\ntoken = \"0123456789abcdef0123\"\n\
        [[destinations]]\nname = \"a\"\nkind = \"http\"\nurl = \"https://x.test/\"\n\
        [[destinations]]\nname = \"b\"\nkind = \"mqtt\"\n\
        [[destinations]]\nname = \"c\"\nkind = \"nats\"\nurl = \"nats://h:4222\"\n";
    let config = crate::config::from_toml(text, &env).unwrap();
    let error = check_all(&config.destinations).unwrap_err();
    let keys: Vec<&str> = error.all().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["destinations[a].secret", "destinations[b].kind"]);
    assert_eq!(
        error.to_string(),
        parse(&text[text.find("[[destinations]]").unwrap()..]).unwrap_err()
    );
}
