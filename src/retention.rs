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

const BATCH: i64 = 500;
const BATCHES_PER_RUN: u32 = 20;
const PAUSE: Duration = Duration::from_millis(50);

/// `None` when payloads are kept forever.
pub fn spawn(context: Arc<Context>, retention: Retention) -> Option<JoinHandle<()>> {
    if retention.payload_days == 0 {
        return None;
    }
    Some(tokio::spawn(async move {
        loop {
            let purged = run(&context, retention).await;
            if purged > 0 {
                tracing::info!(purged, "retention: emptied payloads of done events");
            }
            tokio::time::sleep(retention.purge_interval).await;
        }
    }))
}

/// One run: how many payloads it emptied.
async fn run(context: &Context, retention: Retention) -> u64 {
    let now = context.clock.now();
    let cutoff = now - chrono::Duration::days(i64::from(retention.payload_days));
    let mut purged = 0;
    for _ in 0..BATCHES_PER_RUN {
        match context.store.purge_payloads(cutoff, BATCH, now).await {
            Ok(n) => {
                purged += n;
                if n < BATCH as u64 {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!("retention: purge failed, retried next run: {error}");
                break;
            }
        }
        tokio::time::sleep(PAUSE).await;
    }
    purged
}
