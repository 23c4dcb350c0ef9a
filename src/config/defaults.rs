//! The defaults and allowed ranges of the config's numeric keys, in one
//! place: the build reads them (what runs) and the raw types' JSON Schema
//! attributes name them (what an editor shows), so the two cannot differ.

use std::ops::RangeInclusive;

/// A numeric key's default and the values it may take (inclusive).
#[derive(Debug, Clone, Copy)]
pub struct Knob {
    pub default: u64,
    pub min: u64,
    pub max: u64,
}

impl Knob {
    pub const fn range(&self) -> RangeInclusive<u64> {
        self.min..=self.max
    }
}

const DAY_SECS: u64 = 86_400;

pub const MAX_BODY_BYTES: Knob = Knob {
    default: 256 * 1024,
    min: 1,
    max: 64 * 1024 * 1024,
};
pub const RELEASE_SWEEP_SECS: Knob = Knob {
    default: 10,
    min: 1,
    max: DAY_SECS,
};
pub const SHUTDOWN_TIMEOUT_SECS: Knob = Knob {
    default: 25,
    min: 1,
    max: 3600,
};
/// Long enough for a load balancer that probes every 2 s and takes two
/// failures (haproxy's defaults, `deploy/haproxy/haproxy.cfg`) to stop
/// sending; Kubernetes' default probe needs `drain_secs` of 10 or more.
pub const DRAIN_SECS: Knob = Knob {
    default: 5,
    min: 0,
    max: 3600,
};

pub const RETENTION_PAYLOAD_DAYS: Knob = Knob {
    default: 90,
    min: 0,
    max: 36_500,
};
pub const RETENTION_OUTBOX_DAYS: Knob = Knob {
    default: 7,
    min: 0,
    max: 36_500,
};
pub const RETENTION_PURGE_INTERVAL_SECS: Knob = Knob {
    default: 3600,
    min: 1,
    max: DAY_SECS,
};

pub const ANCHORS_INTERVAL_SECS: Knob = Knob {
    default: 3600,
    min: 60,
    max: DAY_SECS,
};

pub const DATABASE_MAX_CONNECTIONS: Knob = Knob {
    default: 10,
    min: 1,
    max: 1000,
};
/// Seconds; a value below 1 is taken as 1.
pub const DATABASE_ACQUIRE_TIMEOUT_SECS: u64 = 5;
pub const DATABASE_BUSY_TIMEOUT_MS: u64 = 5000;
pub const DATABASE_STATEMENT_TIMEOUT_MS: u64 = 15_000;

/// A source's ordering keys; their defaults are `OrderingPolicy`'s.
/// Contiguous streams number from at most here; the bound keeps `first - 1`
/// and every guard arithmetic far from overflow.
pub const MAX_FIRST_SEQUENCE: i64 = 1 << 53;
pub const MAX_RELEASE_BATCH: u64 = 10_000;
pub const MAX_GAP_TIMEOUT_SECS: u64 = 30 * DAY_SECS;

/// Seconds; a value below 60 is taken as 60.
pub const ADMIN_SESSION_TTL_SECS: u64 = 12 * 3600;

pub const LIMITS_READ_TIMEOUT_SECS: Knob = Knob {
    default: 5,
    min: 1,
    max: 300,
};
pub const LIMITS_MAX_CONNECTIONS: Knob = Knob {
    default: 1024,
    min: 1,
    max: 1_000_000,
};
/// At most half of `limits.max_connections` (the build checks the pair).
pub const LIMITS_MAX_CONNECTIONS_PER_ADDRESS: Knob = Knob {
    default: 64,
    min: 0,
    max: 1_000_000,
};
pub const LIMITS_LOG_SUMMARY_SECS: Knob = Knob {
    default: 60,
    min: 1,
    max: DAY_SECS,
};

/// `0` runs reconcile only on demand.
pub const RECONCILE_INTERVAL_SECS: u64 = 600;
/// Stripe's retries last 3 days; the upper bound is the provider's window.
pub const RECONCILE_LOOKBACK_SECS: Knob = Knob {
    default: 3 * DAY_SECS,
    min: 60,
    max: 90 * DAY_SECS,
};
/// No default: the kind's own pacing (a tenth of its documented limit).
pub const RECONCILE_REQUEST_GAP_MS: RangeInclusive<u64> = 1..=60_000;

pub const DESTINATION_MAX_ATTEMPTS: Knob = Knob {
    default: 25,
    min: 1,
    max: 1000,
};
pub const DESTINATION_TIMEOUT_SECS: Knob = Knob {
    default: 10,
    min: 1,
    max: 300,
};
