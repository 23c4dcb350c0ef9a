//! Per source, for the dashboard: the last verified delivery, today's
//! deliveries and failed verifications (UTC day), which configured secret
//! verified the latest (its position, never the secret), and the median
//! skew of the latest signed timestamps. In memory, per instance, bounded by
//! the configured sources.

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

/// Signed timestamps whose skew the median is taken over.
const SKEWS: usize = 101;

#[derive(Debug, Clone, Default)]
struct Tally {
    last_delivery: Option<DateTime<Utc>>,
    day: Option<NaiveDate>,
    delivered_today: u64,
    failed_today: u64,
    latest_key: Option<usize>,
    skews: VecDeque<i64>,
}

impl Tally {
    /// Starts a new day's counts when `at` is on another day.
    fn on(&mut self, at: DateTime<Utc>) {
        let day = at.date_naive();
        if self.day != Some(day) {
            self.day = Some(day);
            self.delivered_today = 0;
            self.failed_today = 0;
        }
    }
}

/// What the dashboard shows for one source.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SourceFigures {
    pub source: String,
    pub last_delivery: Option<DateTime<Utc>>,
    pub delivered_today: u64,
    pub failed_today: u64,
    /// The index of the key that verified the latest delivery (the source
    /// maps it to its configured secret's position).
    pub latest_key: Option<usize>,
    /// Median of (received - signed) over the latest signed timestamps, in
    /// seconds; positive: the sender's clock is behind or the delivery took
    /// that long.
    pub median_skew_secs: Option<i64>,
}

#[derive(Debug, Default)]
pub struct SourceStats {
    tallies: BTreeMap<String, Tally>,
}

impl SourceStats {
    /// A verified delivery, by the key at `key_index`, signed at
    /// `signed_at` (Unix seconds) when the scheme signs a time.
    pub fn verified(
        &mut self,
        source: &str,
        at: DateTime<Utc>,
        key_index: usize,
        signed_at: Option<i64>,
    ) {
        let tally = self.tallies.entry(source.to_owned()).or_default();
        tally.on(at);
        tally.delivered_today += 1;
        tally.last_delivery = Some(at);
        tally.latest_key = Some(key_index);
        if let Some(signed) = signed_at {
            if tally.skews.len() == SKEWS {
                tally.skews.pop_front();
            }
            tally.skews.push_back(at.timestamp().saturating_sub(signed));
        }
    }

    pub fn failed(&mut self, source: &str, at: DateTime<Utc>) {
        let tally = self.tallies.entry(source.to_owned()).or_default();
        tally.on(at);
        tally.failed_today += 1;
    }

    /// The figures of `sources` (configured names, in that order) as of
    /// `now`: a source with nothing today shows zeros.
    pub fn figures(&self, sources: &[&str], now: DateTime<Utc>) -> Vec<SourceFigures> {
        sources
            .iter()
            .map(|source| {
                let tally = self.tallies.get(*source).cloned().unwrap_or_default();
                let today = tally.day == Some(now.date_naive());
                let mut skews: Vec<i64> = tally.skews.iter().copied().collect();
                skews.sort_unstable();
                SourceFigures {
                    source: (*source).to_owned(),
                    last_delivery: tally.last_delivery,
                    delivered_today: if today { tally.delivered_today } else { 0 },
                    failed_today: if today { tally.failed_today } else { 0 },
                    latest_key: tally.latest_key,
                    median_skew_secs: skews.get(skews.len() / 2).copied(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn a_source_day_and_skews_are_tallied() {
        let mut stats = SourceStats::default();
        let now = at(0);
        for (skew, key) in [(3, 0), (1, 0), (40, 1)] {
            stats.verified("stripe", now, key, Some(now.timestamp() - skew));
        }
        stats.failed("stripe", now);
        stats.verified("paddle", now, 0, None);
        let figures = stats.figures(&["stripe", "paddle", "quiet"], now);
        assert_eq!(figures[0].delivered_today, 3);
        assert_eq!(figures[0].failed_today, 1);
        assert_eq!(figures[0].latest_key, Some(1));
        assert_eq!(figures[0].median_skew_secs, Some(3));
        assert_eq!(figures[1].median_skew_secs, None);
        assert_eq!(figures[2].last_delivery, None);
        // The next UTC day starts from zero; the last delivery stays.
        let tomorrow = figures_on(&stats, at(86_400));
        assert_eq!((tomorrow.delivered_today, tomorrow.failed_today), (0, 0));
        assert_eq!(tomorrow.last_delivery, Some(now));
    }

    fn figures_on(stats: &SourceStats, now: DateTime<Utc>) -> SourceFigures {
        stats.figures(&["stripe"], now).remove(0)
    }
}
