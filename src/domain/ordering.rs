//! Ordering policy per source, and the pure decisions it makes. The
//! transaction in `ingest` asks these functions what to do; they never touch
//! the database.
//!
//! - `high-water`: the guard is the highest sequence applied per (source,
//!   account). An event below it is *late*; `on_stale` says, per effect,
//!   whether a late event is applied anyway or held for an operator.
//! - `contiguous`: the sender numbers each account's events first_sequence,
//!   first_sequence + 1, ... without gaps; the guard is the last number
//!   applied. The next number applies, a later one is parked until its
//!   predecessors arrive, an earlier one is late.

use std::fmt;
use std::ops::RangeInclusive;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Direction;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OrderingMode {
    /// Each event applies at once; one older than the newest applied is
    /// late (`on_stale` says what happens to it).
    HighWater,
    /// The sender numbers its events: they apply in exactly that order,
    /// a gap waits.
    Contiguous,
}

impl OrderingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderingMode::HighWater => "high-water",
            OrderingMode::Contiguous => "contiguous",
        }
    }
}

/// What happens to a debit that would take a balance below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NegativeBalance {
    /// Held as `stale`, with the balance it would leave, for an operator.
    Hold,
    /// Applied: the balance goes below zero.
    Allow,
}

impl NegativeBalance {
    pub fn as_str(self) -> &'static str {
        match self {
            NegativeBalance::Hold => "hold",
            NegativeBalance::Allow => "allow",
        }
    }
}

/// What happens to a late event of one effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StaleAction {
    /// Held as `stale` for an operator.
    Hold,
    /// Applied anyway; the guard stays where it is.
    Apply,
}

/// `on_stale`, per effect. Credits are deltas whose order never changes a
/// sum, so a late one applies by default; a late debit may overdraw what a
/// newer event already relied on, so it waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnStale {
    pub credit: StaleAction,
    pub debit: StaleAction,
}

impl Default for OnStale {
    fn default() -> Self {
        Self {
            credit: StaleAction::Apply,
            debit: StaleAction::Hold,
        }
    }
}

impl OnStale {
    /// The same action for both effects (the core's `on_stale = "hold"`).
    pub fn both(action: StaleAction) -> Self {
        Self {
            credit: action,
            debit: action,
        }
    }

    pub fn for_direction(&self, direction: Direction) -> StaleAction {
        match direction {
            Direction::Credit => self.credit,
            Direction::Debit => self.debit,
        }
    }
}

/// A source's whole ordering policy, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderingPolicy {
    pub mode: OrderingMode,
    pub on_stale: OnStale,
    /// Contiguous: the number of each account's first event.
    pub first_sequence: i64,
    /// Contiguous: a gap open longer than this is shown in the held queue.
    pub gap_timeout_secs: u64,
    /// Contiguous: at most this many parked events are applied per
    /// transaction; a longer backlog drains in later transactions.
    pub release_batch: u32,
}

/// A sequence as a person reads it in a reason: the sender's own number as
/// it is; a time the kind fell back to (a signed timestamp, Stripe's
/// `created`) with the time it stands for, `1795523400 (2026-11-24
/// 12:30:00 UTC)`. Kinds write such times in seconds or, for sub-second
/// order, microseconds; every time since 1970-04-27 in microseconds is
/// beyond any in seconds before the year 9999, which tells them apart.
pub fn sequence_text(sequence: i64, explicit: bool) -> String {
    const MICROS_FROM: i64 = 10_000_000_000_000;
    if explicit {
        return sequence.to_string();
    }
    let time = if sequence.unsigned_abs() >= MICROS_FROM as u64 {
        chrono::DateTime::from_timestamp_micros(sequence)
    } else {
        chrono::DateTime::from_timestamp(sequence, 0)
    };
    match time {
        Some(time) => format!("{sequence} ({})", time.format("%Y-%m-%d %H:%M:%S%.f UTC")),
        None => sequence.to_string(),
    }
}

pub const DEFAULT_GAP_TIMEOUT_SECS: u64 = 3600;
pub const DEFAULT_RELEASE_BATCH: u32 = 500;

impl Default for OrderingPolicy {
    fn default() -> Self {
        Self {
            mode: OrderingMode::HighWater,
            on_stale: OnStale::default(),
            first_sequence: 1,
            gap_timeout_secs: DEFAULT_GAP_TIMEOUT_SECS,
            release_batch: DEFAULT_RELEASE_BATCH,
        }
    }
}

impl OrderingPolicy {
    /// The guard of an account that has seen nothing yet: one below the
    /// first number, so the first number is the next expected.
    pub fn initial_guard(&self) -> i64 {
        self.first_sequence - 1
    }
}

/// Where a sequence number stands against a contiguous guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// guard + 1: apply now, then release what was parked behind it.
    Next,
    /// Beyond the next expected: park until the gap closes.
    Ahead,
    /// At or below the guard: already used, skipped, or late.
    Behind,
}

pub fn contiguous_slot(guard: i64, sequence: i64) -> Slot {
    match guard.checked_add(1) {
        Some(next) if sequence == next => Slot::Next,
        Some(next) if sequence > next => Slot::Ahead,
        _ => Slot::Behind,
    }
}

/// The numbers missing between `guard` and the parked sequences (ascending):
/// the gaps a contiguous stream waits on, at most `limit` ranges.
pub fn missing_ranges(guard: i64, parked: &[i64], limit: usize) -> Vec<RangeInclusive<i64>> {
    let mut ranges = Vec::new();
    let mut expected = guard.saturating_add(1);
    for &sequence in parked {
        if ranges.len() == limit {
            break;
        }
        if sequence > expected {
            ranges.push(expected..=sequence - 1);
        }
        expected = expected.max(sequence.saturating_add(1));
    }
    ranges
}

/// Sequence ranges as people write them: `4, 7-9`.
pub struct Ranges<'a>(pub &'a [RangeInclusive<i64>]);

impl fmt::Display for Ranges<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, range) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if range.start() == range.end() {
                write!(f, "{}", range.start())?;
            } else {
                write!(f, "{}-{}", range.start(), range.end())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_sequences_read_as_times() {
        assert_eq!(sequence_text(7, true), "7");
        assert_eq!(
            sequence_text(1_795_523_400, false),
            "1795523400 (2026-11-24 12:30:00 UTC)"
        );
        assert_eq!(
            sequence_text(1_712_917_129_621_022, false),
            "1712917129621022 (2024-04-12 10:18:49.621022 UTC)"
        );
        assert_eq!(sequence_text(i64::MAX, false), i64::MAX.to_string());
    }

    #[test]
    fn slots_follow_the_guard() {
        assert_eq!(contiguous_slot(3, 4), Slot::Next);
        assert_eq!(contiguous_slot(3, 5), Slot::Ahead);
        assert_eq!(contiguous_slot(3, 3), Slot::Behind);
        assert_eq!(contiguous_slot(3, -7), Slot::Behind);
        assert_eq!(contiguous_slot(i64::MAX, i64::MAX), Slot::Behind);
        assert_eq!(contiguous_slot(0, 1), Slot::Next);
    }

    #[test]
    fn missing_ranges_list_every_gap_in_order() {
        assert_eq!(missing_ranges(3, &[5, 6, 9], 10), vec![4..=4, 7..=8]);
        assert_eq!(missing_ranges(3, &[4, 5], 10), vec![]);
        assert_eq!(missing_ranges(0, &[], 10), vec![]);
        assert_eq!(missing_ranges(0, &[3, 6, 9], 2), vec![1..=2, 4..=5]);
        assert_eq!(
            missing_ranges(i64::MAX - 2, &[i64::MAX], 10),
            vec![i64::MAX - 1..=i64::MAX - 1]
        );
    }

    #[test]
    fn ranges_print_as_people_write_them() {
        assert_eq!(Ranges(&[4..=4, 7..=9]).to_string(), "4, 7-9");
        assert_eq!(Ranges(&[]).to_string(), "");
    }

    #[test]
    fn late_credits_apply_and_late_debits_wait_by_default() {
        let on_stale = OnStale::default();
        assert_eq!(
            on_stale.for_direction(Direction::Credit),
            StaleAction::Apply
        );
        assert_eq!(on_stale.for_direction(Direction::Debit), StaleAction::Hold);
        assert_eq!(
            OnStale::both(StaleAction::Hold).for_direction(Direction::Credit),
            StaleAction::Hold
        );
    }
}
