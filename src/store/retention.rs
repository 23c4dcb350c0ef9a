//! Retention: the raw payloads of events that are done (applied, ignored,
//! dismissed, duplicate_effect) and older than the retention period are
//! emptied in small batches. The intent row stays whole (its key, status,
//! payload hash, amounts), so a redelivery after the purge is still a
//! duplicate and a different body is still a conflict; ledger entries and
//! audit rows are never touched. Held events (stale, rejected, waiting,
//! unmatched) keep their payloads: a person may still need them.

use chrono::{DateTime, Utc};

use super::write::on_tx;
use super::{Store, StoreError};

/// One batch, one statement. The conditions stand on the updated row too:
/// on PostgreSQL a concurrent status change (an operator's action, a
/// redelivery) may commit after the subquery chose the row and before the
/// update takes its lock; the update then re-checks its own conditions on
/// the new version (READ COMMITTED), never the subquery's, and skips a row
/// no longer done or no longer old. A change after the update meets an
/// emptied row, which no action reads.
const PURGE_BATCH: &str = "
update intents set payload = $1, payload_purged_at = $2
where intent_id in (
    select intent_id from intents
    where status in ('applied', 'ignored', 'dismissed', 'duplicate_effect')
        and payload_purged_at is null and last_received_at < $3
    order by intent_id
    limit $4)
    and status in ('applied', 'ignored', 'dismissed', 'duplicate_effect')
    and payload_purged_at is null and last_received_at < $3";

impl Store {
    /// Empties the payloads of at most `batch` done events last received
    /// before `cutoff`; how many it emptied.
    pub async fn purge_payloads(
        &self,
        cutoff: DateTime<Utc>,
        batch: i64,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        // A write transaction, so that on SQLite the purge takes its turn
        // with the deliveries instead of meeting their write lock in the
        // busy handler.
        let mut tx = self.begin().await?;
        let purged = on_tx!(&mut tx, conn => sqlx::query(PURGE_BATCH)
            .bind(Vec::<u8>::new())
            .bind(now)
            .bind(cutoff)
            .bind(batch)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?;
        tx.commit().await?;
        Ok(purged)
    }
}
