//! The drain task: releases parked events that are ready (a waiting event at
//! guard + 1) when no delivery will do it. That happens when a release
//! reached its per-transaction bound (`release_batch`) with more ready, and
//! after a crash or restart interrupted a drain. The work is derived from the
//! rows, never from memory, so nothing is lost with the process: the task
//! sweeps at start-up, whenever a delivery wakes it, and every
//! [`SWEEP_INTERVAL`] (which also covers a backlog another instance left).
//! Every step is its own transaction under the account's guard lock, so
//! several instances draining at once serialise per account and apply each
//! event once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::context::Context;
use crate::domain::DEFAULT_RELEASE_BATCH;
use crate::ingest::drain_account;
use crate::store::StoreError;

pub const SWEEP_INTERVAL: Duration = Duration::from_secs(10);
/// Accounts looked up per query; the sweep repeats until none is ready.
const ACCOUNTS_PER_QUERY: i64 = 100;

/// Wakes the drain task (held in the [`Context`]).
#[derive(Debug, Default)]
pub struct DrainSignal(Notify);

impl DrainSignal {
    /// Asks for a sweep now; wakes coalesce while one runs.
    pub fn wake(&self) {
        self.0.notify_one();
    }
}

pub fn spawn(context: Arc<Context>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(error) = sweep(&context).await {
                tracing::warn!("releasing parked events failed, retrying later: {error}");
            }
            tokio::select! {
                () = context.drain.0.notified() => {}
                () = tokio::time::sleep(SWEEP_INTERVAL) => {}
            }
        }
    })
}

/// Releases until no account has a parked event ready. Each pass makes
/// progress: a ready event is applied, or becomes `rejected` (balance
/// range), or was dismissed; either way it is no longer ready.
async fn sweep(context: &Context) -> Result<(), StoreError> {
    loop {
        let ready = context
            .store
            .releasable_accounts(ACCOUNTS_PER_QUERY)
            .await?;
        if ready.is_empty() {
            return Ok(());
        }
        for (source, account_id) in ready {
            let budget = context
                .source(&source)
                .map_or(DEFAULT_RELEASE_BATCH, |s| s.ordering.release_batch);
            let released = drain_account(
                &context.store,
                &source,
                &account_id,
                budget,
                context.clock.now(),
            )
            .await?;
            context
                .metrics
                .ordering(&source, "released", released.applied);
            tracing::info!(
                source,
                account_id,
                released = released.applied,
                guard = released.guard,
                "released parked events"
            );
        }
    }
}
