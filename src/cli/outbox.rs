//! `hookledger relay` (the outbox relays on their own, for deployments that
//! run them apart from `serve`) and `hookledger outbox replay`.

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::CliError;
use crate::config::Config;
use crate::outbox::Relays;
use crate::startup::{StartupError, connect_store};
use crate::store::Replay;

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// Re-queue messages of a destination: dead letters (the default) or
    /// delivered ones, each with its message id unchanged and its attempts
    /// counted afresh; the relays send them again.
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The destination's name.
    #[arg(long)]
    destination: String,
    /// `dead` or `delivered`.
    #[arg(long, default_value = "dead")]
    status: String,
    /// Only messages written at or after this time (RFC 3339).
    #[arg(long)]
    since: Option<DateTime<Utc>>,
    /// Only this account's messages.
    #[arg(long)]
    account: Option<String>,
}

pub async fn replay(config: Config, args: ReplayArgs) -> Result<(), CliError> {
    if !config
        .destinations
        .iter()
        .any(|d| d.name == args.destination)
    {
        let known: Vec<_> = config
            .destinations
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        return Err(CliError::Init(format!(
            "no destination {:?} in the config (configured: {})",
            args.destination,
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    }
    if !["dead", "delivered"].contains(&args.status.as_str()) {
        return Err(CliError::Init(format!(
            "--status {:?}: replay re-queues dead or delivered messages",
            args.status
        )));
    }
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let replay = Replay {
        destination: args.destination,
        state: args.status,
        since: args.since,
        account_id: args.account,
    };
    let count = store
        .replay_outbox(&replay, Utc::now())
        .await
        .map_err(CliError::Check)?;
    println!(
        "re-queued {count} {} message(s) for {}",
        replay.state, replay.destination
    );
    Ok(())
}

/// Runs the relays (and the purge of delivered rows) until SIGTERM or
/// Ctrl-C, then lets sends in flight finish.
pub async fn relay(config: Config) -> Result<(), CliError> {
    if config.destinations.is_empty() {
        return Err(CliError::Init(
            "no [[destinations]] in the config: nothing to relay".to_owned(),
        ));
    }
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let grace = config.shutdown_timeout.min(crate::outbox::SHUTDOWN_GRACE);
    // Counted, but not exposed: this process serves no HTTP. The gauges on
    // any `serve` instance's /metrics read the shared outbox table.
    let relays = Relays::spawn(
        &store,
        &config.destinations,
        grace,
        crate::telemetry::OutboxInstruments::default(),
    );
    let names: Vec<_> = config
        .destinations
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    println!(
        "hookledger relay: sending to {} from {}",
        names.join(", "),
        store.describe()
    );
    let purge = tokio::spawn({
        let (store, days, every) = (
            store.clone(),
            config.retention.outbox_days,
            config.retention.purge_interval,
        );
        async move {
            loop {
                crate::retention::purge_outbox(&store, days).await;
                tokio::time::sleep(every).await;
            }
        }
    });
    if let Some(signal) = crate::startup::shutdown_signal().await {
        tracing::info!(signal, "relay: stopping; sends in flight finish");
    }
    purge.abort();
    relays.stop().await;
    store.close().await;
    Ok(())
}
