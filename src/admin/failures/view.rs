//! A verification failure as the page shows it (its times formatted, its
//! header names joined), grouped by source with how many are kept.

use crate::admin::view::time;
use crate::failures::Failure;

pub struct FailureView {
    pub at: String,
    pub code: &'static str,
    pub reason: String,
    pub headers: String,
    pub body_bytes: usize,
    pub body_sha256: String,
    pub signed_at: String,
}

impl From<Failure> for FailureView {
    fn from(failure: Failure) -> Self {
        Self {
            at: time(failure.at),
            code: failure.code,
            reason: failure.reason,
            headers: failure.headers.join(", "),
            body_bytes: failure.body_bytes,
            body_sha256: failure.body_sha256,
            signed_at: match (failure.signed_at, failure.skew_secs) {
                (Some(at), Some(skew)) => format!("{} ({skew} s skew)", time(at)),
                _ => String::new(),
            },
        }
    }
}

pub struct SourceFailures {
    pub source: String,
    /// Failures kept for the source (at most 1,000).
    pub kept: usize,
    pub failures: Vec<FailureView>,
}
