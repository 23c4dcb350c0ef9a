//! The reconcile sweep inside `serve` (docs/operating/reconcile.md): every source
//! with `[sources.reconcile]` and an interval runs
//! one reconcile every `interval_secs`, under the source's lease, so that
//! of several instances on one database one sweeps at a time. A run that
//! stops is logged and counted; the next tries again from the same cursor.

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::context::Context;
use crate::reconcile::{ReconcileError, Request, run};
use crate::source::Source;
use crate::store::Store;

/// Connections the sweeps of one instance hold at most, apart from the
/// ones deliveries use (PostgreSQL; SQLite has one writer whatever the
/// pool).
const SWEEP_CONNECTIONS: u32 = 2;

/// One task per source that sweeps.
pub fn spawn(context: &Arc<Context>) -> Vec<JoinHandle<()>> {
    let owner = crate::outbox::owner_name();
    let store = context.store.side(SWEEP_CONNECTIONS);
    context
        .sources
        .values()
        .filter_map(|source| {
            let interval = source.reconcile.as_ref()?.interval?;
            let (context, source, owner, store) = (
                context.clone(),
                source.clone(),
                owner.clone(),
                store.clone(),
            );
            Some(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(interval).await;
                    sweep(&context, &store, &source, &owner).await;
                }
            }))
        })
        .collect()
}

async fn sweep(context: &Context, store: &Store, source: &Source, owner: &str) {
    let name = source.name.as_str();
    let request = Request {
        owner,
        since: None,
        dry_run: false,
        clock: context.clock.as_ref(),
    };
    match run(store, source, &request).await {
        Ok(summary) => {
            context.metrics.reconcile(name, Ok(summary.recovered));
            if summary.recovered > 0 {
                tracing::warn!(
                    source = name,
                    recovered = summary.recovered,
                    listed = summary.listed,
                    "reconcile recovered events whose webhook never arrived"
                );
            }
        }
        // Another instance sweeps this source now: its turn, not a fault.
        Err(ReconcileError::Busy(_)) => {}
        Err(error) => {
            context.metrics.reconcile(name, Err(error.reason()));
            tracing::warn!(source = name, "reconcile stopped: {error}");
        }
    }
}
