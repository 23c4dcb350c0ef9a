//! `hookledger check-config`: loads and validates the config exactly as
//! `serve` would, and prints what would run, without a secret: every
//! source with its kind, scope, endpoint and where its secrets come from,
//! the database (no password), the admin token's origin, and the warnings.

use crate::config::{Config, process_env};
use crate::domain::OrderingMode;
use crate::outbox::destinations::describe;

/// `postgres://app:hunter2@db/hl` -> `postgres://app:***@db/hl`, and any
/// `password=` query parameter hidden too. The user information ends at the
/// last `@` before the query, so a password holding `/` or `@` is hidden
/// whole.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (location, query) = match rest.split_once('?') {
        Some((location, query)) => (location, Some(query)),
        None => (rest, None),
    };
    let location = match location.rfind('@') {
        Some(at) => match location[..at].split_once(':') {
            Some((user, _)) => format!("{user}:***{}", &location[at..]),
            None => location.to_owned(),
        },
        None => location.to_owned(),
    };
    let query = query.map(|query| {
        query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    match query {
        Some(query) => format!("{scheme}://{location}?{query}"),
        None => format!("{scheme}://{location}"),
    }
}

pub fn report(config: &Config) -> Vec<String> {
    let row = |label: &str, value: &str| format!("{label:<22} {value}");
    let host = config.listen.replace("0.0.0.0:", "127.0.0.1:");
    let mut lines = vec![
        row(
            "config",
            &config.file.as_ref().map_or_else(
                || "none (no hookledger.toml): the demo sources".to_owned(),
                |f| f.display().to_string(),
            ),
        ),
        row("listen", &config.listen),
        row("database", &redact_url(&config.database_url)),
        row("data_dir", &config.data_dir.display().to_string()),
        row("admin token", &config.admin.token_origin),
    ];
    for source in &config.sources {
        let ordering = match source.ordering.mode {
            OrderingMode::HighWater => "high-water",
            OrderingMode::Contiguous => "contiguous",
        };
        lines.push(row(
            &format!("source {}", source.name),
            &format!(
                "kind {}, scope {}, ordering {ordering}, POST http://{host}/webhooks/{}",
                source.provider.kind(),
                source.scope,
                source.name
            ),
        ));
        for (i, origin) in source.secret_origins.iter().enumerate() {
            lines.push(row("", &format!("secret {}: {origin}", i + 1)));
        }
    }
    for destination in &config.destinations {
        lines.push(row(
            &format!("destination {}", destination.name),
            &describe(destination, &process_env).unwrap_or_else(|e| e.to_string()),
        ));
    }
    for warning in &config.warnings {
        lines.push(row("warning", warning));
    }
    lines.push(format!(
        "ok: {} source(s){}",
        config.sources.len(),
        if config.warnings.is_empty() {
            String::new()
        } else {
            format!(", {} warning(s)", config.warnings.len())
        }
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("postgres://app:hunter2@db:5432/hl?sslmode=require"),
            "postgres://app:***@db:5432/hl?sslmode=require"
        );
        assert_eq!(redact_url("postgres://app@db/hl"), "postgres://app@db/hl");
        assert_eq!(
            redact_url("sqlite://data/hookledger.db"),
            "sqlite://data/hookledger.db"
        );
        assert_eq!(
            redact_url("postgres://a:b@c@host/x"),
            "postgres://a:***@host/x"
        );
        assert_eq!(
            redact_url("postgres://app:hun/ter2@db/hl"),
            "postgres://app:***@db/hl"
        );
        assert_eq!(
            redact_url("postgres://app@db/hl?sslmode=require&password=hunter2"),
            "postgres://app@db/hl?sslmode=require&password=***"
        );
    }

    #[test]
    fn the_report_names_origins_not_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().display().to_string();
        let text = r#"
database_url = "postgres://app:hunter2@db/hl"
[[sources]]
name = "stripe"
kind = "stripe"
secrets = ["env:STRIPE_WEBHOOK_SECRET", "whsec_written_here"]
"#;
        let env = |name: &str| match name {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_from_env".to_owned()),
            "HOOKLEDGER_DATA_DIR" => Some(data_dir.clone()),
            _ => None,
        };
        let config = crate::config::from_toml(text, &env).unwrap();
        let report = report(&config).join("\n");
        for secret in ["whsec_from_env", "whsec_written_here", "hunter2"] {
            assert!(!report.contains(secret), "{report}");
        }
        assert!(
            report.contains("secret 1: environment variable STRIPE_WEBHOOK_SECRET"),
            "{report}"
        );
        assert!(
            report.contains("secret 2: written in the config file"),
            "{report}"
        );
        assert!(
            report.contains("POST http://127.0.0.1:8080/webhooks/stripe"),
            "{report}"
        );
        assert!(
            report.contains("admin token            generated, kept in"),
            "{report}"
        );
        assert!(report.ends_with("ok: 1 source(s)"), "{report}");
    }
}
