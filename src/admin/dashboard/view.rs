//! The dashboard's per-source table: when each source last delivered, how
//! many today and how many failed verification, which configured secret
//! (by position) verified the latest, and the median clock skew of its
//! signed timestamps.

use chrono::{DateTime, Utc};

use crate::admin::view::{duration, time};
use crate::context::Context;
use crate::domain::Replication;

pub struct SourceView {
    pub name: String,
    pub kind: &'static str,
    pub last_delivery: String,
    pub delivered_today: u64,
    pub failed_today: u64,
    /// "3.2%" of today's attempts, or "-" with none.
    pub failure_rate: String,
    /// "1 of 2": the configured secret's position, never the secret.
    pub latest_secret: String,
    pub median_skew: String,
}

pub fn sources(context: &Context, now: DateTime<Utc>) -> Vec<SourceView> {
    let mut names: Vec<&str> = context.sources.keys().map(String::as_str).collect();
    names.sort_unstable();
    context
        .metrics
        .source_figures(&names, now)
        .into_iter()
        .filter_map(|figures| {
            let source = context.source(&figures.source)?;
            let attempts = figures.delivered_today + figures.failed_today;
            Some(SourceView {
                kind: source.provider.kind(),
                last_delivery: figures
                    .last_delivery
                    .map(time)
                    .unwrap_or_else(|| "-".into()),
                delivered_today: figures.delivered_today,
                failed_today: figures.failed_today,
                failure_rate: per_mille(figures.failed_today, attempts),
                latest_secret: figures
                    .latest_key
                    .map(|key| {
                        let position = source.secret_position(key) + 1;
                        format!("{position} of {}", source.secret_origins.len().max(1))
                    })
                    .unwrap_or_else(|| "-".into()),
                median_skew: figures
                    .median_skew_secs
                    .map(|s| format!("{s} s"))
                    .unwrap_or_else(|| "-".into()),
                name: figures.source,
            })
        })
        .collect()
}

/// `part` of `whole` as a percentage with one decimal, in integers.
fn per_mille(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    let tenths = (part * 1000 + whole / 2) / whole;
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// The invariant check's latest result for the dashboard: whether the
/// ledger held, and what was said.
pub fn invariants(context: &Context, now: DateTime<Utc>) -> (bool, String) {
    match context.invariants.last() {
        None => (true, "not checked yet since start".into()),
        Some(check) => {
            let ago = duration((now - check.at).num_seconds().max(0));
            match check.outcome {
                Ok(violations) if violations.is_empty() => {
                    (true, format!("every invariant holds (checked {ago} ago)"))
                }
                Ok(violations) => (
                    false,
                    format!(
                        "{} violation(s) found {ago} ago: see /admin/api/check",
                        violations.len()
                    ),
                ),
                Err(error) => (false, format!("the check could not run {ago} ago: {error}")),
            }
        }
    }
}

/// The hash chains' line: whether every chain was whole at the latest
/// walk, and when that was.
pub fn chains(context: &Context, now: DateTime<Utc>) -> (bool, String) {
    let Some(walk) = context.invariants.last_chains() else {
        return (true, "not walked yet since start".into());
    };
    let ago = duration((now - walk.at).num_seconds().max(0));
    match walk.outcome {
        Ok(breaks) if breaks.is_empty() => (
            true,
            format!(
                "every chain whole (walked {ago} ago, {} entries read)",
                walk.entries
            ),
        ),
        Ok(breaks) => (
            false,
            format!(
                "{} chain(s) broken, found {ago} ago: see /admin/api/verify",
                breaks.len()
            ),
        ),
        Err(error) => (false, format!("the walk could not run {ago} ago: {error}")),
    }
}

/// The database line: which database, and on PostgreSQL whether a commit
/// is on a standby before it is answered; false where something is wrong.
pub fn database(replication: Option<Replication>) -> (bool, String) {
    let Some(replication) = replication else {
        return (
            true,
            "SQLite, a file on this host (hookledger backup copies it)".to_owned(),
        );
    };
    let standbys = |n: Option<i64>| match n {
        Some(1) => "1 is streaming".to_owned(),
        Some(n) => format!("{n} are streaming"),
        None => "how many are streaming is hidden from this role (grant it pg_monitor)".to_owned(),
    };
    match replication {
        Replication {
            synchronous: true,
            standbys: Some(0),
        } => (
            false,
            "PostgreSQL; every commit waits for a synchronous standby, and none is streaming: \
             deliveries are answered 503 until one is"
                .to_owned(),
        ),
        Replication {
            synchronous: true,
            standbys: n,
        } => (
            true,
            format!(
                "PostgreSQL; every commit waits for a synchronous standby, and {}",
                standbys(n)
            ),
        ),
        Replication {
            synchronous: false, ..
        } => (
            true,
            "PostgreSQL; commits are not replicated synchronously: a failover to a standby \
             loses the credits it had not received, which only reconcile can find"
                .to_owned(),
        ),
    }
}

/// A reconciling source on the dashboard.
pub struct ReconcileView {
    pub source: String,
    pub every: String,
    pub last_success: String,
    pub last_outcome: String,
    /// The last run stopped.
    pub failing: bool,
    pub recovered: i64,
    /// How long until events missed since the last complete run leave the
    /// provider's records.
    pub window_left: String,
}

pub fn reconcile(states: Vec<crate::reconcile::State>, now: DateTime<Utc>) -> Vec<ReconcileView> {
    states
        .into_iter()
        .map(|state| {
            let run = state.run.as_ref();
            let last_success = run
                .and_then(|run| run.last_success_ms)
                .and_then(DateTime::from_timestamp_millis);
            let retention = chrono::TimeDelta::from_std(state.retention).unwrap_or_default();
            ReconcileView {
                every: state
                    .interval
                    .map_or("on demand".into(), |every| duration(every.as_secs() as i64)),
                last_success: last_success.map_or("never".into(), time),
                last_outcome: run
                    .and_then(|run| run.last_outcome.clone())
                    .unwrap_or_else(|| "-".into()),
                failing: run
                    .and_then(|run| run.last_outcome.as_deref())
                    .is_some_and(|o| o != "ok"),
                recovered: run.map_or(0, |run| run.recovered),
                window_left: last_success.map_or("-".into(), |at| {
                    duration((at + retention - now).num_seconds().max(0))
                }),
                source: state.source,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Replication, database, per_mille};

    #[test]
    fn the_database_line_says_whether_commits_wait_for_a_standby() {
        let postgres = |synchronous, standbys| {
            database(Some(Replication {
                synchronous,
                standbys,
            }))
        };
        assert!(database(None).1.starts_with("SQLite"));
        let (ok, text) = postgres(true, Some(0));
        assert!(!ok && text.contains("none is streaming"), "{text}");
        let (ok, text) = postgres(true, Some(2));
        assert!(ok && text.ends_with("2 are streaming"), "{text}");
        let (ok, text) = postgres(true, None);
        assert!(ok && text.contains("grant it pg_monitor"), "{text}");
        let (ok, text) = postgres(false, Some(1));
        assert!(
            ok && text.contains("not replicated synchronously"),
            "{text}"
        );
    }

    #[test]
    fn rates_read_as_percent() {
        assert_eq!(per_mille(0, 0), "-");
        assert_eq!(per_mille(1, 3), "33.3%");
        assert_eq!(per_mille(2, 2), "100.0%");
        assert_eq!(per_mille(1, 1000), "0.1%");
    }
}
