//! `hookledger replay`: stored, already-verified events run again through
//! the ingest path with the current config (see `crate::replay`), one by
//! name or every `rejected` (or `ignored`) one, oldest first, with progress
//! for long runs. Each replay is its own transaction with its audit row.

use chrono::{DateTime, Utc};
use clap::Args;

use super::error::CliError;
use crate::config::Config;
use crate::domain::Status;
use crate::ingest::Outcome;
use crate::replay::{
    Asked, REPLAYABLE, ReplayError, Stored, describe, map, rekeyed, replay, unchanged,
};
use crate::source::Source;
use crate::startup::{StartupError, connect_store};
use crate::store::{EventFilter, Store};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Only this source's events (required with --event-id).
    #[arg(long)]
    source: Option<String>,
    /// One event, by the provider's event id.
    #[arg(long, conflicts_with_all = ["status", "since"])]
    event_id: Option<String>,
    /// Every event in this status: rejected or ignored.
    #[arg(long)]
    status: Option<String>,
    /// With --status: only events first received at or after this time
    /// (RFC 3339).
    #[arg(long)]
    since: Option<DateTime<Utc>>,
    /// Print what each event maps to now, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Why: kept in each event's audit row.
    #[arg(long)]
    note: Option<String>,
}

/// Events listed per page while collecting a status's events.
const PAGE: i64 = 500;
/// A progress line every this many events.
const PROGRESS_EVERY: usize = 100;

/// How a run went.
#[derive(Debug, Default)]
struct Tally {
    replayed: usize,
    /// Mapped to the same status as before (still rejected, say).
    unchanged: usize,
    refused: usize,
}

pub async fn run(config: Config, args: ReplayArgs) -> Result<(), CliError> {
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let targets = match (&args.event_id, &args.source, &args.status) {
        (Some(event_id), Some(source), None) => vec![(source.clone(), event_id.clone())],
        (Some(_), None, _) => {
            return Err(CliError::Init("--event-id needs --source".into()));
        }
        (None, _, Some(status)) => {
            let status: Status = status.parse().map_err(|e| CliError::Init(format!("{e}")))?;
            if !REPLAYABLE.contains(&status) {
                return Err(CliError::Init(format!(
                    "--status {status}: only rejected or ignored events are replayed"
                )));
            }
            collect(&store, status, args.source.as_deref(), args.since).await?
        }
        _ => {
            return Err(CliError::Init(
                "say which events: --source S --event-id E, or --status rejected [--source S] [--since T]".into(),
            ));
        }
    };
    let note = args
        .note
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let run = Run {
        store: &store,
        dry_run: args.dry_run,
        note,
    };
    let mut tally = Tally::default();
    let total = targets.len();
    for (done, (source_name, event_id)) in targets.iter().enumerate() {
        let line = match config
            .sources
            .iter()
            .find(|s| s.name.as_str() == source_name)
        {
            None => Err(ReplayError::Unconfigured(source_name.clone())),
            Some(source) => run.retried(source, event_id).await,
        };
        match line {
            Ok((text, changed)) => {
                if changed {
                    tally.replayed += 1;
                } else {
                    tally.unchanged += 1;
                }
                println!("{source_name} {event_id}: {text}");
            }
            Err(ReplayError::Store(error)) => return Err(CliError::Check(error)),
            Err(refused) => {
                tally.refused += 1;
                println!("{source_name} {event_id}: not replayed: {refused}");
            }
        }
        if total > PROGRESS_EVERY && (done + 1) % PROGRESS_EVERY == 0 {
            eprintln!("replay: {} of {total} done", done + 1);
        }
    }
    let verb = if args.dry_run {
        "would change"
    } else {
        "changed"
    };
    println!(
        "{total} event(s): {} {verb}, {} unchanged, {} not replayed{}",
        tally.replayed,
        tally.unchanged,
        tally.refused,
        if args.dry_run {
            " (dry run: nothing written)"
        } else {
            ""
        }
    );
    Ok(())
}

/// Tries of one event whose transaction failed transiently (a deadlock
/// with a redelivery, a serialisation failure, a restarting database):
/// nothing of a failed try stays.
const TRIES: u32 = 3;

/// How each event of a run is replayed.
struct Run<'a> {
    store: &'a Store,
    dry_run: bool,
    note: Option<&'a str>,
}

impl Run<'_> {
    /// [`Run::one`], tried again after a transient database error.
    async fn retried(
        &self,
        source: &Source,
        event_id: &str,
    ) -> Result<(String, bool), ReplayError> {
        let mut tried = 1;
        loop {
            match self.one(source, event_id).await {
                Err(ReplayError::Store(error)) if error.is_transient() && tried < TRIES => {
                    tracing::warn!(event_id, "replay: {error}; trying again");
                    tokio::time::sleep(std::time::Duration::from_millis(200 * u64::from(tried)))
                        .await;
                    tried += 1;
                }
                answer => return answer,
            }
        }
    }

    /// One event: mapped and described (dry run), or replayed; the line to
    /// print and whether its status changed.
    async fn one(&self, source: &Source, event_id: &str) -> Result<(String, bool), ReplayError> {
        let stored = Stored::load(self.store, source.name.as_str(), event_id).await?;
        let before = stored.status();
        if self.dry_run {
            let event = map(source, &stored)?;
            let said = match rekeyed(&stored, &event) {
                Some(key) => format!("as {key}: {}", describe(&event)),
                None => describe(&event),
            };
            return Ok((said, !unchanged(&stored, &event)));
        }
        let asked = Asked {
            actor: "cli",
            note: self.note,
            now: Utc::now(),
        };
        let into = |outcome: &Outcome| {
            (outcome.event_id.as_str() != event_id).then(|| outcome.event_id.as_str().to_owned())
        };
        Ok(match replay(self.store, source, &stored, &asked).await? {
            Some(outcome) => match (into(&outcome), outcome.duplicate) {
                (Some(key), true) => (
                    format!(
                        "{before}, unchanged: it maps to {key} now, stored already ({}): a duplicate",
                        outcome.status
                    ),
                    false,
                ),
                (Some(key), false) => (
                    format!("{before} -> ignored, replayed as {key}: {}", outcome.status),
                    true,
                ),
                (None, _) => (format!("{before} -> {}", outcome.status), true),
            },
            None => (
                format!("{before}, unchanged: the current config maps it the same way"),
                false,
            ),
        })
    }
}

/// Every event in `status`, oldest first, as (source, event id).
async fn collect(
    store: &Store,
    status: Status,
    source: Option<&str>,
    since: Option<DateTime<Utc>>,
) -> Result<Vec<(String, String)>, CliError> {
    let mut found = Vec::new();
    let mut before = None;
    loop {
        let rows = store
            .list_events(&EventFilter {
                source: source.map(str::to_owned),
                status: Some(status),
                received_from: since,
                before,
                limit: PAGE,
                ..EventFilter::default()
            })
            .await
            .map_err(CliError::Check)?;
        let Some(last) = rows.last() else { break };
        before = Some(last.intent_id);
        let full = rows.len() as i64 == PAGE;
        found.extend(rows.into_iter().map(|row| (row.source, row.event_id)));
        if !full {
            break;
        }
    }
    // Listed newest first; replayed in the order they arrived, so that
    // each meets the sequence guards as it would have.
    found.reverse();
    Ok(found)
}
