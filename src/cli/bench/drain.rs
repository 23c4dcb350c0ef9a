//! `--outbox`: after the HTTP phases, waits for the relay to deliver every
//! message the postings wrote, and checks the sink got each one.

use std::time::{Duration, Instant};

use chrono::Utc;

use super::sink::Sink;
use crate::config::Config;
use crate::startup::connect_store;

/// How long the relay may take to catch up after the last phase.
const DRAIN_WAIT: Duration = Duration::from_secs(300);

/// Prints how long the relay took to deliver everything since `started`
/// (what `since` names); an error if it did not, or if the sink missed a
/// posting.
pub async fn report(
    config: &Config,
    (name, sink): (&str, &Sink),
    (started, since): (Instant, &str),
    postings: usize,
) -> Result<(), String> {
    let phases_ended = Instant::now();
    let store = connect_store(config).await.map_err(|e| e.to_string())?;
    loop {
        let stats = store
            .outbox_stats(name, Utc::now())
            .await
            .map_err(|e| e.to_string())?;
        if stats.pending == 0 {
            break;
        }
        if phases_ended.elapsed() > DRAIN_WAIT {
            return Err(format!(
                "outbox: {} message(s) still pending {DRAIN_WAIT:?} after the phases",
                stats.pending
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    store.close().await;
    let (ids, requests) = sink.counts();
    let whole = started.elapsed().as_secs_f64();
    println!(
        "outbox: {ids} postings delivered ({requests} requests), drained {:.1} s after the \
         phases ended: {:.0} messages/s since {since}",
        phases_ended.elapsed().as_secs_f64(),
        ids as f64 / whole.max(1e-9)
    );
    if ids != postings {
        return Err(format!(
            "outbox: the sink got {ids} distinct postings, the ledger has {postings}"
        ));
    }
    Ok(())
}
