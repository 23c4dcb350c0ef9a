//! The drain task: releases parked events that are ready (a waiting event at
//! guard + 1) when no delivery will do it. That happens when a release
//! reached its per-transaction bound (`release_batch`) with more ready, and
//! after a crash or restart interrupted a drain. The work is derived from the
//! rows, never from memory, so nothing is lost with the process: the task
//! sweeps at start-up, whenever a delivery wakes it, and every
//! `release_sweep_secs` (which also covers a backlog another instance left).
//! Every step is its own transaction under the account's guard lock, so
//! several instances draining at once serialise per account and apply each
//! event once.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::context::Context;
use crate::domain::OrderingPolicy;
use crate::ingest::drain_account;
use crate::store::StoreError;

/// Accounts looked up per query; the sweep repeats until none is ready.
const ACCOUNTS_PER_QUERY: i64 = 100;

pub fn spawn(context: Arc<Context>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(error) = sweep(&context).await {
                tracing::warn!("releasing parked events failed, retrying later: {error}");
            }
            context.drain.swept();
            tokio::select! {
                () = context.drain.woken() => {}
                () = tokio::time::sleep(context.release_sweep) => {}
            }
        }
    })
}

/// Releases until no account has a parked event ready. Each step makes
/// progress: a ready event is applied, or becomes `rejected` (balance range)
/// or `stale` (late, held), or was dismissed; either way it is no longer
/// ready. An account whose step fails for a reason other than the database
/// being unavailable is logged and left for the next sweep, so it cannot
/// hold up the others.
async fn sweep(context: &Context) -> Result<(), StoreError> {
    let mut failed = HashSet::new();
    loop {
        let ready: Vec<(String, String)> = context
            .store
            .releasable_accounts(ACCOUNTS_PER_QUERY)
            .await?
            .into_iter()
            .filter(|key| !failed.contains(key))
            .collect();
        if ready.is_empty() {
            return Ok(());
        }
        for (source, account_id) in ready {
            let policy = context
                .source(&source)
                .map_or_else(OrderingPolicy::default, |s| s.ordering);
            let step = drain_account(
                &context.store,
                &source,
                &account_id,
                policy.on_stale,
                policy.release_batch,
                context.clock.now(),
            )
            .await;
            match step {
                Ok(released) => {
                    let metrics = &context.metrics;
                    metrics.ordering(&source, "released", released.applied);
                    tracing::info!(
                        source,
                        account_id,
                        released = released.applied,
                        late = released.late,
                        guard = released.guard,
                        "released parked events"
                    );
                }
                Err(error) if error.is_transient() => return Err(error),
                Err(error) => {
                    tracing::error!(
                        source,
                        account_id,
                        "releasing parked events failed: {error}"
                    );
                    failed.insert((source, account_id));
                }
            }
        }
    }
}
