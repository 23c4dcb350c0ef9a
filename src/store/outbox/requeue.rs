//! Re-queueing (an operator's replay of dead or delivered messages) and
//! the retention purge of delivered ones.

use chrono::{DateTime, Utc};

use super::super::write::on_tx;
use super::super::{Store, StoreError};

/// What a re-queued message becomes, for the replay of many and of one:
/// pending, due at once (`next_attempt_ms` 0, as a new row is, whatever
/// this host's clock says), its attempts counted afresh. `$4`: the
/// destination is ordered here (a delivered posting's flag may predate a
/// change of its config). `$5`: now, by the database's clock, from when the
/// message waits again (`queued_ms`, migration 0012).
macro_rules! requeued {
    () => {
        "
update outbox set state = 'pending', attempts = 0, next_attempt_ms = 0, leased_by = null,
    delivered_ms = null, behind = false, ordered = (account_seq is not null and $4),
    queued_ms = $5"
    };
}
pub(super) use requeued;

/// Re-queues a destination's dead or delivered rows (`requeued!`). The
/// state is written out so that each walks its own index (`outbox_dead`,
/// `outbox_delivered`), not the whole table.
macro_rules! replay {
    ($state:literal) => {
        concat!(
            requeued!(),
            "
where destination = $1 and state = '",
            $state,
            "'
    and ($2 is null or created_at >= $2) and ($3 is null or account_id = $3)"
        )
    };
}
pub(super) const REPLAY_DEAD: &str = replay!("dead");
pub(super) const REPLAY_DELIVERED: &str = replay!("delivered");

/// Oldest first, through `outbox_delivered` (in id order SQLite walked the
/// whole table). The conditions stand on the deleted row itself too: on
/// PostgreSQL a row the subquery chose may be re-queued by an operator's
/// replay before the delete takes its lock, and the delete then re-checks
/// only its own conditions on the new version (READ COMMITTED), never the
/// subquery's. Without them it deleted the re-queued message (a test
/// replays and purges at once). SQLite runs one writer at a time.
pub(super) const PURGE_DELIVERED: &str = "
delete from outbox where outbox_id in (
    select outbox_id from outbox where state = 'delivered' and delivered_ms < $1
    order by delivered_ms limit $2)
    and state = 'delivered' and delivered_ms < $1";

/// A destination's dead anchor parts (`anchors`), re-queued with its dead
/// messages when the replay names no account: due at once, attempts
/// afresh. `$2`: queued since, in milliseconds.
const REPLAY_DEAD_ANCHORS: &str = "
update anchor_messages set state = 'pending', attempts = 0, next_attempt_ms = 0,
    leased_by = null
where destination = $1 and state = 'dead' and ($2 is null or created_ms >= $2)";

/// Which rows `hookledger outbox replay` re-queues.
#[derive(Debug, Clone)]
pub struct Replay {
    pub destination: String,
    /// `dead` or `delivered`.
    pub state: String,
    pub since: Option<DateTime<Utc>>,
    pub account_id: Option<String>,
}

impl Store {
    /// Re-queues the rows `replay` names, due at once, with their attempts
    /// reset and their message ids kept (dead letters: the destination's
    /// dead anchor parts too, unless an account is named); how many.
    pub async fn replay_outbox(&self, replay: &Replay) -> Result<u64, StoreError> {
        let sql = match replay.state.as_str() {
            "dead" => REPLAY_DEAD,
            "delivered" => REPLAY_DELIVERED,
            // Nothing else is re-queued (a pending row is due already).
            _ => return Ok(0),
        };
        let now_ms = self.database_now_ms().await?;
        let mut tx = self.begin().await?;
        let done = on_tx!(&mut tx, conn => sqlx::query(sql)
            .bind(&replay.destination)
            .bind(replay.since)
            .bind(replay.account_id.as_deref())
            .bind(self.outbox().routes().is_ordered(&replay.destination))
            .bind(now_ms)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?;
        let anchors = match (replay.state.as_str(), &replay.account_id) {
            ("dead", None) => on_tx!(&mut tx, conn => sqlx::query(REPLAY_DEAD_ANCHORS)
                .bind(&replay.destination)
                .bind(replay.since.map(|at| at.timestamp_millis()))
                .execute(conn)
                .await
                .map(|done| done.rows_affected()))?,
            _ => 0,
        };
        let done = done + anchors;
        tx.queued = done > 0;
        tx.commit().await?;
        Ok(done)
    }

    /// Deletes up to `batch` rows delivered before `cutoff_ms`, and as many
    /// of the anchors' delivered parts; how many.
    pub async fn purge_delivered(&self, cutoff_ms: i64, batch: i64) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let done = on_tx!(&mut tx, conn => sqlx::query(PURGE_DELIVERED)
            .bind(cutoff_ms)
            .bind(batch)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?;
        let anchors = on_tx!(&mut tx, conn => sqlx::query(super::anchors::PURGE_DELIVERED)
            .bind(cutoff_ms)
            .bind(batch)
            .execute(conn)
            .await
            .map(|done| done.rows_affected()))?;
        tx.commit().await?;
        Ok(done + anchors)
    }
}
