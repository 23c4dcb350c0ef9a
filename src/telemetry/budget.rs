//! A log budget for lines an attacker can cause: per kind of line and key
//! (a source, a reason), the first few each minute are logged, the rest only
//! counted, and a periodic summary says how many were not logged ("1204
//! failed verifications for source stripe in the last minute, 10 logged").
//! Metrics count every occurrence regardless; this bounds only the log.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Keys tracked at once; a flood of new keys shares one overflow tally.
const MAX_KEYS: usize = 1_000;

#[derive(Debug)]
pub struct LogBudget {
    per_window: u32,
    tallies: Mutex<HashMap<(&'static str, String), Tally>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    logged: u32,
    suppressed: u64,
}

/// What one summary line reports: occurrences of `what` for `key` in the
/// window that were counted but not logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    pub what: &'static str,
    pub key: String,
    pub logged: u32,
    pub suppressed: u64,
}

impl Overflow {
    /// `1204 failed verifications for source stripe in the last minute (10
    /// logged)`.
    pub fn describe(&self, window: &str) -> String {
        let total = self.suppressed + u64::from(self.logged);
        let key = if self.key.is_empty() {
            String::new()
        } else {
            format!(" {}", self.key)
        };
        format!(
            "{total} {}{key} in the last {window} ({} logged)",
            self.what, self.logged
        )
    }
}

impl LogBudget {
    /// Allows `per_window` lines per (what, key) between two summaries.
    pub fn new(per_window: u32) -> Self {
        Self {
            per_window,
            tallies: Mutex::new(HashMap::new()),
        }
    }

    /// Whether this occurrence of `what` for `key` may be logged; if not it
    /// is counted for the next summary.
    pub fn admit(&self, what: &'static str, key: &str) -> bool {
        let mut tallies = self.lock();
        let slot = (what, key.to_owned());
        let slot = if tallies.contains_key(&slot) || tallies.len() < MAX_KEYS {
            slot
        } else {
            (what, "(other keys)".to_owned())
        };
        let per_window = self.per_window;
        let tally = tallies.entry(slot).or_default();
        if tally.logged < per_window {
            tally.logged += 1;
            true
        } else {
            tally.suppressed += 1;
            false
        }
    }

    /// Starts a new window; returns what the last one did not log.
    pub fn roll(&self) -> Vec<Overflow> {
        let tallies = std::mem::take(&mut *self.lock());
        let mut overflows: Vec<Overflow> = tallies
            .into_iter()
            .filter(|(_, t)| t.suppressed > 0)
            .map(|((what, key), t)| Overflow {
                what,
                key,
                logged: t.logged,
                suppressed: t.suppressed,
            })
            .collect();
        overflows.sort_by(|a, b| (a.what, &a.key).cmp(&(b.what, &b.key)));
        overflows
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(&'static str, String), Tally>> {
        // Each update is one entry's counters: still valid after a panic.
        self.tallies.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_lines_per_key_are_logged_and_the_rest_summarised() {
        let budget = LogBudget::new(3);
        let admitted = (0..1204)
            .filter(|_| budget.admit("failed verifications", "for source stripe"))
            .count();
        assert_eq!(admitted, 3);
        assert!(budget.admit("failed verifications", "for source demo"));
        let overflows = budget.roll();
        assert_eq!(
            overflows,
            [Overflow {
                what: "failed verifications",
                key: "for source stripe".into(),
                logged: 3,
                suppressed: 1201,
            }]
        );
        assert_eq!(
            overflows[0].describe("minute"),
            "1204 failed verifications for source stripe in the last minute (3 logged)"
        );
        assert!(
            budget.admit("failed verifications", "for source stripe"),
            "a new window logs again"
        );
        assert!(budget.roll().is_empty(), "nothing suppressed, no summary");
    }

    #[test]
    fn a_flood_of_new_keys_shares_one_tally() {
        let budget = LogBudget::new(1);
        for n in 0..MAX_KEYS + 500 {
            budget.admit("malformed requests", &n.to_string());
        }
        let overflows = budget.roll();
        assert_eq!(overflows.len(), 1);
        assert_eq!(overflows[0].key, "(other keys)");
        assert_eq!(overflows[0].logged + overflows[0].suppressed as u32, 500);
    }
}
