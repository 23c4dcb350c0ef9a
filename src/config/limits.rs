//! `[limits]`: what one client of the public endpoint may hold. Defaults
//! suit a 2-core instance facing the internet directly; behind a proxy that
//! terminates connections, per-address bounds belong to the proxy.

use std::time::Duration;

use super::ConfigError;
use super::raw::RawLimits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request head must arrive within this of the connection opening (or
    /// of the previous answer), and its body within this of the head.
    pub read_timeout: Duration,
    /// Open connections in all; the excess is closed as it is accepted.
    pub max_connections: usize,
    /// Open connections per client address (an IPv6 client by its /64);
    /// `None` means no per-address bound.
    pub max_connections_per_address: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            read_timeout: Duration::from_secs(5),
            max_connections: 1024,
            max_connections_per_address: Some(64),
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
    let read_timeout = within("read_timeout_secs", raw.read_timeout_secs, 1..=300)?
        .map_or(default.read_timeout, Duration::from_secs);
    let max_connections = within("max_connections", raw.max_connections, 1..=1_000_000)?
        .map_or(default.max_connections, |n| n as usize);
    let max_connections_per_address = match within(
        "max_connections_per_address",
        raw.max_connections_per_address,
        0..=1_000_000,
    )? {
        None => default.max_connections_per_address,
        Some(0) => None,
        Some(n) => Some(n as usize),
    };
    Ok(Limits {
        read_timeout,
        max_connections,
        max_connections_per_address,
    })
}
