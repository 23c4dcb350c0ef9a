//! A source's ordering keys -> a validated [`OrderingPolicy`].

use super::ConfigError;
use super::defaults::{MAX_FIRST_SEQUENCE, MAX_GAP_TIMEOUT_SECS, MAX_RELEASE_BATCH};
use super::raw::{RawOnStale, RawSource};
use crate::domain::{OnStale, OrderingMode, OrderingPolicy};
use crate::providers::Provider;

pub fn policy(
    raw: &RawSource,
    provider: &dyn Provider,
    key: &str,
) -> Result<OrderingPolicy, ConfigError> {
    let defaults = OrderingPolicy::default();
    let mode = raw.ordering.unwrap_or(defaults.mode);
    if mode == OrderingMode::Contiguous && !provider.carries_sequence() {
        return Err(ConfigError::new(
            format!("{key}.ordering"),
            format!(
                "contiguous ordering needs the sender's own sequence number in every event, \
                 and kind {} carries none (only an event time); use high-water",
                provider.kind()
            ),
        ));
    }
    let on_stale = match raw.on_stale {
        None => defaults.on_stale,
        Some(RawOnStale::Both(action)) => OnStale::both(action),
        Some(RawOnStale::PerEffect(table)) => OnStale {
            credit: table.credit.unwrap_or(defaults.on_stale.credit),
            debit: table.debit.unwrap_or(defaults.on_stale.debit),
        },
    };
    let first_sequence = raw.first_sequence.unwrap_or(defaults.first_sequence);
    if !(0..=MAX_FIRST_SEQUENCE).contains(&first_sequence) {
        return Err(ConfigError::new(
            format!("{key}.first_sequence"),
            format!("must be between 0 and {MAX_FIRST_SEQUENCE}"),
        ));
    }
    let gap_timeout_secs = raw.gap_timeout_secs.unwrap_or(defaults.gap_timeout_secs);
    if !(1..=MAX_GAP_TIMEOUT_SECS).contains(&gap_timeout_secs) {
        return Err(ConfigError::new(
            format!("{key}.gap_timeout_secs"),
            format!("must be between 1 and {MAX_GAP_TIMEOUT_SECS}"),
        ));
    }
    let release_batch = raw
        .release_batch
        .unwrap_or(u64::from(defaults.release_batch));
    if !(1..=MAX_RELEASE_BATCH).contains(&release_batch) {
        return Err(ConfigError::new(
            format!("{key}.release_batch"),
            format!("must be between 1 and {MAX_RELEASE_BATCH}"),
        ));
    }
    Ok(OrderingPolicy {
        mode,
        on_stale,
        first_sequence,
        gap_timeout_secs,
        release_batch: release_batch as u32,
    })
}
