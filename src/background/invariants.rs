//! The ledger invariant check and the walk of the hash chains (whole at
//! start-up and once a day, otherwise what was written since), run at
//! start-up and then every [`INTERVAL`]
//! (longer after a long check: [`PAUSE_PER_CHECK`]); its
//! latest result is kept in the app state's
//! [`InvariantWatch`](crate::ledger_check::InvariantWatch).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::context::Context;
use crate::ledger_check::{LastCheck, LastVerify};
use crate::store::chain::{BreakKind, ChainCursor};

/// The check reads the whole ledger (linear in its size): often enough to
/// notice a fault within minutes, rarely enough to cost nothing.
pub const INTERVAL: Duration = Duration::from_secs(600);

/// The pause after a check is at least this many times what it took, so
/// that the check never holds a database connection more than 1% of the
/// time, however large the ledger. It took 3 s at a million stored
/// events on PostgreSQL and 36 s at ten million (BENCHMARKS.md,
/// 2026-12-06): the pause stays [`INTERVAL`] up to a few million events
/// and is about an hour at ten million.
const PAUSE_PER_CHECK: u32 = 99;

/// How often the walk is whole again (the cursor dropped), however long
/// the instance runs: an edit to an entry the walks since had passed shows
/// within a day. A whole walk of ten million entries took 105 s on SQLite
/// (BENCHMARKS.md, 2026-12-07).
const WHOLE_WALK_EVERY: Duration = Duration::from_secs(24 * 3600);

/// Whether the walk after one that was whole `since` ago is whole.
fn whole_walk_due(since: Duration) -> bool {
    since >= WHOLE_WALK_EVERY
}

/// The periodic walk rests this many times as long as each of its
/// statements took: a whole walk (start-up, once a day) takes a fifth of
/// a core, not all of one while deliveries wait. Ten million entries:
/// about 9 minutes on SQLite, 3.5 on PostgreSQL (105 s and 41 s unpaced,
/// BENCHMARKS.md, 2026-12-07).
const WALK_REST: u32 = 4;

/// How long to wait after a check that took `took`.
fn pause_after(took: Duration) -> Duration {
    INTERVAL.max(took.saturating_mul(PAUSE_PER_CHECK))
}

pub fn spawn(context: Arc<Context>) -> JoinHandle<()> {
    tokio::spawn(async move {
        // Where each chain was last seen whole: the first walk (at
        // start-up) is whole, each later one walks what was written since.
        let mut cursor = ChainCursor::default();
        let mut walked_whole = std::time::Instant::now();
        // What a version before chains wrote is linked first: at start-up
        // (what was written before the upgrade), then only after a walk
        // that found a chain stopping at an unlinked row (an older
        // version's, beside this one during an upgrade). The backfill
        // reads the whole ledger to find them, so not on every run.
        let mut backfill = true;
        loop {
            let started = std::time::Instant::now();
            if backfill {
                link_unlinked(&context).await;
            }
            let outcome = context
                .store
                .check_invariants()
                .await
                .map_err(|e| e.to_string());
            match &outcome {
                Ok(violations) if !violations.is_empty() => {
                    tracing::error!(
                        violations = violations.len(),
                        "ledger invariants violated: see /admin/api/check"
                    );
                }
                Err(error) => tracing::warn!("invariant check could not run: {error}"),
                Ok(_) => {}
            }
            // The pause follows the check's own time; the walk is paced.
            let checked = started.elapsed();
            context.invariants.record(LastCheck {
                at: context.clock.now(),
                outcome,
            });
            if whole_walk_due(walked_whole.elapsed()) {
                cursor = ChainCursor::default();
                walked_whole = std::time::Instant::now();
            }
            backfill = verify_chains(&context, &mut cursor).await;
            tokio::time::sleep(pause_after(checked)).await;
        }
    })
}

async fn link_unlinked(context: &Context) {
    match context.store.link_unlinked(context.clock.now()).await {
        Ok(linked) if linked.chains > 0 => tracing::info!(
            chains = linked.chains,
            "linked the entries written without a link"
        ),
        Ok(_) => {}
        Err(error) => tracing::warn!("unlinked entries could not be linked: {error}"),
    }
}

/// Walks the chains from `cursor` (moving it on) and records the result;
/// whether a chain stops at a row without a link.
async fn verify_chains(context: &Context, cursor: &mut ChainCursor) -> bool {
    let (entries, outcome) = match context.store.verify_chains_paced(cursor, WALK_REST).await {
        Ok(report) => (report.entries, Ok(report.breaks)),
        Err(error) => (0, Err(error.to_string())),
    };
    match &outcome {
        Ok(breaks) if !breaks.is_empty() => tracing::error!(
            broken = breaks.len(),
            "hash chains broken: see /admin/api/verify"
        ),
        Err(error) => tracing::warn!("the hash chains could not be walked: {error}"),
        Ok(_) => {}
    }
    let unlinked = outcome
        .as_ref()
        .is_ok_and(|breaks| breaks.iter().any(|b| b.kind == BreakKind::Unlinked));
    context.invariants.record_chains(LastVerify {
        at: context.clock.now(),
        entries,
        outcome,
    });
    unlinked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_is_whole_again_once_a_day() {
        assert!(!whole_walk_due(Duration::from_secs(23 * 3600)));
        assert!(whole_walk_due(Duration::from_secs(24 * 3600)));
    }

    #[test]
    fn a_long_check_waits_longer_before_the_next() {
        assert_eq!(pause_after(Duration::from_secs(1)), INTERVAL);
        assert_eq!(pause_after(Duration::from_secs(6)), INTERVAL);
        assert_eq!(
            pause_after(Duration::from_secs(70)),
            Duration::from_secs(6_930)
        );
    }
}
