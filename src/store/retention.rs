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

/// One batch, one statement, oldest first through `intents_payload_due`
/// (migration 0011), which holds only the events not emptied yet: without
/// it a batch went through every done event ever stored. SQLite is told to
/// use it (its planner, without statistics, picked `intents_by_status`).
/// On PostgreSQL the subquery locks the rows it chooses and skips those
/// another transaction holds, so no status change commits between the
/// choice and the update; the conditions stand on the updated row too, so
/// that this stays true without the lock. A change after the update meets
/// an emptied row, which no action reads.
macro_rules! purge_batch {
    ($indexed:literal, $skip_locked:literal) => {
        concat!(
            "
update intents set payload = $1, payload_purged_at = $2
where intent_id in (
    select intent_id from intents ",
            $indexed,
            "
    where status in ('applied', 'ignored', 'dismissed', 'duplicate_effect')
        and payload_purged_at is null and last_received_at < $3
    order by last_received_at
    limit $4",
            $skip_locked,
            ")
    and status in ('applied', 'ignored', 'dismissed', 'duplicate_effect')
    and payload_purged_at is null and last_received_at < $3"
        )
    };
}
pub(super) const PURGE_SQLITE: &str = purge_batch!("indexed by intents_payload_due", "");
/// Skips the rows another transaction holds (a group counting a
/// redelivery): the purge never waits for a row lock, so it closes no
/// cycle of waits (`store::write::keys`); a skipped row goes in a later
/// batch.
const PURGE_POSTGRES: &str = purge_batch!("", "\n    for no key update skip locked");

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
        let sql = match self {
            Store::Sqlite(..) => PURGE_SQLITE,
            Store::Postgres(..) => PURGE_POSTGRES,
        };
        let purged = on_tx!(&mut tx, conn => sqlx::query(sql)
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

#[cfg(test)]
mod tests {
    use super::PURGE_SQLITE;
    use crate::store::plans::{migrated, plan, scans_a_table};

    /// A batch reads the events not emptied yet, oldest first, never every
    /// done event.
    #[tokio::test]
    async fn the_purge_searches_the_events_not_emptied_yet() {
        let plan = plan(&migrated().await, PURGE_SQLITE).await;
        assert!(plan.contains("intents_payload_due"), "{plan}");
        assert!(!scans_a_table(&plan), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "sorts what it found: {plan}");
    }
}
