//! The PostgreSQL pool: the connect options every connection gets, what
//! the URL may ask for, and the hooks that keep the pool on a server that
//! takes writes ([`super::read_only`]).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::{StoreError, read_only};

/// The options of `url`, with the statement timeout, READ COMMITTED and
/// (unless the URL names one) the application name `hookledger`, which
/// `pg_stat_activity` shows. Refuses what sqlx would silently get wrong: a
/// list of hosts (sqlx connects to one, and would look the list up as one
/// name) and a `target_session_attrs` other than `read-write` (sqlx
/// ignores the parameter; hookledger keeps read-write connections only,
/// whatever it says).
pub fn connect_options(
    url: &str,
    statement_timeout: Duration,
) -> Result<PgConnectOptions, StoreError> {
    check_url(url)?;
    let timeout_ms = statement_timeout.as_millis().to_string();
    let options = PgConnectOptions::from_str(&without_session_attrs(url))
        .map_err(|e| StoreError::Connect(e.to_string()))?
        // READ COMMITTED for the statements that run outside `begin` too
        // (a redelivery's one-statement count): a server default of
        // REPEATABLE READ would turn two at once into a 40001 error.
        .options([
            ("statement_timeout", timeout_ms.as_str()),
            ("default_transaction_isolation", "read committed"),
        ]);
    Ok(match options.get_application_name() {
        Some(_) => options,
        None => options.application_name("hookledger"),
    })
}

/// A pool of at most `max_connections` on `options`, connecting lazily.
/// No ping before each acquire: it costs a round trip per delivery, and
/// sqlx pings every connection when it is given back, so a connection
/// broken by a server restart is dropped after one failed use (answered
/// 503, retried by the provider). Each new connection is refused if the
/// server is read-only, and a connection opened before a write was refused
/// (25006) is closed instead of used again.
pub fn pool_options(max_connections: u32, acquire_timeout: Duration) -> PgPoolOptions {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .max_connections(max_connections)
        .acquire_timeout(acquire_timeout)
        .after_connect(|conn, _| Box::pin(read_only::refuse_if_read_only(conn)))
        .before_acquire(|_, meta| {
            Box::pin(async move { Ok(!read_only::opened_before_a_refusal(meta.age)) })
        })
        .after_release(|_, meta| {
            Box::pin(async move { Ok(!read_only::opened_before_a_refusal(meta.age)) })
        })
}

/// The URL's query parameters, as `(name, value)`, undecoded.
fn parameters(url: &str) -> impl Iterator<Item = (&str, &str)> {
    url.split_once('?')
        .map(|(_, query)| query)
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

fn check_url(url: &str) -> Result<(), StoreError> {
    let authority = url
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?']).next().unwrap_or(""))
        .unwrap_or("");
    let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let several = hosts.contains(',')
        || parameters(url).any(|(name, value)| name == "host" && value.contains(','));
    if several {
        return Err(StoreError::Connect(
            "database_url names several hosts; hookledger's driver (sqlx) connects to one: \
             put the address that moves at failover in front (haproxy, a DNS name, a \
             virtual IP; docs/production/failover.md)"
                .to_owned(),
        ));
    }
    for (name, value) in parameters(url) {
        if name == "target_session_attrs" && !matches!(value, "read-write" | "primary") {
            return Err(StoreError::Connect(format!(
                "database_url asks target_session_attrs={value}; hookledger writes, and keeps \
                 connections only to a server that takes writes (read-write, the one value it \
                 takes)"
            )));
        }
    }
    Ok(())
}

/// `url` without `target_session_attrs`, which sqlx does not know (what it
/// asks, hookledger does anyway).
fn without_session_attrs(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.starts_with("target_session_attrs="))
        .collect();
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_only_and_read_write_sessions_only() {
        for url in [
            "postgres://u@a:5432,b:5432/hl",
            "postgres://u:p@a,b/hl",
            "postgres:///hl?host=a,b",
        ] {
            let error = check_url(url).unwrap_err().to_string();
            assert!(error.contains("several hosts"), "{url}: {error}");
        }
        let error = check_url("postgres://a/hl?target_session_attrs=any").unwrap_err();
        assert!(error.to_string().contains("target_session_attrs=any"));
        for url in [
            "postgres://u:p,w@a:5432/hl",
            "postgres://a/hl?target_session_attrs=read-write&sslmode=disable",
            "postgresql://a/hl",
        ] {
            check_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        }
    }

    #[test]
    fn target_session_attrs_is_taken_out_for_sqlx() {
        assert_eq!(
            without_session_attrs(
                "postgres://a/hl?target_session_attrs=read-write&sslmode=disable"
            ),
            "postgres://a/hl?sslmode=disable"
        );
        assert_eq!(
            without_session_attrs("postgres://a/hl?target_session_attrs=read-write"),
            "postgres://a/hl"
        );
        assert_eq!(without_session_attrs("postgres://a/hl"), "postgres://a/hl");
    }

    #[test]
    fn connections_are_named_unless_the_url_names_them() {
        let named = |url| {
            connect_options(url, Duration::from_secs(1))
                .unwrap()
                .get_application_name()
                .map(str::to_owned)
        };
        assert_eq!(named("postgres://a/hl").as_deref(), Some("hookledger"));
        assert_eq!(
            named("postgres://a/hl?application_name=blue").as_deref(),
            Some("blue")
        );
    }
}
