//! `[limits]`: what one client of the public endpoint may hold. Defaults
//! suit a 2-core instance facing the internet directly; behind a proxy that
//! terminates connections, per-address bounds belong to the proxy.

use std::time::Duration;

use super::raw::RawLimits;
use super::{ConfigError, defaults};
use crate::net::{Cidr, TrustedProxies};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// A request head must arrive within this of the connection opening (or
    /// of the previous answer), and its body within this of the head.
    pub read_timeout: Duration,
    /// Open connections in all; the excess is closed as it is accepted.
    pub max_connections: usize,
    /// Open connections per client address (an IPv6 client by its /64);
    /// `None` means no per-address bound.
    pub max_connections_per_address: Option<usize>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (for the
    /// sign-in throttle and logs; the connection bounds see only peers).
    pub trusted_proxies: TrustedProxies,
    /// Failures any client can cause (bad signatures, malformed requests,
    /// wrong admin tokens) are logged at most a few times per kind in this
    /// window, then summarised.
    pub log_summary: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            read_timeout: Duration::from_secs(defaults::LIMITS_READ_TIMEOUT_SECS.default),
            max_connections: defaults::LIMITS_MAX_CONNECTIONS.default as usize,
            max_connections_per_address: Some(
                defaults::LIMITS_MAX_CONNECTIONS_PER_ADDRESS.default as usize,
            ),
            trusted_proxies: TrustedProxies::default(),
            log_summary: Duration::from_secs(defaults::LIMITS_LOG_SUMMARY_SECS.default),
        }
    }
}

fn within(
    key: &str,
    value: Option<u64>,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>, ConfigError> {
    match value {
        Some(v) if !range.contains(&v) => Err(ConfigError::new(
            format!("limits.{key}"),
            format!("must be between {} and {}", range.start(), range.end()),
        )),
        other => Ok(other),
    }
}

pub(super) fn build(raw: &RawLimits) -> Result<Limits, ConfigError> {
    let default = Limits::default();
    let read_timeout = within(
        "read_timeout_secs",
        raw.read_timeout_secs,
        defaults::LIMITS_READ_TIMEOUT_SECS.range(),
    )?
    .map_or(default.read_timeout, Duration::from_secs);
    let max_connections = within(
        "max_connections",
        raw.max_connections,
        defaults::LIMITS_MAX_CONNECTIONS.range(),
    )?
    .map_or(default.max_connections, |n| n as usize);
    let half = (max_connections / 2).max(1);
    let max_connections_per_address = match within(
        "max_connections_per_address",
        raw.max_connections_per_address,
        defaults::LIMITS_MAX_CONNECTIONS_PER_ADDRESS.range(),
    )? {
        // The default share never exceeds half of a smaller instance.
        None => default.max_connections_per_address.map(|n| n.min(half)),
        Some(0) => None,
        // The gate's promise (no address holds more than half the places
        // while others need them) needs the share to be at most half.
        Some(n) if n as usize > half => {
            return Err(ConfigError::new(
                "limits.max_connections_per_address",
                format!(
                    "must be at most half of limits.max_connections ({half}), or 0 for no \
                     per-address bound"
                ),
            ));
        }
        Some(n) => Some(n as usize),
    };
    let trusted_proxies = raw
        .trusted_proxies
        .iter()
        .map(|range| Cidr::parse(range))
        .collect::<Result<Vec<_>, _>>()
        .map(TrustedProxies)
        .map_err(|e| ConfigError::new("limits.trusted_proxies", e))?;
    let log_summary = within(
        "log_summary_secs",
        raw.log_summary_secs,
        defaults::LIMITS_LOG_SUMMARY_SECS.range(),
    )?
    .map_or(default.log_summary, Duration::from_secs);
    Ok(Limits {
        read_timeout,
        max_connections,
        max_connections_per_address,
        trusted_proxies,
        log_summary,
    })
}
