//! Messages of a destination the config no longer names (removed, or
//! renamed): no relay claims them, so they wait until the destination is
//! configured again or an operator moves them to the one that replaced it
//! (`hookledger outbox move`). Found through the pending and dead indexes,
//! never the delivered rows kept for retention.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::write::on_tx;
use super::super::{Store, StoreError, on_pool};

/// One destination's undelivered messages, by state.
macro_rules! holding {
    ($state:literal) => {
        concat!(
            "select destination, count(*) from outbox where state = '",
            $state,
            "' group by destination"
        )
    };
}
pub(super) const HOLDING_PENDING: &str = holding!("pending");
pub(super) const HOLDING_DEAD: &str = holding!("dead");

/// A batch of `$1`'s rows of one state that are not under a live lease
/// (`$3`: now, by the clock leases are judged by) and that `$2` has or has
/// not (`$exists`: the same event and type), oldest first, `$4` at most.
/// The conditions stand on the changed row too (PostgreSQL re-checks only
/// those after a concurrent change).
macro_rules! batch_of {
    ($head:literal, $exists:literal, $state:literal) => {
        concat!(
            $head,
            "
where outbox_id in (
    select o.outbox_id from outbox o
    where o.destination = $1 and o.state = '",
            $state,
            "'
        and (o.leased_by is null or o.next_attempt_ms <= $3)
        and ",
            $exists,
            " (select 1 from outbox n where n.intent_id = o.intent_id
            and n.message_type = o.message_type and n.destination = $2)
    order by o.outbox_id limit $4)
    and destination = $1 and state = '",
            $state,
            "' and (leased_by is null or next_attempt_ms <= $3)"
        )
    };
}

/// Moves a batch of `$1`'s rows of one state to `$2`, each as the new
/// destination would have written it: not waiting behind another, ordered
/// as `$2` is (`$5`), a pending one due at once. A row under a live lease
/// stays: a relay still on the old config is sending it, and must neither
/// see it sent again at once nor its account's next message go out beside
/// it. A message `$2` has already stays too, for [`DROP_COPIES`]: the
/// unique key allows one per destination.
macro_rules! move_batch {
    ($state:literal) => {
        batch_of!(
            "
update outbox set destination = $2, leased_by = null, behind = false,
    ordered = (account_seq is not null and $5),
    next_attempt_ms = case when state = 'pending' then 0 else next_attempt_ms end",
            "not exists",
            $state
        )
    };
}
/// After the move: `$1`'s copies of messages `$2` has already (both were
/// configured at once), not under a live lease, are deleted. `$2` has the
/// message, pending, delivered or dead, and tells it itself.
macro_rules! drop_copies {
    ($state:literal) => {
        batch_of!("\ndelete from outbox", "exists", $state)
    };
}
pub(super) const DROP_COPIES: [&str; 2] = [drop_copies!("dead"), drop_copies!("pending")];

/// Dead rows first: a dead letter holds its account's later messages on an
/// ordered destination, so it must be there before they are, or the new
/// destination's relay would send them past it.
pub(super) const MOVE: [&str; 2] = [move_batch!("dead"), move_batch!("pending")];

/// Rows moved in one transaction.
const MOVE_BATCH: i64 = 5_000;

/// What [`Store::move_outbox`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    pub moved: u64,
    /// Copies of messages the new destination had already, deleted.
    pub dropped: u64,
}

/// A destination's messages not delivered yet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Holding {
    pub destination: String,
    pub pending: i64,
    pub dead: i64,
}

impl Store {
    /// Every destination with pending or dead messages, configured or not,
    /// by name.
    pub async fn destinations_holding(&self) -> Result<Vec<Holding>, StoreError> {
        let mut by_name: BTreeMap<String, Holding> = BTreeMap::new();
        for (sql, dead) in [(HOLDING_PENDING, false), (HOLDING_DEAD, true)] {
            let counts: Vec<(String, i64)> =
                on_pool!(self, pool => sqlx::query_as(sql).fetch_all(pool).await)?;
            for (destination, count) in counts {
                let holding = by_name.entry(destination.clone()).or_default();
                holding.destination = destination;
                match dead {
                    true => holding.dead = count,
                    false => holding.pending = count,
                }
            }
        }
        Ok(by_name.into_values().collect())
    }

    /// Moves `from`'s dead, then pending messages to `to` (`ordered`: `to`
    /// keeps its accounts' order), batch by batch, and deletes `from`'s
    /// copies of messages `to` has already. The moved keep their ids,
    /// attempts and last errors; a dead one stays dead. What a relay holds
    /// under a live lease stays under `from`.
    pub async fn move_outbox(
        &self,
        from: &str,
        to: &str,
        ordered: bool,
    ) -> Result<Moved, StoreError> {
        let mut done = Moved::default();
        for sql in MOVE {
            done.moved += self.in_batches(sql, (from, to), Some(ordered)).await?;
        }
        for sql in DROP_COPIES {
            done.dropped += self.in_batches(sql, (from, to), None).await?;
        }
        Ok(done)
    }

    /// Runs `sql` ($1 `from`, $2 `to`, $3 now by the leases' clock, $4 the
    /// batch, $5 `ordered` if given) until a batch changes fewer rows than
    /// it may; how many it changed. A commit that moved messages wakes the
    /// relays.
    async fn in_batches(
        &self,
        sql: &'static str,
        (from, to): (&str, &str),
        ordered: Option<bool>,
    ) -> Result<u64, StoreError> {
        let mut changed = 0;
        loop {
            let now_ms = self.database_now_ms().await?;
            let mut tx = self.begin().await?;
            let done = on_tx!(&mut tx, conn => {
                let query = sqlx::query(sql).bind(from).bind(to).bind(now_ms).bind(MOVE_BATCH);
                let query = match ordered {
                    Some(ordered) => query.bind(ordered),
                    None => query,
                };
                query.execute(conn).await.map(|done| done.rows_affected())
            })?;
            tx.queued = ordered.is_some() && done > 0;
            tx.commit().await?;
            changed += done;
            if done < MOVE_BATCH as u64 {
                return Ok(changed);
            }
        }
    }
}
