//! `hookledger reconcile`: one reconcile run of one source
//! (docs/operating/reconcile.md), as the sweep inside `serve` runs it: the
//! provider's events from the source's cursor (or `--since`) pushed through
//! the same ingest as a webhook; a summary line, or `--json`. Exits
//! non-zero when the run could not complete (the key refused, the network,
//! a rate limit that outlasted the run, a page not as documented).

use chrono::{DateTime, TimeDelta, Utc};
use clap::Args;

use super::error::CliError;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::reconcile::{Request, Summary, run as reconcile};
use crate::startup::{StartupError, connect_store};

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The source to reconcile (one with [sources.reconcile]).
    #[arg(long)]
    source: String,
    /// Read from this time (RFC 3339) or this long ago (`72h`, `30m`,
    /// `7d`) instead of from the source's cursor.
    #[arg(long)]
    since: Option<String>,
    /// List and count what a run would recover; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the summary as one JSON line.
    #[arg(long)]
    json: bool,
}

pub async fn run(config: Config, args: ReconcileArgs) -> Result<(), CliError> {
    let now = Utc::now();
    let since = args
        .since
        .as_deref()
        .map(|text| since(text, now))
        .transpose()
        .map_err(CliError::Reconcile)?;
    let source = config
        .sources
        .iter()
        .find(|s| s.name.as_str() == args.source)
        .ok_or_else(|| {
            CliError::Reconcile(format!("no source named {:?} is configured", args.source))
        })?;
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let owner = crate::outbox::owner_name();
    let request = Request {
        owner: &owner,
        since,
        dry_run: args.dry_run,
        clock: &SystemClock,
    };
    let summary = reconcile(&store, source, &request)
        .await
        .map_err(|e| CliError::Reconcile(e.to_string()))?;
    if args.json {
        println!("{}", serde_json::to_string(&summary).unwrap_or_default());
    } else {
        println!("{}", said(&summary));
    }
    Ok(())
}

/// The summary for people.
fn said(summary: &Summary) -> String {
    let statuses: Vec<String> = summary
        .statuses
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    let verb = if summary.dry_run {
        "would recover"
    } else {
        "recovered"
    };
    format!(
        "{}: {} event(s) listed from {} to {}: {} {verb}{}, {} stored already, {} of types \
         the source does not map",
        summary.source,
        summary.listed,
        summary.window_starts_at.to_rfc3339(),
        summary.window_ends_at.to_rfc3339(),
        summary.recovered,
        if statuses.is_empty() {
            String::new()
        } else {
            format!(" ({})", statuses.join(", "))
        },
        summary.already_stored,
        summary.not_mapped,
    )
}

/// `--since`: an RFC 3339 time, or a duration back from `now` (`90s`,
/// `30m`, `72h`, `7d`).
fn since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let invalid = || format!("--since {text:?}: an RFC 3339 time or a duration like 72h, 30m, 7d");
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let number: i64 = number.parse().map_err(|_| invalid())?;
    let back = match unit {
        "s" => TimeDelta::try_seconds(number),
        "m" => TimeDelta::try_minutes(number),
        "h" => TimeDelta::try_hours(number),
        "d" => TimeDelta::try_days(number),
        _ => None,
    }
    .filter(|_| number > 0)
    .ok_or_else(invalid)?;
    Ok(now - back)
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::since;

    #[test]
    fn since_is_a_time_or_a_duration_back() {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let at = |h| Utc.with_ymd_and_hms(2026, 11, 28, h, 0, 0).unwrap();
        assert_eq!(since("2026-11-28T09:00:00Z", now), Ok(at(9)));
        assert_eq!(since("3h", now), Ok(at(9)));
        assert_eq!(since("180m", now), Ok(at(9)));
        assert_eq!(since("1d", now), Ok(now - chrono::TimeDelta::days(1)));
        for bad in ["", "h", "3", "3w", "-3h", "0h", "yesterday"] {
            assert!(since(bad, now).is_err(), "{bad}");
        }
    }
}
