//! The most recent verification failures per source, for the admin's
//! "why are my webhooks failing?". Kept in memory, at most
//! [`PER_SOURCE`] per configured source (the oldest evicted), so no client
//! can make it grow or make the database write: a failure costs one
//! SHA-256 of a body already read and one push under a lock. Never a body,
//! a header value or a secret; only header names, sizes, hashes and the
//! reason. Per instance and since start (the metrics count every failure
//! across instances).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;

use crate::providers::VerifyError;

/// Failures kept per source.
pub const PER_SOURCE: usize = 1_000;
/// Header names kept per failure, and characters per name: enough to see
/// which signature header was sent, bounded whatever a client sends.
const NAMES: usize = 32;
const NAME_CHARS: usize = 64;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Failure {
    pub at: DateTime<Utc>,
    /// The stable code (`signature_mismatch`, ...).
    pub code: &'static str,
    /// What a person reads: "no signature matched any of the 2 configured
    /// secret(s)".
    pub reason: String,
    /// The header names present, lowercase, sorted.
    pub headers: Vec<String>,
    pub body_bytes: usize,
    pub body_sha256: String,
    /// For a timestamp outside the tolerance: the signed time, and how far
    /// it was from now (positive: in the past).
    pub signed_at: Option<DateTime<Utc>>,
    pub skew_secs: Option<i64>,
}

impl Failure {
    pub fn new(
        at: DateTime<Utc>,
        error: &VerifyError,
        mut headers: Vec<String>,
        body_bytes: usize,
        body_sha256: String,
    ) -> Self {
        // Names a signature scheme uses first, so a proxy that adds many
        // headers never pushes the one that matters out of the record.
        headers.sort_by_key(|name| (!signature_like(name), name.clone()));
        headers.dedup();
        headers.truncate(NAMES);
        for name in &mut headers {
            if let Some((cut, _)) = name.char_indices().nth(NAME_CHARS) {
                name.truncate(cut);
            }
        }
        let skew_secs = match error {
            VerifyError::OutsideTolerance { skew_secs, .. } => Some(*skew_secs),
            _ => None,
        };
        Self {
            at,
            code: error.code(),
            reason: error.to_string(),
            headers,
            body_bytes,
            body_sha256,
            signed_at: skew_secs
                .and_then(TimeDelta::try_seconds)
                .and_then(|skew| at.checked_sub_signed(skew)),
            skew_secs,
        }
    }
}

/// Whether a header name looks like part of a signature scheme (every
/// kind's signature, timestamp and id headers do).
fn signature_like(name: &str) -> bool {
    [
        "sig",
        "webhook",
        "timestamp",
        "hmac",
        "auth",
        "-id",
        "token",
    ]
    .iter()
    .any(|part| name.contains(part))
}

#[derive(Debug, Default)]
pub struct VerificationFailures {
    by_source: Mutex<BTreeMap<String, VecDeque<Failure>>>,
}

impl VerificationFailures {
    /// Keeps `failure` for `source` (a configured source's name), evicting
    /// that source's oldest beyond [`PER_SOURCE`].
    pub fn record(&self, source: &str, failure: Failure) {
        let mut by_source = self.lock();
        let kept = by_source.entry(source.to_owned()).or_default();
        if kept.len() == PER_SOURCE {
            kept.pop_front();
        }
        kept.push_back(failure);
    }

    /// A source's failures, newest first, at most `limit`.
    pub fn recent(&self, source: &str, limit: usize) -> Vec<Failure> {
        self.lock()
            .get(source)
            .map(|kept| kept.iter().rev().take(limit).cloned().collect())
            .unwrap_or_default()
    }

    /// Per source with failures: how many are kept, and the latest.
    pub fn summary(&self) -> Vec<(String, usize, Failure)> {
        self.lock()
            .iter()
            .filter_map(|(source, kept)| {
                kept.back()
                    .map(|latest| (source.clone(), kept.len(), latest.clone()))
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, VecDeque<Failure>>> {
        // A panic while holding the lock leaves records that are still valid.
        self.by_source.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(n: usize) -> Failure {
        Failure::new(
            DateTime::from_timestamp(1_700_000_000 + n as i64, 0).unwrap(),
            &VerifyError::NoMatch { keys: 2 },
            vec!["webhook-signature".into(), "content-type".into()],
            n,
            String::new(),
        )
    }

    #[test]
    fn a_source_keeps_its_newest_thousand() {
        let failures = VerificationFailures::default();
        for n in 0..PER_SOURCE + 5 {
            failures.record("demo", failure(n));
        }
        failures.record("stripe", failure(7));
        let kept = failures.recent("demo", usize::MAX);
        assert_eq!(kept.len(), PER_SOURCE);
        assert_eq!(kept[0].body_bytes, PER_SOURCE + 4, "newest first");
        assert_eq!(kept[PER_SOURCE - 1].body_bytes, 5, "the oldest five went");
        assert_eq!(failures.recent("stripe", 10).len(), 1);
        assert!(failures.recent("other", 10).is_empty());
    }

    #[test]
    fn header_names_are_sorted_and_bounded() {
        let names: Vec<String> = (0..100)
            .map(|n| format!("x-{n:03}-{}", "a".repeat(90)))
            .collect();
        let failure = Failure::new(
            Utc::now(),
            &VerifyError::OutsideTolerance {
                skew_secs: 412,
                tolerance_secs: 300,
            },
            names,
            10,
            String::new(),
        );
        assert_eq!(failure.headers.len(), NAMES);
        assert!(
            failure
                .headers
                .iter()
                .all(|n| n.chars().count() == NAME_CHARS)
        );
        assert!(failure.headers[0].starts_with("x-000-"));
        assert_eq!(failure.skew_secs, Some(412));
        assert_eq!(
            failure.at - failure.signed_at.unwrap(),
            TimeDelta::seconds(412)
        );
        assert_eq!(failure.code, "timestamp_outside_tolerance");
    }
}
