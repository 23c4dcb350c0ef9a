//! Deliveries per minute over the last 24 hours, by outcome, for the
//! dashboard's chart and its hour and day counts. In memory, per instance
//! since start: 1,440 one-minute slots reused as the day turns, so it never
//! grows.

use chrono::{DateTime, Utc};

/// The chart's outcomes, in stacking order.
pub const OUTCOMES: [&str; 7] = [
    "applied",
    "duplicate",
    "held",
    "ignored",
    "rejected",
    "verification_failed",
    "other",
];

const MINUTES: usize = 24 * 60;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Minutes since the epoch this slot counts; another minute's counts
    /// are stale.
    minute: i64,
    counts: [u32; OUTCOMES.len()],
}

#[derive(Debug)]
pub struct Timeline {
    slots: Vec<Slot>,
}

impl Default for Timeline {
    fn default() -> Self {
        Self {
            slots: vec![Slot::default(); MINUTES],
        }
    }
}

/// Which chart outcome a delivery outcome or status is.
pub fn outcome_of(label: &str) -> usize {
    let name = match label {
        "stale" | "waiting" | "unmatched" => "held",
        "dismissed" | "duplicate_effect" => "other",
        other => other,
    };
    OUTCOMES
        .iter()
        .position(|o| *o == name)
        .unwrap_or(OUTCOMES.len() - 1)
}

impl Timeline {
    pub fn record(&mut self, at: DateTime<Utc>, outcome: usize) {
        let minute = at.timestamp().div_euclid(60);
        let slot = &mut self.slots[minute.rem_euclid(MINUTES as i64) as usize];
        if slot.minute != minute {
            *slot = Slot {
                minute,
                ..Slot::default()
            };
        }
        slot.counts[outcome] = slot.counts[outcome].saturating_add(1);
    }

    /// Counts per outcome for each of the `minutes` minutes ending with
    /// `now`'s, oldest first.
    pub fn last(&self, now: DateTime<Utc>, minutes: usize) -> Vec<[u32; OUTCOMES.len()]> {
        let current = now.timestamp().div_euclid(60);
        (0..minutes.min(MINUTES) as i64)
            .rev()
            .map(|back| {
                let minute = current - back;
                let slot = &self.slots[minute.rem_euclid(MINUTES as i64) as usize];
                if slot.minute == minute {
                    slot.counts
                } else {
                    [0; OUTCOMES.len()]
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000 + minute * 60, 0).unwrap()
    }

    #[test]
    fn minutes_are_counted_and_a_day_later_forgotten() {
        let mut timeline = Timeline::default();
        timeline.record(at(0), outcome_of("applied"));
        timeline.record(at(0), outcome_of("stale"));
        timeline.record(at(5), outcome_of("verification_failed"));
        let last = timeline.last(at(5), 6);
        assert_eq!(last.len(), 6);
        assert_eq!(last[0][0], 1, "applied, 5 minutes ago");
        assert_eq!(last[0][2], 1, "stale counts as held");
        assert_eq!(last[5][5], 1);
        // The same slot a day later starts again.
        timeline.record(at(MINUTES as i64), outcome_of("duplicate"));
        let day_later = timeline.last(at(MINUTES as i64), 1);
        assert_eq!(day_later[0], [0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(
            timeline.last(at(MINUTES as i64 + 5), MINUTES)[MINUTES - 6][0],
            0
        );
    }
}
