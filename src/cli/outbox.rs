//! `hookledger relay` (the outbox relays on their own, for deployments that
//! run them apart from `serve`) and `hookledger outbox replay` (`outbox
//! move` is in `outbox_move`).

use std::sync::Arc;

use actix_web::web::Data;
use actix_web::{App, HttpServer};
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::error::CliError;
use super::outbox_move::MoveArgs;
use crate::clock::SystemClock;
use crate::config::Config;
use crate::outbox::Relays;
use crate::startup::{StartupError, connect_store};
use crate::store::{Replay, Store};
use crate::telemetry::Metrics;

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// Re-queue messages of a destination: dead letters (the default) or
    /// delivered ones, each with its message id unchanged and its attempts
    /// counted afresh; the relays send them again.
    Replay(ReplayArgs),
    /// Move the pending and dead messages of a destination the config no
    /// longer names (renamed) to the one that replaced it; the relays send
    /// the pending ones there. The old copies of messages the new
    /// destination has already are dropped; what a relay still on the old
    /// config is sending stays.
    Move(MoveArgs),
}

/// Connections the relay's metrics listener serves at once.
const LISTENER_CONNECTIONS: usize = 8;

#[derive(Debug, Args)]
pub struct RelayArgs {
    /// Serve `/metrics` (this process's deliveries, dead letters and send
    /// times, and the shared outbox's gauges), `/healthz` and `/readyz` on
    /// this address, e.g. 127.0.0.1:9465. `/metrics` takes `metrics.token`
    /// when one is configured, as on `serve`.
    #[arg(long)]
    metrics_listen: Option<String>,
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
    config
        .destination(&args.destination)
        .map_err(CliError::Init)?;
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
        .replay_outbox(&replay)
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
pub async fn relay(mut config: Config, args: RelayArgs) -> Result<(), CliError> {
    if config.destinations.is_empty() {
        return Err(CliError::Init(
            "no [[destinations]] in the config: nothing to relay".to_owned(),
        ));
    }
    let store = connect_store(&config).await.map_err(StartupError::from)?;
    store.migrate().await.map_err(StartupError::from)?;
    let grace = config.shutdown_timeout.min(crate::outbox::SHUTDOWN_GRACE);
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
    let metrics = Metrics::default();
    let instruments = metrics.outbox();
    // Bound before any relay claims a row: a bad address fails the start
    // with nothing leased.
    let listener = match &args.metrics_listen {
        Some(address) => Some(metrics_listener(
            address,
            &mut config,
            &store,
            metrics,
            grace,
        )?),
        None => None,
    };
    crate::outbox::warn_of_unconfigured(&store).await;
    let relays = Relays::spawn(&store, &config.destinations, grace, instruments);
    let purge = tokio::spawn({
        let (store, days, every) = (
            store.clone(),
            config.retention.outbox_days,
            config.retention.purge_interval,
        );
        async move {
            loop {
                crate::background::retention::purge_outbox(&store, days).await;
                tokio::time::sleep(every).await;
            }
        }
    });
    if let Some(signal) = crate::startup::shutdown_signal().await {
        tracing::info!(signal, "relay: stopping; sends in flight finish");
    }
    // Together: a scrape in progress never eats the sends' grace.
    let stop_listener = async {
        if let Some(listener) = listener {
            listener.stop(true).await;
        }
    };
    tokio::join!(stop_listener, relays.stop());
    purge.abort();
    store.close().await;
    Ok(())
}

/// Serves the relay's counters on `address` until stopped: one request per
/// connection, a few connections at once (scrapes share the relays' pool),
/// and no longer than the relays' own grace at shutdown.
fn metrics_listener(
    address: &str,
    config: &mut Config,
    store: &Store,
    metrics: Metrics,
    grace: std::time::Duration,
) -> Result<actix_web::dev::ServerHandle, CliError> {
    let bind_error = |source| StartupError::Bind {
        address: address.to_owned(),
        source,
    };
    let context = Data::new(crate::context::Context::new(
        config,
        store,
        crate::ingest::Ingestor::new(store),
        Arc::new(SystemClock),
        metrics,
    ));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(context.clone())
            .configure(crate::http::configure_relay)
    })
    .workers(1)
    .keep_alive(actix_web::http::KeepAlive::Disabled)
    .max_connections(LISTENER_CONNECTIONS)
    .shutdown_timeout(grace.as_secs().max(1))
    .disable_signals()
    .bind(address)
    .map_err(bind_error)?;
    if let Some(bound) = server.addrs().first() {
        println!("hookledger relay: metrics on http://{bound}/metrics");
    }
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok(handle)
}
