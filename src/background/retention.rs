//! The retention task: every `retention.purge_interval_secs` (and at
//! start-up), empties the raw payloads of done events last received more
//! than `retention.payload_days` ago ([`Store::purge_payloads`]), in batches
//! of a few hundred rows, each its own short statement, with a pause
//! between them so writers are never held up for long; at most a bounded
//! number of batches per run, the rest on the next.
//!
//! [`Store::purge_payloads`]: crate::store::Store::purge_payloads

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::config::Retention;
use crate::context::Context;
use crate::store::Store;

const BATCH: i64 = 500;
const BATCHES_PER_RUN: u32 = 20;
const PAUSE: Duration = Duration::from_millis(50);

/// `None` when payloads and delivered outbox rows are kept forever.
pub fn spawn(context: Arc<Context>, retention: Retention) -> Option<JoinHandle<()>> {
    if retention.payload_days == 0 && retention.outbox_days == 0 {
        return None;
    }
    Some(tokio::spawn(async move {
        loop {
            let purged = run(&context, retention).await;
            if purged > 0 {
                tracing::info!(purged, "retention: emptied payloads of done events");
            }
            let deleted = purge_outbox(&context.store, retention.outbox_days).await;
            if deleted > 0 {
                tracing::info!(deleted, "retention: deleted delivered outbox rows");
            }
            tokio::time::sleep(retention.purge_interval).await;
        }
    }))
}

/// Deletes outbox rows delivered more than `days` ago (never a pending
/// or dead one); how many. Also run by `hookledger relay`.
pub async fn purge_outbox(store: &Store, days: u32) -> u64 {
    if days == 0 {
        return 0;
    }
    let cutoff = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
    in_batches("outbox purge", || {
        store.purge_delivered(cutoff.timestamp_millis(), BATCH)
    })
    .await
}

/// One run: how many payloads it emptied.
async fn run(context: &Context, retention: Retention) -> u64 {
    if retention.payload_days == 0 {
        return 0;
    }
    let now = context.clock.now();
    let cutoff = now - chrono::Duration::days(i64::from(retention.payload_days));
    in_batches("purge", || context.store.purge_payloads(cutoff, BATCH, now)).await
}

/// Runs `batch` until it does less than a whole batch, at most
/// `BATCHES_PER_RUN` times with a pause between; how many rows in all. A
/// failure ends the run (the next run tries again).
async fn in_batches<F, Fut>(what: &str, batch: F) -> u64
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<u64, crate::store::StoreError>>,
{
    let mut done = 0;
    for _ in 0..BATCHES_PER_RUN {
        match batch().await {
            Ok(n) => {
                done += n;
                if n < BATCH as u64 {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!("retention: {what} failed, retried next run: {error}");
                break;
            }
        }
        tokio::time::sleep(PAUSE).await;
    }
    done
}
