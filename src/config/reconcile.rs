//! `[sources.reconcile]`: reading the provider's own records for events
//! whose webhook never arrived (docs/operating/reconcile.md).

use std::net::IpAddr;
use std::time::Duration;

use super::raw::RawReconcile;
use super::secrets::resolve_secret;
use super::{ConfigError, Env, defaults};
use crate::providers::Provider;
use crate::source::Reconcile;

pub(super) fn reconcile(
    raw: Option<&RawReconcile>,
    provider: &dyn Provider,
    env: Env<'_>,
    key: &str,
) -> Result<Option<Reconcile>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    let key = format!("{key}.reconcile");
    let Some(api) = provider.reconcile_api() else {
        return Err(ConfigError::new(
            key,
            format!(
                "kind {} has no reconcile yet (docs/operating/reconcile.md says \
                 which kinds do)",
                provider.kind()
            ),
        ));
    };
    let api_key = resolve_secret(&raw.api_key, env, &format!("{key}.api_key"))?;
    if api_key.expose().is_empty() || !api_key.expose().bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::new(
            format!("{key}.api_key"),
            "must be visible ASCII with no spaces, as API keys are",
        ));
    }
    let halves = api_key.expose().split_once(':');
    if api.client_credentials
        && halves.is_none_or(|(id, secret)| id.is_empty() || secret.is_empty())
    {
        return Err(ConfigError::new(
            format!("{key}.api_key"),
            format!(
                "must be the app's CLIENT_ID:SECRET for kind {}",
                provider.kind()
            ),
        ));
    }
    let Some(api_base) = raw.api_base.as_deref().or(api.base) else {
        return Err(ConfigError::new(
            format!("{key}.api_base"),
            format!(
                "is required for kind {}: each account has its own API (a Shopify shop's \
                 is https://<shop>.myshopify.com)",
                provider.kind()
            ),
        ));
    };
    let api_base = checked_base(api_base)
        .map_err(|e| ConfigError::new(format!("{key}.api_base"), e))?
        .to_owned();
    let interval = match raw
        .interval_secs
        .unwrap_or(defaults::RECONCILE_INTERVAL_SECS)
    {
        0 => None,
        secs => Some(Duration::from_secs(secs)),
    };
    let lookback = raw
        .lookback_secs
        .unwrap_or(defaults::RECONCILE_LOOKBACK_SECS.default);
    let retention = api.retention_days * 24 * 3600;
    if !(defaults::RECONCILE_LOOKBACK_SECS.min..=retention).contains(&lookback) {
        return Err(ConfigError::new(
            format!("{key}.lookback_secs"),
            format!(
                "must be 60 to {retention} ({} days, what the provider keeps)",
                api.retention_days
            ),
        ));
    }
    let request_gap = match raw.request_gap_ms {
        None => None,
        Some(ms) if defaults::RECONCILE_REQUEST_GAP_MS.contains(&ms) => {
            Some(Duration::from_millis(ms))
        }
        Some(_) => {
            return Err(ConfigError::new(
                format!("{key}.request_gap_ms"),
                format!(
                    "must be 1 to {} (milliseconds between requests)",
                    defaults::RECONCILE_REQUEST_GAP_MS.end()
                ),
            ));
        }
    };
    Ok(Some(Reconcile {
        api_key,
        api_base,
        interval,
        lookback: Duration::from_secs(lookback),
        retention: Duration::from_secs(retention),
        request_gap,
    }))
}

/// An API base: `https://host[:port]`, or `http://` only to a loopback
/// address (tests, local fakes), never with a path, query or credentials.
fn checked_base(base: &str) -> Result<&str, String> {
    let base = base.trim_end_matches('/');
    let (secure, rest) = match (base.strip_prefix("https://"), base.strip_prefix("http://")) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        (None, None) => return Err("must start with https://".into()),
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return Err(
            "must be a scheme and host (and port) only, like https://api.stripe.com".into(),
        );
    }
    if !secure && !loopback(rest) {
        return Err(
            "http:// only to a loopback address (127.0.0.1, [::1], localhost); use https://".into(),
        );
    }
    Ok(base)
}

/// Whether `authority` (`host[:port]`) names this machine.
fn loopback(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::checked_base;

    #[test]
    fn an_api_base_is_https_or_a_loopback_http() {
        for good in [
            "https://api.stripe.com",
            "https://api.stripe.com/",
            "http://127.0.0.1:8420",
            "http://[::1]:8420",
            "http://localhost:8420",
        ] {
            assert!(checked_base(good).is_ok(), "{good}");
        }
        for bad in [
            "http://api.stripe.com",
            "http://10.0.0.1:8420",
            "ftp://api.stripe.com",
            "https://api.stripe.com/v1",
            "https://user:pw@api.stripe.com",
            "https://",
            "api.stripe.com",
            "http://127.0.0.1.example.com",
        ] {
            assert!(checked_base(bad).is_err(), "{bad}");
        }
    }
}
